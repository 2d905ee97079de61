//! [`BenchArgs`]: the settings of a bench run, their defaults, the parsers of their text
//! forms, and their validation into a `Plan`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;

use crate::load_args::{DEFAULT_REQUESTS, LoadArgs};
use crate::peer::PeerArgs;
use crate::request_shape::ShapeArgs;
use crate::run_block::RunArgs;
use crate::shard::ShardArgs;
use crate::slices::SliceArgs;
use crate::slo::{JudgedFrom, Slo};
use crate::url::parse_url;
use crate::workload_args::WorkloadArgs;
use tokenmeter_slo::spec::parse_duration;

/// The settings of a bench run (what `tokenmeter bench`'s flags set): the target, the load,
/// the workload, the objectives and the outputs. [`Default`] holds the defaults of every flag;
/// set the fields that differ and pass it to [`run`](crate::run).
///
/// ```
/// # fn main() -> anyhow::Result<()> {
/// use tokenmeter_bench::{BenchArgs, DEFAULT_REQUESTS};
///
/// let mut args = BenchArgs::default();
/// args.url = Some(Box::new("http://127.0.0.1:8000/v1".parse()?));
/// args.requests = Some(50);
/// args.load.rate = Some(5.0);
/// args.slo = "ttft=500ms,tpot=40ms".parse()?;
/// assert_eq!(args.endpoint, "/v1/chat/completions");
/// assert_eq!(DEFAULT_REQUESTS, 200);
/// // `tokenmeter_bench::run(args).await` runs it as the command does.
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BenchArgs {
    /// The server's URL (base URL, host or endpoint; http or https); `None` (default): the embedded simulator.
    pub url: Option<Box<reqwest::Url>>,
    /// The API path joined onto `url` unless it names an endpoint; default [`DEFAULT_ENDPOINT`].
    pub endpoint: String,
    /// The model to ask for; `None` (default): the first listed by `GET /v1/models`.
    pub model: Option<String>,
    /// The environment variable holding the API key; default [`DEFAULT_KEY_ENV`] (may be unset).
    pub api_key_env: String,
    /// How requests are released (rate, concurrency, stages, duration, warm-up).
    pub load: LoadArgs,
    /// What is sent (synthetic prompts or a dataset, conversations, cancellations).
    pub workload: WorkloadArgs,
    /// Requests to send; `None` (default): [`DEFAULT_REQUESTS`], no limit with a duration, a sweep's own per step.
    pub requests: Option<usize>,
    /// Input-token class edges; `None` (default): the run's quartiles.
    pub input_classes: Option<tokenmeter::report::LengthClasses>,
    /// Output-token class edges; `None` (default): the run's terciles.
    pub output_classes: Option<tokenmeter::report::LengthClasses>,
    /// Per-request objectives for goodput; default [`DEFAULT_SLO`] (TTFT ≤ 1 s, TPOT ≤ 50 ms).
    pub slo: Slo,
    /// End the run once the server is not keeping up; `None` (default): off for a run, on in a sweep.
    pub stop_on_saturation: Option<bool>,
    /// End the run once more than this share (0, 1] of the last 20 requests failed; `None` (default): never.
    pub max_error_rate: Option<f64>,
    /// From when TTFT and E2E are judged against `slo`; default [`JudgedFrom::Schedule`].
    pub slo_from: JudgedFrom,
    /// A full SLO spec file (TOML) to judge every request against; `None` (default): none.
    pub slo_spec: Option<PathBuf>,
    /// Deadline of each request, from its send to its last byte; default [`DEFAULT_TIMEOUT`] (60 s).
    pub timeout: Duration,
    /// The largest SSE event or line a response may send, in bytes; default [`DEFAULT_MAX_EVENT_SIZE`] (4 MiB).
    pub max_event_size: usize,
    /// Headers, extra body, the length field and streaming of every request.
    pub shape: ShapeArgs,
    /// vLLM's `--goodput`, percentiles and result format.
    pub peer: PeerArgs,
    /// The label and metadata of the `run` block.
    pub run: RunArgs,
    /// Time slices and the server's `/metrics` beside them.
    pub slices: SliceArgs,
    /// Send vLLM's `ignore_eos: true`; default false.
    pub ignore_eos: bool,
    /// Follow HTTP redirects (up to 10); default false (a redirect is an error).
    pub follow_redirects: bool,
    /// A PEM file of CA certificates trusted on top of the system's roots; `None` (default): none.
    pub ca_cert: Option<PathBuf>,
    /// Do not verify the server's certificate; default false.
    pub insecure: bool,
    /// Seed of the arrivals and the synthetic prompts; default 0.
    pub seed: u64,
    /// Where the summary goes as JSON (`-`: stdout); `None` (default): not written.
    pub json: Option<PathBuf>,
    /// Where one JSON line per request goes; `None` (default): not written.
    pub trace: Option<PathBuf>,
    /// Where the HTML report goes; `None` (default): not written.
    pub html: Option<PathBuf>,
    /// Search the highest request rate meeting `sweep_target`; default false.
    pub sweep: bool,
    /// The sweep's rates in requests per second (implies `sweep`); empty (default): a search.
    pub sweep_rates: Vec<f64>,
    /// The attainment a sweep rate must reach, in (0, 1]; default [`DEFAULT_SWEEP_TARGET`] (0.9).
    pub sweep_target: f64,
    /// The automatic sweep's resolution, a fraction in (0, 1]; default [`DEFAULT_SWEEP_RESOLUTION`] (0.1).
    pub sweep_resolution: f64,
    /// How long a sweep step's arrivals last without `requests`; default [`DEFAULT_SWEEP_STEP_DURATION`] (10 s).
    pub sweep_step_duration: Duration,
    /// GPUs behind the endpoint (at least 1), for the sweep's capacity per GPU; `None` (default): not reported.
    pub gpus: Option<u32>,
    /// Do not draw the progress bar; default false.
    pub no_progress: bool,
    /// Do not send the test request before the run; default false.
    pub no_preflight: bool,
    /// Exit with code 1 when SLO attainment is below this fraction; `None` (default): never.
    pub fail_under: Option<f64>,
    /// Measure the client itself instead of a server; default false.
    pub self_check_client: bool,
    /// Find the load this process measures within 1 ms of the truth, against the self-check
    /// server at `url` (one in this process when `None`); default false.
    pub self_check_ceiling: bool,
    /// Run only the self-check server on this address, for clients in other processes;
    /// `None` (default): not.
    pub self_check_serve: Option<std::net::SocketAddr>,
    /// One run split over processes: the shard and the start time.
    pub shard: ShardArgs,
    /// The level of every figure's confidence interval (`--confidence`); default 95%.
    pub confidence: tokenmeter::report::Confidence,
    /// Times the same plan is run (same seed: same prompts and arrival times), at least 1;
    /// default 1. Above 1, the report adds each figure's across-run mean and interval.
    pub repeat: usize,
    /// The pause between repeated runs; default 0 s (no pause).
    pub cooldown: Duration,
}

