//! [`BenchFlags`]: the flags of `tokenmeter bench`, and their mapping onto the library's
//! [`BenchArgs`]. The defaults are the library's: a test checks that parsing no flag gives
//! [`BenchArgs::default`].

use std::path::PathBuf;
use std::time::Duration;

use tokenmeter_bench::{
    BenchArgs, DEFAULT_ENDPOINT, DEFAULT_KEY_ENV, DEFAULT_SWEEP_RESOLUTION, DEFAULT_SWEEP_TARGET,
    parse,
};

use super::enums::JudgedFrom;
use super::load::LoadFlags;
use super::merge::BenchCommand;
use super::peer::PeerFlags;
use super::run_block::RunFlags;
use super::shape::ShapeFlags;
use super::shard::ShardFlags;
use super::slices::SliceFlags;
use super::workload::WorkloadFlags;

/// Options of `tokenmeter bench`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct BenchFlags {
    /// An OpenAI-compatible server: its base URL as SDKs take it (`https://api.example.com/v1`),
    /// its host alone (`http://127.0.0.1:8000`) or the endpoint's full URL; http or https.
    /// Without it, an embedded simulator is started on 127.0.0.1 (ephemeral port) and
    /// benchmarked over real HTTP.
    #[arg(long, visible_alias = "base-url", value_parser = parse::parse_boxed_url)]
    pub(crate) url: Option<Box<tokenmeter_bench::Url>>,

    /// The API: /v1/chat/completions or /v1/completions, joined onto --url unless it names an
    /// endpoint already (a base URL ending in /v1 gets /chat/completions).
    #[arg(long, default_value = DEFAULT_ENDPOINT)]
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
    pub(crate) load: LoadFlags,

    /// What is sent: synthetic prompts or a dataset, conversations, prefixes, cancellations.
    #[command(flatten)]
    pub(crate) workload: WorkloadFlags,

    /// Requests to send [default: 200, or no limit with --duration]. When sweeping, per rate
    /// [default: 10 s of arrivals, from 30 to 200 requests]; with a list of --concurrency
    /// levels, per level.
    #[arg(long, short = 'n', visible_aliases = ["num-prompts", "request-count"])]
    pub(crate) requests: Option<usize>,

    /// Input-token class edges for TTFT and E2E by class, e.g. 512,2048 (default: the run's
    /// quartiles).
    #[arg(long, value_parser = parse::parse_edges, value_name = "EDGES")]
    pub(crate) input_classes: Option<tokenmeter::report::LengthClasses>,

    /// Output-token class edges for E2E by class, e.g. 128,512 (default: the run's terciles).
    #[arg(long, value_parser = parse::parse_edges, value_name = "EDGES")]
    pub(crate) output_classes: Option<tokenmeter::report::LengthClasses>,

    /// Per-request objectives for goodput, e.g. ttft=1s,tpot=50ms,e2e=20s (`none`: good =
    /// succeeded).
    #[arg(long, default_value = "ttft=1s,tpot=50ms")]
    pub(crate) slo: tokenmeter_bench::Slo,

    /// End the run once the server is evidently not keeping up with a constant --rate (TTFT
    /// from the schedule diverging over three blocks of 8 requests while answers fall behind
    /// arrivals beyond Poisson noise): nothing more is sent, what is in flight finishes, and
    /// the verdict is printed. Off by default for a single run, on in --sweep
    /// (`--stop-on-saturation=false` turns it off there).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub(crate) stop_on_saturation: Option<bool>,

    /// End the run once more than this share of the last 20 requests failed, e.g. 0.5 (errors
    /// of any class; cancellations are not errors).
    #[arg(long, value_parser = parse::parse_share, value_name = "R")]
    pub(crate) max_error_rate: Option<f64>,

    /// From when TTFT and E2E are judged against --slo: `schedule` (when each request was
    /// due: its arrival, so a request that waited in the client for a slot is judged as its
    /// user felt it) or `send` (as `vllm bench serve` judges goodput).
    #[arg(long, value_enum, default_value = "schedule", value_name = "FROM")]
    pub(crate) slo_from: JudgedFrom,

    /// A full SLO spec (TOML, see `tokenmeter slo rules`): judge every request against it on the
    /// client side and print attainment, burn rates, alerts and the diagnosis at the end.
    #[arg(long, value_name = "FILE")]
    pub(crate) slo_spec: Option<PathBuf>,

    /// Deadline of each request, from its send to its last byte (e.g. 30s, 500ms).
    #[arg(long, default_value = "60s", value_parser = parse::parse_timeout)]
    pub(crate) timeout: Duration,

    /// The largest SSE event (or line) a response may send, e.g. 4MiB, 512KiB, 64MiB: a longer
    /// one ends the request as a `transport` error instead of being buffered.
    #[arg(long, default_value = "4MiB", value_parser = parse::parse_size, value_name = "SIZE")]
    pub(crate) max_event_size: usize,

    /// Headers, extra body, the length field and streaming of every request.
    #[command(flatten)]
    pub(crate) shape: ShapeFlags,

    /// vLLM's `--goodput`, percentiles and result format.
    #[command(flatten)]
    pub(crate) peer: PeerFlags,

    /// `--label` and `--metadata` of the `run` block.
    #[command(flatten)]
    pub(crate) run: RunFlags,

    /// `--slice` and `--server-metrics`: the run over time, the server's view beside it.
    #[command(flatten)]
    pub(crate) slices: SliceFlags,

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
    #[arg(long, value_delimiter = ',', value_parser = parse::parse_rate)]
    pub(crate) sweep_rates: Vec<f64>,

    /// The attainment a sweep rate must reach to count (DistServe uses 0.9).
    #[arg(long, default_value_t = DEFAULT_SWEEP_TARGET)]
    pub(crate) sweep_target: f64,

    /// The automatic sweep's resolution: it bisects until the lowest failing rate is within
    /// this fraction above the highest passing one (0.1: 10%).
    #[arg(long, default_value_t = DEFAULT_SWEEP_RESOLUTION, value_parser = parse::parse_resolution, value_name = "FRACTION")]
    pub(crate) sweep_resolution: f64,

    /// How long a sweep step's arrivals last when -n is not given (at least 30 requests): long
    /// enough for a steady state after its warm-up (the first tenth of its requests, not
    /// judged). A step whose attainment interval straddles the target runs as long again, at
    /// most twice.
    #[arg(long, default_value = "10s", value_parser = parse::parse_timeout, value_name = "DURATION")]
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
    #[arg(long, value_parser = parse::parse_fraction, value_name = "FRACTION")]
    pub(crate) fail_under: Option<f64>,

    /// Confidence level of the interval beside every figure, in percent (`95`, `99.5`,
    /// `95%`): each percentile's from the order statistics, ITL's by resampling requests,
    /// rates' (Wilson) and throughputs' (from the time slices).
    #[arg(long, value_parser = parse::parse_confidence, default_value = "95", value_name = "PERCENT")]
    pub(crate) confidence: tokenmeter::report::Confidence,

    /// Measure the client itself against a server streaming at known times (64 streams, 20 ms
    /// TTFT, 2 ms between tokens) and report its CPU cost and timing error.
    #[arg(long, hide = true)]
    pub(crate) self_check_client: bool,

    /// Find how much load this one process measures accurately: a ramp of streams (8 to
    /// 2,048, ×√2 a step; 64-token answers at about 440 tokens/s each, 4 per stream and 512
    /// at least, at a constant rate) against a server streaming at known times, stopped at
    /// the first step where the TTFT or ITL p50 is more than 1 ms off the server's or the
    /// dispatch lag p99 passes 1 ms, on that step and on its second run. Prints the last step
    /// within that line in tokens/s and streams, per core (one runtime worker per core the
    /// process may use: `taskset -c 0` gives one). The server runs in this process, on a
    /// thread of its own, unless --url names a --self-check-serve server.
    #[arg(long)]
    pub(crate) self_check_ceiling: bool,

    /// Run only the server of --self-check-ceiling on ADDR (e.g. 127.0.0.1:8765) until Ctrl-C
    /// or SIGTERM, for a --self-check-ceiling or another benchmark client in another process:
    /// POST /v1/chat/completions streams at known times (first token 20 ms after the request,
    /// then one every 2 ms); GET /tokenmeter/truth answers, as JSON, the TTFT and ITL p50 it
    /// wrote since it was last asked.
    #[arg(long, value_name = "ADDR")]
    pub(crate) self_check_serve: Option<std::net::SocketAddr>,

    /// `--shard`, `--shards`, `--start-at`: one run split over processes.
    #[command(flatten)]
    pub(crate) shard: ShardFlags,

    /// Run the same plan N times, one after the other (the same seed: the same prompts and
    /// arrival times), and report each key figure across the runs: the pooled value of all
    /// runs' requests and the mean of the runs' own values, each with its 95% interval.
    /// --json holds every run's complete report, --html the table with each figure drawn.
    /// Not with --sweep, --shard, --slo-spec or --result-format vllm; --trace writes one file
    /// per run (trace.run1.jsonl, …).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) repeat: u32,

    /// The pause between repeated runs (--repeat), e.g. 30s, for the server to settle.
    #[arg(long, default_value = "0s", value_parser = parse::parse_duration_arg, value_name = "DURATION")]
    pub(crate) cooldown: Duration,

    /// `tokenmeter bench merge`.
    #[command(subcommand)]
    pub(crate) command: Option<BenchCommand>,
}

