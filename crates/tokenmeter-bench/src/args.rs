//! The options of `tokenmeter bench`, and their validation into a [`Plan`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::load_args::LoadArgs;
use crate::peer::PeerArgs;
use crate::request_shape::ShapeArgs;
use crate::run_block::RunArgs;
use crate::runner::Load;
use crate::schedule::{Stage, parse_rate};
use crate::slo::Slo;
use crate::tls::Tls;
use crate::url::parse_url;
use crate::workload::{PromptTokenizer, Source};
use crate::workload_args::WorkloadArgs;
use tokenmeter_slo::spec::parse_duration;

/// Options of `tokenmeter bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// An OpenAI-compatible server: its base URL as SDKs take it (`https://api.example.com/v1`),
    /// its host alone (`http://127.0.0.1:8000`) or the endpoint's full URL; http or https.
    /// Without it, an embedded simulator is started on 127.0.0.1 (ephemeral port) and
    /// benchmarked over real HTTP.
    #[arg(long, visible_alias = "base-url", value_parser = parse_boxed_url)]
    pub(crate) url: Option<Box<reqwest::Url>>,

    /// The API: /v1/chat/completions or /v1/completions, joined onto --url unless it names an
    /// endpoint already (a base URL ending in /v1 gets /chat/completions).
    #[arg(long, default_value = "/v1/chat/completions")]
    pub(crate) endpoint: String,

    /// The model to ask for. Default: the first model listed by GET /v1/models.
    #[arg(long)]
    pub(crate) model: Option<String>,

    /// The environment variable holding the API key, sent as a bearer token and never printed.
    /// A variable named here other than the default must be set.
    #[arg(long, default_value = DEFAULT_KEY_ENV, value_name = "NAME")]
    pub(crate) api_key_env: String,

    /// How requests are released: rate, arrivals, concurrency, stages, duration, warm-up.
    #[command(flatten)]
    pub(crate) load: LoadArgs,

    /// What is sent: synthetic prompts or a dataset, conversations, prefixes, cancellations.
    #[command(flatten)]
    pub(crate) workload: WorkloadArgs,

    /// Requests to send [default: 200, or no limit with --duration]. When sweeping, per rate
    /// [default: 10 s of arrivals, from 30 to 200 requests]; with a list of --concurrency
    /// levels, per level.
    #[arg(long, short = 'n', visible_aliases = ["num-prompts", "request-count"])]
    pub(crate) requests: Option<usize>,

    /// Input-token class edges for TTFT and E2E by class, e.g. 512,2048 (default: the run's
    /// quartiles).
    #[arg(long, value_parser = crate::output::classes::parse_edges, value_name = "EDGES")]
    pub(crate) input_classes: Option<tokenmeter::report::LengthClasses>,

    /// Output-token class edges for E2E by class, e.g. 128,512 (default: the run's terciles).
    #[arg(long, value_parser = crate::output::classes::parse_edges, value_name = "EDGES")]
    pub(crate) output_classes: Option<tokenmeter::report::LengthClasses>,

    /// Per-request objectives for goodput, e.g. ttft=1s,tpot=50ms,e2e=20s (`none`: good =
    /// succeeded).
    #[arg(long, default_value = "ttft=1s,tpot=50ms")]
    pub(crate) slo: Slo,

    /// End the run once the server is evidently not keeping up with a constant --rate (TTFT
    /// from the schedule diverging over three blocks of 8 requests while answers fall behind
    /// arrivals beyond Poisson noise): nothing more is sent, what is in flight finishes, and
    /// the verdict is printed. Off by default for a single run, on in --sweep
    /// (`--stop-on-saturation=false` turns it off there).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub(crate) stop_on_saturation: Option<bool>,

    /// End the run once more than this share of the last 20 requests failed, e.g. 0.5 (errors
    /// of any class; cancellations are not errors).
    #[arg(long, value_parser = parse_share, value_name = "R")]
    pub(crate) max_error_rate: Option<f64>,

    /// From when TTFT and E2E are judged against --slo: `schedule` (when each request was
    /// due: its arrival, so a request that waited in the client for a slot is judged as its
    /// user felt it) or `send` (as `vllm bench serve` judges goodput).
    #[arg(long, value_enum, default_value = "schedule", value_name = "FROM")]
    pub(crate) slo_from: crate::slo::JudgedFrom,

    /// A full SLO spec (TOML, see `tokenmeter slo rules`): judge every request against it on the
    /// client side and print attainment, burn rates, alerts and the diagnosis at the end.
    #[arg(long, value_name = "FILE")]
    pub(crate) slo_spec: Option<PathBuf>,

    /// Deadline of each request, from its send to its last byte (e.g. 30s, 500ms).
    #[arg(long, default_value = "60s", value_parser = parse_timeout)]
    pub(crate) timeout: Duration,

    /// The largest SSE event (or line) a response may send, e.g. 4MiB, 512KiB, 64MiB: a longer
    /// one ends the request as a `transport` error instead of being buffered.
    #[arg(long, default_value = "4MiB", value_parser = parse_size, value_name = "SIZE")]
    pub(crate) max_event_size: usize,

    /// Headers, extra body, the length field and streaming of every request.
    #[command(flatten)]
    pub(crate) shape: ShapeArgs,

    /// vLLM's `--goodput`, percentiles and result format.
    #[command(flatten)]
    pub(crate) peer: PeerArgs,

    /// `--label` and `--metadata` of the `run` block.
    #[command(flatten)]
    pub(crate) run: RunArgs,

    /// `--slice` and `--server-metrics`: the run over time, the server's view beside it.
    #[command(flatten)]
    pub(crate) slices: crate::slices::SliceArgs,

    /// Send vLLM's `ignore_eos: true` so outputs have exactly the requested length.
    #[arg(long)]
    pub(crate) ignore_eos: bool,

    /// Follow HTTP redirects (up to 10). By default a redirect is an error naming its target,
    /// so that the bench measures the server at --url and no other.
    #[arg(long)]
    pub(crate) follow_redirects: bool,

    /// Trust the CA certificate(s) of this PEM file for https, on top of the system's roots
    /// (SSL_CERT_FILE and SSL_CERT_DIR, when set, replace the system's roots).
    #[arg(long, value_name = "FILE")]
    pub(crate) ca_cert: Option<PathBuf>,

    /// Do not verify the server's certificate (self-signed test servers only: anyone on the
    /// path can read and change the traffic, API key included).
    #[arg(long)]
    pub(crate) insecure: bool,

    /// Seed of the arrivals and the synthetic prompts.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,

    /// Write the summary as JSON to FILE (`-`: stdout, the table then goes to stderr). Every
    /// output path is checked before the first request.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,

    /// Write one JSON line per request with its raw timestamps to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,

    /// Write a self-contained HTML report with charts to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,

    /// Search the request rate for the highest with SLO attainment ≥ --sweep-target, stated
    /// as "≥ R (not reached)" when the highest rate run still passed.
    #[arg(long)]
    pub(crate) sweep: bool,

    /// The rates of --sweep, e.g. 1,2,4,8 (implies --sweep), run as given. Default: a search
    /// from --rate (or 2), doubling while rates pass and halving while they fail, then
    /// bisecting to --sweep-resolution, at most 12 steps.
    #[arg(long, value_delimiter = ',', value_parser = parse_rate)]
    pub(crate) sweep_rates: Vec<f64>,

    /// The attainment a sweep rate must reach to count (DistServe uses 0.9).
    #[arg(long, default_value_t = 0.9)]
    pub(crate) sweep_target: f64,

    /// The automatic sweep's resolution: it bisects until the lowest failing rate is within
    /// this fraction above the highest passing one (0.1: 10%).
    #[arg(long, default_value_t = 0.1, value_parser = parse_resolution, value_name = "FRACTION")]
    pub(crate) sweep_resolution: f64,

    /// How long a sweep step's arrivals last when -n is not given (at least 30 requests): long
    /// enough for a steady state after its warm-up (the first tenth of its requests, not
    /// judged). A step whose attainment interval straddles the target runs as long again, at
    /// most twice.
    #[arg(long, default_value = "10s", value_parser = parse_timeout, value_name = "DURATION")]
    pub(crate) sweep_step_duration: Duration,

    /// GPUs behind the endpoint: the sweep also reports its capacity per GPU.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) gpus: Option<u32>,

    /// Do not draw the progress bar.
    #[arg(long)]
    pub(crate) no_progress: bool,

    /// Do not send the test request before the run (one request of the run's shape, outside
    /// the measurements, that stops the run on 400, 401, 403, 404, 405 or 422 with the
    /// server's message, or on an answer that is not an event stream).
    #[arg(long)]
    pub(crate) no_preflight: bool,

    /// Exit with code 1 when SLO attainment (good / sent, as judged by --slo) is below this
    /// fraction, e.g. 0.9. Exit codes: 0 ok; 1 an objective missed (--fail-under, --slo-spec);
    /// 2 bad flags or input; 3 could not run (unreachable, refused test request, failed model
    /// discovery, no request succeeded, an output not written); 130 interrupted.
    #[arg(long, value_parser = parse_fraction, value_name = "FRACTION")]
    pub(crate) fail_under: Option<f64>,

    /// Measure the client itself against a server streaming at known times (64 streams, 20 ms
    /// TTFT, 2 ms between tokens) and report its CPU cost and timing error.
    #[arg(long, hide = true)]
    pub(crate) self_check_client: bool,

    /// `--shard`, `--shards`, `--start-at`: one run split over processes.
    #[command(flatten)]
    pub(crate) shard: crate::shard::ShardArgs,

    /// `tokenmeter bench merge`.
    #[command(subcommand)]
    pub(crate) command: Option<crate::merge::BenchCommand>,
}

