//! The options of `tokenmeter bench`, and their validation into a [`Plan`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::bench::peer::PeerArgs;
use crate::bench::request_shape::ShapeArgs;
use crate::bench::run_block::RunArgs;
use crate::bench::runner::Load;
use crate::bench::schedule::{Stage, StageSpec, parse_burstiness, parse_rate};
use crate::bench::slo::Slo;
use crate::bench::tls::Tls;
use crate::bench::url::parse_url;
use crate::bench::workload::{
    ArrivalKind, CancelAt, Curve, DatasetFormat, DatasetOptions, Injection, LengthDist,
    PromptTokenizer, Ramp, SharedPrefix, Source, load_dataset,
};
use tokenmeter_slo::spec::parse_duration;

/// Options of `tokenmeter bench`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct BenchArgs {
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

    /// Requests to send [default: 200, or no limit with --duration]. When sweeping, per rate
    /// [default: 10 s of arrivals, from 30 to 200 requests]; with a list of --concurrency
    /// levels, per level.
    #[arg(long, short = 'n', visible_aliases = ["num-prompts", "request-count"])]
    pub(crate) requests: Option<usize>,

    /// Open-loop request rate in requests per second (`inf` sends all at once). Default 10 when
    /// --concurrency is not given.
    #[arg(long, visible_alias = "request-rate", value_parser = parse_rate)]
    pub(crate) rate: Option<f64>,

    /// How open-loop arrivals are spaced.
    #[arg(long, value_enum, default_value = "poisson")]
    pub(crate) arrival: ArrivalKind,

    /// The gamma shape of Poisson gaps, as vLLM's --burstiness: 1 is a Poisson process, below 1
    /// burstier, above 1 steadier (the gaps' coefficient of variation is 1/√B).
    #[arg(long, default_value_t = 1.0, value_parser = parse_burstiness, value_name = "B")]
    pub(crate) burstiness: f64,

    /// Ramp the rate from --ramp-up-start-rate to --ramp-up-end-rate over the run (by request,
    /// as vLLM does; by time when only --duration ends the run).
    #[arg(long, value_enum, value_name = "CURVE", requires_all = ["ramp_up_start_rate", "ramp_up_end_rate"])]
    pub(crate) ramp_up_strategy: Option<Curve>,

    /// The rate at the start of the ramp (requests per second).
    #[arg(long, value_parser = parse_rate, requires = "ramp_up_strategy", value_name = "RATE")]
    pub(crate) ramp_up_start_rate: Option<f64>,

    /// The rate at the end of the ramp (requests per second).
    #[arg(long, value_parser = parse_rate, requires = "ramp_up_strategy", value_name = "RATE")]
    pub(crate) ramp_up_end_rate: Option<f64>,

    /// Requests in flight: a closed loop without --rate, a cap on in-flight requests with it.
    /// A list (1,4,16) runs one closed-loop stage per level, each of -n requests (or
    /// --duration), reported level by level.
    #[arg(long, visible_alias = "max-concurrency", value_delimiter = ',')]
    pub(crate) concurrency: Vec<usize>,

    /// Run for this long (e.g. 30s, 10m), then let the requests in flight finish; with -n,
    /// whichever comes first.
    #[arg(long, value_parser = parse_timeout, value_name = "DURATION", visible_alias = "benchmark-duration")]
    pub(crate) duration: Option<Duration>,

    /// Requests sent before the measured run, at its load, and left out of every result.
    #[arg(
        long,
        default_value_t = 0,
        visible_alias = "warmup-request-count",
        value_name = "N"
    )]
    pub(crate) warmup: usize,

    /// A stage of a multi-stage run, repeatable, e.g. `rate=2,duration=30s`,
    /// `rate=2..20,ramp=exponential,duration=60s`, `concurrency=16,requests=200` (keys: rate,
    /// ramp, concurrency, burstiness, arrival, requests, duration). Replaces --rate,
    /// --concurrency, -n and --duration.
    #[arg(long = "stage", value_name = "STAGE")]
    pub(crate) stages: Vec<StageSpec>,

    /// Prompt length in tokens: N, LO..HI (uniform), normal:MEAN:SD or exp:MEAN.
    #[arg(
        long,
        visible_alias = "random-input-len",
        default_value = "256",
        value_name = "DIST"
    )]
    pub(crate) input_tokens: LengthDist,

    /// Output length in tokens (max_tokens): N, LO..HI, normal:MEAN:SD or exp:MEAN.
    #[arg(
        long,
        visible_alias = "random-output-len",
        default_value = "128",
        value_name = "DIST"
    )]
    pub(crate) output_tokens: LengthDist,

    /// A JSONL dataset: one {"prompt": ..., "output_tokens": ...} or {"messages": [...]} per
    /// line, used in order instead of synthetic prompts.
    #[arg(long, visible_alias = "dataset-path", value_name = "FILE")]
    pub(crate) dataset: Option<PathBuf>,

    /// The format of --dataset: jsonl, sharegpt (vLLM's filtering rules) or mooncake (a
    /// timestamped trace, replayed at its times). Default: found from the content.
    #[arg(
        long,
        value_enum,
        default_value = "auto",
        visible_alias = "dataset-name"
    )]
    pub(crate) dataset_format: DatasetFormat,

    /// Send ShareGPT conversations whole: one request per human turn, each with the
    /// conversation before it; or, with synthetic prompts, see --turns.
    #[arg(long)]
    pub(crate) multi_turn: bool,

    /// Synthetic conversations of this many turns: each turn a new user message of
    /// --input-tokens after the history (replies of --output-tokens); -n counts conversations.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) turns: u32,

    /// The pause between a turn's answer and the next turn of its conversation (the user
    /// reading and typing), e.g. 2s.
    #[arg(long, default_value = "0s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) think_time: Duration,

    /// Synthetic prompts that share prefixes: GROUPS:TOKENS (e.g. 8:1024), request i starting
    /// with prefix i mod GROUPS, then --input-tokens of its own (prefix-cache behaviour).
    #[arg(long, value_name = "GROUPS:TOKENS")]
    pub(crate) shared_prefix: Option<SharedPrefix>,

    /// The fraction of requests that hang up on purpose (at --cancel-after), counted as
    /// `cancelled` with the tokens they read, e.g. 0.1.
    #[arg(long, default_value_t = 0.0, value_parser = parse_fraction, value_name = "FRACTION", requires = "cancel_after")]
    pub(crate) cancel_fraction: f64,

    /// When injected cancellations hang up: after N tokens (`20tok`) or a time after the send
    /// (`500ms`).
    #[arg(long, value_name = "POINT", requires = "cancel_fraction")]
    pub(crate) cancel_after: Option<CancelAt>,

    /// A replayed trace's speed: 2 sends it twice as fast (its timestamps halved).
    #[arg(long, default_value_t = 1.0, value_parser = parse_burstiness, value_name = "FACTOR")]
    pub(crate) replay_speed: f64,

    /// A Hugging Face `tokenizer.json` (the model's own): synthetic prompts of exactly
    /// --input-tokens tokens, dataset prompts counted with it. Without it, prompt lengths are
    /// estimates (one token per word) and every output says so.
    #[arg(long, value_name = "FILE")]
    pub(crate) tokenizer: Option<PathBuf>,

    /// Input-token class edges for TTFT and E2E by class, e.g. 512,2048 (default: the run's
    /// quartiles).
    #[arg(long, value_parser = crate::bench::output::classes::parse_edges, value_name = "EDGES")]
    pub(crate) input_classes: Option<tokenmeter::report::LengthClasses>,

    /// Output-token class edges for E2E by class, e.g. 128,512 (default: the run's terciles).
    #[arg(long, value_parser = crate::bench::output::classes::parse_edges, value_name = "EDGES")]
    pub(crate) output_classes: Option<tokenmeter::report::LengthClasses>,

    /// Per-request objectives for goodput, e.g. ttft=1s,tpot=50ms,e2e=20s (`none`: good =
    /// succeeded).
    #[arg(long, default_value = "ttft=1s,tpot=50ms")]
    pub(crate) slo: Slo,

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
    pub(crate) slices: crate::bench::slices::SliceArgs,

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
    pub(crate) shard: crate::bench::shard::ShardArgs,

    /// `tokenmeter bench merge`.
    #[command(subcommand)]
    pub(crate) command: Option<crate::bench::merge::BenchCommand>,
}