/// The API path of [`BenchArgs::endpoint`] by default.
///
/// ```
/// use tokenmeter_bench::{BenchArgs, DEFAULT_ENDPOINT};
/// assert_eq!(BenchArgs::default().endpoint, DEFAULT_ENDPOINT);
/// ```
pub const DEFAULT_ENDPOINT: &str = "/v1/chat/completions";

/// The objectives of [`BenchArgs::slo`] by default: TTFT ≤ 1 s and TPOT ≤ 50 ms, judged from
/// the schedule (`--slo ttft=1s,tpot=50ms`).
///
/// ```
/// # fn main() -> anyhow::Result<()> {
/// use tokenmeter_bench::{DEFAULT_SLO, Slo};
/// assert_eq!(DEFAULT_SLO, "ttft=1s,tpot=50ms".parse::<Slo>()?);
/// # Ok(())
/// # }
/// ```
pub const DEFAULT_SLO: Slo = Slo {
    ttft: Some(Duration::from_secs(1)),
    tpot: Some(Duration::from_millis(50)),
    e2e: None,
    itl: None,
    judged_from: JudgedFrom::Schedule,
};

/// The deadline of each request by default ([`BenchArgs::timeout`]).
///
/// ```
/// assert_eq!(tokenmeter_bench::DEFAULT_TIMEOUT, std::time::Duration::from_secs(60));
/// ```
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest SSE event by default, in bytes ([`BenchArgs::max_event_size`]): 4 MiB.
///
/// ```
/// use tokenmeter_bench::{DEFAULT_MAX_EVENT_SIZE, parse::parse_size};
/// assert_eq!(parse_size("4MiB"), Ok(DEFAULT_MAX_EVENT_SIZE));
/// ```
pub const DEFAULT_MAX_EVENT_SIZE: usize = 4 << 20;

/// The attainment a sweep rate must reach by default ([`BenchArgs::sweep_target`]), as DistServe.
///
/// ```
/// use tokenmeter_bench::{BenchArgs, DEFAULT_SWEEP_TARGET};
/// assert_eq!(BenchArgs::default().sweep_target, DEFAULT_SWEEP_TARGET);
/// ```
pub const DEFAULT_SWEEP_TARGET: f64 = 0.9;

/// The automatic sweep's resolution by default ([`BenchArgs::sweep_resolution`]).
///
/// ```
/// assert_eq!(tokenmeter_bench::DEFAULT_SWEEP_RESOLUTION, 0.1);
/// ```
pub const DEFAULT_SWEEP_RESOLUTION: f64 = 0.1;

/// How long a sweep step's arrivals last by default ([`BenchArgs::sweep_step_duration`]).
///
/// ```
/// assert_eq!(tokenmeter_bench::DEFAULT_SWEEP_STEP_DURATION.as_secs(), 10);
/// ```
pub const DEFAULT_SWEEP_STEP_DURATION: Duration = Duration::from_secs(10);