/// Parses --url into a box (keeps the options small).
fn parse_boxed_url(text: &str) -> Result<Box<reqwest::Url>, String> {
    parse_url(text).map(Box::new)
}

pub(crate) fn parse_fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!(
            "`{text}` is not an attainment fraction; give a number from 0 to 1 (e.g. 0.9)"
        )),
    }
}

fn parse_resolution(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err(format!(
            "`{text}` is not a resolution; give a fraction above 0 and at most 1 (e.g. 0.1)"
        )),
    }
}

pub(crate) fn parse_duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

pub(crate) fn parse_timeout(text: &str) -> Result<Duration, String> {
    match parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("the timeout must be above 0 (e.g. 30s)".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// A size in bytes: a whole number with an optional unit B, KiB, MiB, GiB (or KB, MB, GB, in
/// powers of 1000), e.g. `4MiB`.
pub(crate) fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit_bytes: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => {
            return Err(format!(
                "`{text}` is not a size; give bytes with a unit B, KiB, MiB or GiB (e.g. 4MiB)"
            ));
        }
    };
    let bytes = number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit_bytes))
        .and_then(|n| usize::try_from(n).ok());
    match bytes {
        Some(0) => Err("the size must be above 0 (e.g. 4MiB)".to_owned()),
        Some(bytes) => Ok(bytes),
        None => Err(format!(
            "`{text}` is not a size; give a whole number of bytes with a unit (e.g. 4MiB)"
        )),
    }
}

