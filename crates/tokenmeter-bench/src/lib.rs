//! The benchmark of `tokenmeter bench` as a library: load against any OpenAI-compatible
//! endpoint (or the built-in simulated server), measured on the client side with tokenmeter
//! itself, summarised with the formulas of `vllm bench serve`.
//!
//! # A load test as code
//!
//! Describe a run with a [`Plan`], run it, and assert on the finished [`Run`]: here against
//! the simulated server started in-process (`tokenmeter-server`), as a test of your own would
//! against your server's URL.
//!
//! ```
//! use tokenmeter_bench::Plan;
//! use tokenmeter_server::{Config, Server};
//!
//! # #[tokio::main]
//! # async fn main() -> anyhow::Result<()> {
//! let server = Server::start(Config::default(), "127.0.0.1:0".parse()?).await?;
//! let run = Plan::builder()
//!     .url(&server.url())
//!     .requests(10)
//!     .rate(50.0)
//!     .output_tokens(8)
//!     .slo("ttft=2s,tpot=200ms")
//!     .build()?
//!     .run()
//!     .await?;
//! server.shutdown().await?;
//! assert_eq!(run.successful(), 10);
//! assert!(run.ttft().p95 < 2.0);
//! assert_eq!(run.attainment(), 1.0);
//! # Ok(())
//! # }
//! ```
//!
//! Every statistic says what it is: latencies are over successful requests, measured from
//! each request's send (the time it waited in the client is [`Run::client_queue`]); goodput
//! counts the requests that met every objective of the plan.
//!
//! # Inside
//!
//! The data flows one way: settings → validated plan → requests sent and recorded by the core
//! → a finished run → its outputs. The modules:
//!
//! | Module | Concept |
//! |---|---|
//! | `args` | the settings and their defaults |
//! | `validate` | the settings checked together into a validated plan |
//! | `checked` | each setting's value checked by its flag's own rule (settings made in code) |
//! | [`parse`] | the parsers of the settings' text forms |
//! | `load_args` | the load flags and the stages they make |
//! | `workload_args` | the workload flags and the source they make |
//! | `url` | `--url` as users write it (host, base URL, endpoint) joined with `--endpoint` |
//! | `tls` | HTTPS: rustls with ring, system roots, `--ca-cert`, `--insecure` |
//! | `slo` | `--slo ttft=1s,tpot=50ms,e2e=20s`, compiled into a `tokenmeter-slo` class that judges goodput |
//! | `workload` | synthetic prompts, JSONL datasets, arrival times |
//! | `client` | one streaming request: reqwest, SSE parsing, tokenmeter metering, outcomes |
//! | `request_shape` | `--header`, `--extra-body`, `--max-tokens-field`, `--no-stream`, `--no-stream-options` |
//! | `records` | the sink that hands each request's core record back to its client |
//! | `counts` | where the token counts come from, finish reasons, lengths not honoured |
//! | `measured` | one request: the core's record and what only the client knows |
//! | `oddities` | events skipped and chunks read leniently: kept, counted, warned about |
//! | `clock` | the shared clock of the client, the trace and the core |
//! | `run_block` | the numeric `run` block of `--json`: start, version, command line, load, labels |
//! | `seeds` | one generator per purpose drawn from `--seed` |
//! | `pipeline` | prepare (model, client, test request, trace), measure one run, sweep: records, nothing printed |
//! | `command` | what `tokenmeter bench` does: outputs, signals, exit verdicts ([`run`]) |
//! | `runner` | releasing requests open-loop or at a fixed concurrency, each with its due time |
//! | `saturation` | stopping a run whose server is evidently not keeping up, or an error storm |
//! | `phases` | which phase grew through a run: client queue, server queue, prefill, network, decode |
//! | `load_check` | offered against achieved: rates, slot wait, dispatch lag, CPU, who fell behind |
//! | `collect` | each request kept as it ends: its trace line written, a fixed size in memory |
//! | `gaps` | every request's inter-token gaps in one buffer, 4 bytes a gap; their sorted walk |
//! | `sanitize` | the one path of server strings to any output: key redacted, controls stripped |
//! | `trace` | the per-request raw timestamps (`--trace`), written from the records |
//! | `summary` | the `vllm bench serve` statistics of the core's records |
//! | `intervals` | how sure is each figure: the confidence interval of every figure of the summary |
//! | `peer` | vLLM's and AIPerf's `--goodput`, `--percentile-metrics`, `--metric-percentiles`, `--result-format` |
//! | `output` | table, `--json`, `--html` with charts; a single run's report (`output::single`); the chosen percentiles (`output::percentiles`) |
//! | `preflight` | the test request before a run, that fails fast with the server's message |
//! | `exit` | the exit codes: objective missed, usage, could not run, interrupted |
//! | `interrupt` | Ctrl-C and SIGTERM: drain, then cancel; what completed is written |
//! | `samples` | a few error messages per class |
//! | `repeat` | `--repeat N`: one plan run N times, each figure across the runs ([`Repeated`]) |
//! | `sweep` | increasing rates and the capacity at the attainment target |
//! | `swept` | a finished sweep as a library caller reads it ([`Sweep`]) |
//! | `selfcheck` | the client's own cost and timing error (`--self-check-client`), its accurate ceiling (`--self-check-ceiling`) and the server both use (`--self-check-serve`) |
//! | `slices` | the run cut into time slices (`--slice`), the server's view beside each |
//! | `server_view` | scraping the server's `/metrics` (`--server-metrics`): vLLM's names and ours |
//! | `shard` | one run split over processes: `--shard I/N`, `--start-at` |
//! | `merge` | `tokenmeter bench merge`: the summary of the union of several traces |