impl Default for BenchArgs {
    fn default() -> Self {
        Self {
            url: None,
            endpoint: DEFAULT_ENDPOINT.to_owned(),
            model: None,
            api_key_env: DEFAULT_KEY_ENV.to_owned(),
            load: LoadArgs::default(),
            workload: WorkloadArgs::default(),
            requests: None,
            input_classes: None,
            output_classes: None,
            slo: DEFAULT_SLO,
            stop_on_saturation: None,
            max_error_rate: None,
            slo_from: JudgedFrom::Schedule,
            slo_spec: None,
            timeout: DEFAULT_TIMEOUT,
            max_event_size: DEFAULT_MAX_EVENT_SIZE,
            shape: ShapeArgs::default(),
            peer: PeerArgs::default(),
            run: RunArgs::default(),
            slices: SliceArgs::default(),
            ignore_eos: false,
            follow_redirects: false,
            ca_cert: None,
            insecure: false,
            seed: 0,
            json: None,
            trace: None,
            html: None,
            sweep: false,
            sweep_rates: Vec::new(),
            sweep_target: DEFAULT_SWEEP_TARGET,
            sweep_resolution: DEFAULT_SWEEP_RESOLUTION,
            sweep_step_duration: DEFAULT_SWEEP_STEP_DURATION,
            gpus: None,
            no_progress: false,
            no_preflight: false,
            fail_under: None,
            self_check_client: false,
            self_check_ceiling: false,
            self_check_serve: None,
            shard: ShardArgs::default(),
            confidence: tokenmeter::report::Confidence::default(),
            repeat: 1,
            cooldown: Duration::ZERO,
        }
    }
}

/// Parses `--url` (a base URL, a host or an endpoint; http or https) into a box (keeps the
/// settings small).
///
/// ```
/// use tokenmeter_bench::parse::parse_boxed_url;
///
/// let url = parse_boxed_url("http://127.0.0.1:8000/v1").unwrap();
/// assert_eq!(url.port(), Some(8000));
/// assert!(parse_boxed_url("not a url").is_err());
/// ```
pub fn parse_boxed_url(text: &str) -> Result<Box<reqwest::Url>, String> {
    parse_url(text).map(Box::new)
}

/// An attainment fraction from 0 to 1 (`--fail-under`, `--cancel-fraction`).
///
/// ```
/// use tokenmeter_bench::parse::parse_fraction;
///
/// assert_eq!(parse_fraction("0.9"), Ok(0.9));
/// assert!(parse_fraction("1.5").unwrap_err().contains("from 0 to 1"));
/// ```
pub fn parse_fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!(
            "`{text}` is not an attainment fraction; give a number from 0 to 1 (e.g. 0.9)"
        )),
    }
}

/// A sweep resolution: a fraction above 0 and at most 1 (`--sweep-resolution`).
///
/// ```
/// use tokenmeter_bench::parse::parse_resolution;
///
/// assert_eq!(parse_resolution("0.1"), Ok(0.1));
/// assert!(parse_resolution("0").is_err());
/// ```
pub fn parse_resolution(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err(format!(
            "`{text}` is not a resolution; give a fraction above 0 and at most 1 (e.g. 0.1)"
        )),
    }
}

/// A duration with a unit, e.g. `2s`, `500ms` (0 allowed: `--think-time`).
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_bench::parse::parse_duration_arg;
///
/// assert_eq!(parse_duration_arg("500ms"), Ok(Duration::from_millis(500)));
/// assert_eq!(parse_duration_arg("0s"), Ok(Duration::ZERO));
/// assert!(parse_duration_arg("soon").is_err());
/// ```
pub fn parse_duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

/// A duration above 0 with a unit, e.g. `30s` (`--timeout`, `--duration`, `--sweep-step-duration`).
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_bench::parse::parse_timeout;
///
/// assert_eq!(parse_timeout("30s"), Ok(Duration::from_secs(30)));
/// assert!(parse_timeout("0s").unwrap_err().contains("above 0"));
/// ```
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    match parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("the timeout must be above 0 (e.g. 30s)".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// A size in bytes: a whole number with an optional unit B, KiB, MiB, GiB (or KB, MB, GB, in
/// powers of 1000), e.g. `4MiB`.
///
/// ```
/// use tokenmeter_bench::parse::parse_size;
///
/// assert_eq!(parse_size("4MiB"), Ok(4 << 20));
/// assert_eq!(parse_size("1KB"), Ok(1000));
/// assert!(parse_size("4 parsecs").is_err());
/// ```
pub fn parse_size(text: &str) -> Result<usize, String> {
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
///
/// ```
/// use tokenmeter_bench::{BenchArgs, DEFAULT_KEY_ENV};
/// assert_eq!(BenchArgs::default().api_key_env, DEFAULT_KEY_ENV);
/// ```
pub const DEFAULT_KEY_ENV: &str = "OPENAI_API_KEY";

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

impl BenchArgs {
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

/// A share of requests in (0, 1] (`--max-error-rate`).
///
/// ```
/// use tokenmeter_bench::parse::parse_share;
///
/// assert_eq!(parse_share("0.5"), Ok(0.5));
/// assert!(parse_share("0").is_err());
/// ```
pub fn parse_share(text: &str) -> Result<f64, String> {
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
    use crate::schedule::parse_rate;

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