/// The variable --api-key-env names by default: it may be unset (servers without keys).
pub(crate) const DEFAULT_KEY_ENV: &str = "OPENAI_API_KEY";

/// Requests of a single run when --requests is not given.
pub(crate) const DEFAULT_REQUESTS: usize = 200;

impl BenchArgs {
    /// Requests of a single run.
    pub(crate) fn requests(&self) -> usize {
        self.requests.unwrap_or(DEFAULT_REQUESTS)
    }

    /// True when an output file is `-`: stdout is that file's, the table goes to stderr.
    pub(crate) fn stdout_taken(&self) -> bool {
        [&self.json, &self.trace, &self.html]
            .into_iter()
            .flatten()
            .any(|p| p.as_os_str() == "-")
    }

    /// Requests of one sweep step at `rate`: --requests, else --sweep-step-duration of
    /// arrivals, at least 30 (and at most 100,000).
    pub(crate) fn requests_at(&self, rate: f64) -> usize {
        self.requests.unwrap_or_else(|| {
            let n = (rate * self.sweep_step_duration.as_secs_f64()).ceil();
            (n.min(100_000.0) as usize).max(30)
        })
    }
}

/// The validated plan of a bench run.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The endpoint's full URL, or `None` for the embedded simulator.
    pub(crate) url: Option<reqwest::Url>,
    /// The endpoint path to use when the URL is a base URL.
    pub(crate) endpoint: String,
    /// The load of a single run (its first stage's).
    pub(crate) load: Load,
    /// The stages of a single run.
    pub(crate) stages: Vec<Stage>,
    /// The sweep's rates: empty for no sweep, `None` inside for auto doubling.
    pub(crate) sweep: Option<Vec<f64>>,
    /// Where prompts come from.
    pub(crate) source: Source,
    /// How HTTPS servers are verified (`--ca-cert`, `--insecure`).
    pub(crate) tls: Tls,
    /// `--tokenizer`, loaded.
    pub(crate) tokenizer: Option<Arc<PromptTokenizer>>,
}