impl BenchFlags {
    /// The library's settings these flags give (`command` aside).
    pub(crate) fn settings(self) -> BenchArgs {
        let mut args = BenchArgs::default();
        args.url = self.url;
        args.endpoint = self.endpoint;
        args.model = self.model;
        args.api_key_env = self.api_key_env;
        args.load = self.load.settings();
        args.workload = self.workload.settings();
        args.requests = self.requests;
        args.input_classes = self.input_classes;
        args.output_classes = self.output_classes;
        args.slo = self.slo;
        args.stop_on_saturation = self.stop_on_saturation;
        args.max_error_rate = self.max_error_rate;
        args.slo_from = self.slo_from.into();
        args.slo_spec = self.slo_spec;
        args.timeout = self.timeout;
        args.max_event_size = self.max_event_size;
        args.shape = self.shape.settings();
        args.peer = self.peer.settings();
        args.run = self.run.settings();
        args.slices = self.slices.settings();
        args.ignore_eos = self.ignore_eos;
        args.follow_redirects = self.follow_redirects;
        args.ca_cert = self.ca_cert;
        args.insecure = self.insecure;
        args.seed = self.seed;
        args.json = self.json;
        args.trace = self.trace;
        args.html = self.html;
        args.sweep = self.sweep;
        args.sweep_rates = self.sweep_rates;
        args.sweep_target = self.sweep_target;
        args.sweep_resolution = self.sweep_resolution;
        args.sweep_step_duration = self.sweep_step_duration;
        args.gpus = self.gpus;
        args.no_progress = self.no_progress;
        args.no_preflight = self.no_preflight;
        args.fail_under = self.fail_under;
        args.confidence = self.confidence;
        args.self_check_client = self.self_check_client;
        args.self_check_ceiling = self.self_check_ceiling;
        args.self_check_serve = self.self_check_serve;
        args.shard = self.shard.settings();
        args.repeat = self.repeat as usize;
        args.cooldown = self.cooldown;
        args
    }
}