mod api;
mod api_key;
mod args;
mod checked;
mod client;
mod clock;
mod collect;
mod command;
pub mod compare;
pub mod console;
mod counts;
mod discover;
mod embedded;
mod exit;
mod finished;
mod format;
mod gaps;
mod interrupt;
mod intervals;
mod kept_record;
mod load;
mod load_args;
mod load_check;
mod measured;
mod merge;
mod oddities;
mod output;
mod overrides;
mod packed;
pub mod parse;
mod peer;
mod phases;
mod pipeline;
mod plan;
mod preflight;
mod progress;
mod rare;
mod records;
mod redirect;
mod refusal;
mod repeat;
mod reqs;
mod request_shape;
mod resample;
mod run_block;
mod runner;
mod samples;
mod sanitize;
mod saturation;
mod schedule;
mod seeds;
mod selfcheck;
mod server_view;
mod shard;
mod slices;
mod slo;
mod slo_class;
mod summary;
mod sweep;
mod swept;
mod tls;
mod trace;
mod url;
mod usage;
mod validate;
mod varint;
mod workload;
mod workload_args;

#[cfg(test)]
mod tests;

pub use args::{
    BenchArgs, DEFAULT_ENDPOINT, DEFAULT_KEY_ENV, DEFAULT_MAX_EVENT_SIZE, DEFAULT_SLO,
    DEFAULT_SWEEP_RESOLUTION, DEFAULT_SWEEP_STEP_DURATION, DEFAULT_SWEEP_TARGET, DEFAULT_TIMEOUT,
};
pub use command::run;
pub use exit::code as exit_code;
pub use finished::Run;
pub use intervals::RunIntervals;
pub use load_args::{DEFAULT_BURSTINESS, DEFAULT_REQUESTS, LoadArgs};
pub use merge::{MergeArgs, run as merge};
pub use peer::{PeerArgs, PercentileMetric, ResultFormat};
pub use plan::{Plan, PlanBuilder};
pub use repeat::{AcrossRuns, Repeated};
pub use request_shape::{ExtraBody, HeaderArg, MaxTokensField, ShapeArgs};
/// The URL type of [`BenchArgs::url`] and [`MetricsTarget::Url`] (`reqwest`'s).
pub use reqwest::Url;
pub use run_block::RunArgs;
pub use schedule::StageSpec;
pub use shard::{Shard, ShardArgs, StartAt};
pub use slices::args::{MetricsTarget, SliceArgs};
pub use slo::{JudgedFrom, Slo, SloError};
pub use slo_class::{MAX_SLO_CLASSES, SloClassArg};
pub use swept::{Sweep, SweepRates, SweepStep};
pub use workload::{
    ArrivalKind, CancelAt, Curve, DatasetFormat, LengthDist, LengthError, SharedPrefix,
};
pub use workload_args::{DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, WorkloadArgs};

// The README's example runs with the doc tests, so the page crates.io shows stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