impl BenchArgs {
    /// Checks the options together and loads the dataset.
    pub(crate) fn plan(&self) -> anyhow::Result<Plan> {
        if self.requests == Some(0) {
            bail!("--requests must be at least 1");
        }
        if self.load.concurrency.contains(&0) {
            bail!("--concurrency must be at least 1");
        }
        if !(self.sweep_target > 0.0 && self.sweep_target <= 1.0) {
            bail!("--sweep-target must be in (0, 1], e.g. 0.9");
        }
        self.shape.shape()?;
        let name = self.api_key_env.as_str();
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            bail!("--api-key-env must name an environment variable, e.g. OPENAI_API_KEY");
        }
        if !self.endpoint.starts_with('/') || !self.endpoint.ends_with("completions") {
            bail!(
                "--endpoint `{}` is not supported; use /v1/chat/completions or /v1/completions",
                self.endpoint
            );
        }
        let stages = self.load.stages(self.requests)?;
        let sweeping = self.sweep || !self.sweep_rates.is_empty();
        if sweeping && (!self.load.stages.is_empty() || self.load.duration.is_some()) {
            bail!("--sweep runs its own steps; it cannot be used with --stage or --duration");
        }
        if sweeping && self.load.rate.is_none() && !self.load.concurrency.is_empty() {
            bail!(
                "--sweep varies the request rate; it cannot be used with --concurrency alone (add --rate, or drop --concurrency)"
            );
        }
        let sweep = sweeping.then(|| {
            let mut rates = self.sweep_rates.clone();
            rates.sort_by(f64::total_cmp);
            rates.dedup();
            rates
        });
        let tokenizer = self.workload.tokenizer()?;
        let source = self.workload.source(tokenizer.clone(), self.seed)?;
        let replay = match &source {
            Source::Dataset { entries, .. } if entries.iter().any(|e| e.at.is_some()) => {
                Some(entries.len())
            }
            _ => None,
        };
        let stages = match replay {
            Some(n)
                if self.load.rate.is_none()
                    && self.load.concurrency.is_empty()
                    && self.load.stages.is_empty()
                    && self.load.ramp_up_strategy.is_none() =>
            {
                vec![Stage {
                    load: Load::Replay {
                        speed: self.workload.replay_speed,
                    },
                    requests: self
                        .requests
                        .or((self.load.duration.is_none()).then_some(n)),
                    duration: self.load.duration,
                }]
            }
            _ => stages,
        };
        let load = stages[0].load;
        Ok(Plan {
            url: self.url.as_deref().cloned(),
            endpoint: self.endpoint.clone(),
            load,
            stages,
            sweep,
            source,
            tls: Tls::new(self.ca_cert.as_deref(), self.insecure)?,
            tokenizer,
        })
    }

    /// The API key from the environment, if the variable is set and not empty.
    pub(crate) fn api_key(&self) -> anyhow::Result<Option<String>> {
        match std::env::var(&self.api_key_env) {
            Ok(key) if key.trim().is_empty() => Ok(None),
            Ok(key) => Ok(Some(key.trim().to_owned())),
            Err(std::env::VarError::NotPresent) if self.api_key_env == DEFAULT_KEY_ENV => Ok(None),
            Err(std::env::VarError::NotPresent) => {
                return Err(crate::exit::Exit::Usage.error(format!(
                    "--api-key-env names {}, which is not set; export it (e.g. `export {}=...`) \
                     or drop --api-key-env for a server without keys",
                    self.api_key_env, self.api_key_env
                )));
            }
            Err(std::env::VarError::NotUnicode(_)) => Err(anyhow::anyhow!(
                "the variable {} is not valid UTF-8; set it to the plain API key",
                self.api_key_env
            )),
        }
        .with_context(|| "reading the API key")
    }
}

/// A share in (0, 1].
fn parse_share(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 1.0 => Ok(r),
        _ => Err(format!(
            "`{text}` is not a share of requests; give a number in (0, 1], e.g. 0.5"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_must_be_positive() {
        assert_eq!(parse_rate("2.5"), Ok(2.5));
        assert_eq!(parse_rate("inf"), Ok(f64::INFINITY));
        for bad in ["0", "-1", "fast", "NaN"] {
            assert!(
                parse_rate(bad).unwrap_err().contains("requests per second"),
                "{bad}"
            );
        }
        assert!(parse_timeout("0s").is_err());
        assert!(parse_timeout("10").unwrap_err().contains("unit"));
    }

    #[test]
    fn sizes_have_units() {
        assert_eq!(parse_size("4MiB"), Ok(4 << 20));
        assert_eq!(parse_size("512 KiB"), Ok(512 << 10));
        assert_eq!(parse_size("2mb"), Ok(2_000_000));
        assert_eq!(parse_size("100"), Ok(100));
        for bad in [
            "",
            "MiB",
            "4 parsecs",
            "-1MiB",
            "1.5MiB",
            "99999999999999GiB",
        ] {
            assert!(parse_size(bad).unwrap_err().contains("size"), "{bad}");
        }
        assert!(parse_size("0").unwrap_err().contains("above 0"));
    }
}