/// Parses --url into a box (keeps the options small).
fn parse_boxed_url(text: &str) -> Result<Box<reqwest::Url>, String> {
    parse_url(text).map(Box::new)
}

fn parse_fraction(text: &str) -> Result<f64, String> {
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

fn parse_duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
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
    /// The cancellation injection, when asked.
    pub(crate) fn injection(&self) -> Option<Injection> {
        let at = self.cancel_after?;
        (self.cancel_fraction > 0.0).then_some(Injection {
            fraction: self.cancel_fraction,
            at,
        })
    }

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

    /// Requests of one sweep step at `rate`: --requests, else 10 s of arrivals within 30..=200.
    pub(crate) fn requests_at(&self, rate: f64) -> usize {
        self.requests
            .unwrap_or_else(|| ((rate * 10.0).ceil() as usize).clamp(30, DEFAULT_REQUESTS))
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
        if self.concurrency.contains(&0) {
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
        let stages = self.stages()?;
        let sweeping = self.sweep || !self.sweep_rates.is_empty();
        if sweeping && (!self.stages.is_empty() || self.duration.is_some()) {
            bail!("--sweep runs its own steps; it cannot be used with --stage or --duration");
        }
        if sweeping && self.rate.is_none() && !self.concurrency.is_empty() {
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
        let tokenizer = match &self.tokenizer {
            Some(path) => Some(Arc::new(PromptTokenizer::load(path)?)),
            None => None,
        };
        let source = match &self.dataset {
            Some(path) => {
                if self.turns > 1 || self.shared_prefix.is_some() {
                    bail!(
                        "--turns and --shared-prefix shape synthetic prompts; with --dataset, \
                         use --multi-turn (ShareGPT conversations) or drop them"
                    );
                }
                let options = DatasetOptions {
                    format: self.dataset_format,
                    tokenizer: tokenizer.as_deref(),
                    multi_turn: self.multi_turn,
                    seed: self.seed,
                };
                Source::Dataset {
                    entries: load_dataset(path, options)?,
                    output: self.output_tokens,
                }
            }
            None => {
                if self.multi_turn && self.turns == 1 {
                    bail!(
                        "--multi-turn reads ShareGPT conversations (--dataset); for synthetic conversations give --turns N"
                    );
                }
                Source::Synthetic {
                    input: self.input_tokens,
                    output: self.output_tokens,
                    tokenizer: tokenizer.clone(),
                    shared_prefix: self.shared_prefix,
                    turns: self.turns,
                }
            }
        };
        let replay = match &source {
            Source::Dataset { entries, .. } if entries.iter().any(|e| e.at.is_some()) => {
                Some(entries.len())
            }
            _ => None,
        };
        let stages = match replay {
            Some(n)
                if self.rate.is_none()
                    && self.concurrency.is_empty()
                    && self.stages.is_empty()
                    && self.ramp_up_strategy.is_none() =>
            {
                vec![Stage {
                    load: Load::Replay {
                        speed: self.replay_speed,
                    },
                    requests: self.requests.or((self.duration.is_none()).then_some(n)),
                    duration: self.duration,
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

    /// The stages of a single run, from --stage, a list of --concurrency levels, or the load
    /// flags.
    fn stages(&self) -> anyhow::Result<Vec<Stage>> {
        if !self.stages.is_empty() {
            let global = [
                (self.rate.is_some(), "--rate"),
                (!self.concurrency.is_empty(), "--concurrency"),
                (self.requests.is_some(), "-n/--requests"),
                (self.duration.is_some(), "--duration"),
                (self.ramp_up_strategy.is_some(), "--ramp-up-strategy"),
            ];
            if let Some((_, flag)) = global.iter().find(|(set, _)| *set) {
                bail!("--stage describes the whole load; drop {flag} (give it in each stage)");
            }
            return Ok(self
                .stages
                .iter()
                .map(|s| s.stage(self.arrival, self.burstiness))
                .collect());
        }
        if self.burstiness != 1.0 && self.arrival == ArrivalKind::Constant {
            bail!("--burstiness shapes Poisson gaps; drop it or --arrival constant");
        }
        let requests = match (self.requests, self.duration) {
            (None, None) => Some(DEFAULT_REQUESTS),
            (n, _) => n,
        };
        let ramp = match (
            self.ramp_up_strategy,
            self.ramp_up_start_rate,
            self.ramp_up_end_rate,
        ) {
            (Some(curve), Some(start), Some(end)) => {
                if self.rate.is_some() {
                    bail!("--ramp-up-strategy sets the rate; drop --rate");
                }
                if !(start.is_finite() && end.is_finite()) {
                    bail!("a ramp needs finite rates; give numbers, not `inf`");
                }
                Some((start, Ramp { end, curve }))
            }
            _ => None,
        };
        let stage = |load| Stage {
            load,
            requests,
            duration: self.duration,
        };
        match (self.rate, self.concurrency.as_slice(), ramp) {
            (None, [], None) | (Some(_), _, _) | (None, [_], Some(_)) | (None, [], Some(_)) => {
                let (rate, ramp) = match ramp {
                    Some((start, ramp)) => (start, Some(ramp)),
                    None => (self.rate.unwrap_or(10.0), None),
                };
                let max_concurrency = match self.concurrency.as_slice() {
                    [] => None,
                    [c] => Some(*c),
                    _ => bail!(
                        "a list of --concurrency levels runs closed loops; drop --rate or give one level"
                    ),
                };
                Ok(vec![stage(Load::Rate {
                    rate,
                    kind: self.arrival,
                    max_concurrency,
                    burstiness: self.burstiness,
                    ramp,
                })])
            }
            (None, levels, None) => Ok(levels
                .iter()
                .map(|&c| stage(Load::Concurrency(c)))
                .collect()),
            (None, _, Some(_)) => bail!(
                "a list of --concurrency levels runs closed loops; drop the ramp or give one level"
            ),
        }
    }

    /// The API key from the environment, if the variable is set and not empty.
    pub(crate) fn api_key(&self) -> anyhow::Result<Option<String>> {
        match std::env::var(&self.api_key_env) {
            Ok(key) if key.trim().is_empty() => Ok(None),
            Ok(key) => Ok(Some(key.trim().to_owned())),
            Err(std::env::VarError::NotPresent) if self.api_key_env == DEFAULT_KEY_ENV => Ok(None),
            Err(std::env::VarError::NotPresent) => {
                return Err(crate::bench::exit::Exit::Usage.error(format!(
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
