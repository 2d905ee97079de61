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
//! | `args` | the settings, their defaults, their validation into a plan |
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
//! | `runner` | releasing requests open-loop or at a fixed concurrency, each with its due time |
//! | `saturation` | stopping a run whose server is evidently not keeping up, or an error storm |
//! | `phases` | which phase grew through a run: client queue, server queue, prefill, network, decode |
//! | `load_check` | offered against achieved: rates, slot wait, dispatch lag, CPU, who fell behind |
//! | `collect` | each request kept as it ends: its trace line written, a fixed size in memory |
//! | `gaps` | every request's inter-token gaps in one buffer, 4 bytes a gap; their sorted walk |
//! | `sanitize` | the one path of server strings to any output: key redacted, controls stripped |
//! | `trace` | the per-request raw timestamps (`--trace`), written from the records |
//! | `summary` | the `vllm bench serve` statistics of the core's records |
//! | `peer` | vLLM's and AIPerf's `--goodput`, `--percentile-metrics`, `--metric-percentiles`, `--result-format` |
//! | `percentiles` | the chosen percentiles in the table, `--json` and `--html` |
//! | `output` | table, `--json`, `--html` with charts; a single run's report (`output::single`) |
//! | `preflight` | the test request before a run, that fails fast with the server's message |
//! | `exit` | the exit codes: objective missed, usage, could not run, interrupted |
//! | `interrupt` | Ctrl-C and SIGTERM: drain, then cancel; what completed is written |
//! | `samples` | a few error messages per class |
//! | `sweep` | increasing rates and the capacity at the attainment target |
//! | `selfcheck` | the client's own cost and timing error (`--self-check-client`) |
//! | `slices` | the run cut into time slices (`--slice`), the server's view beside each |
//! | `server_view` | scraping the server's `/metrics` (`--server-metrics`): vLLM's names and ours |
//! | `shard` | one run split over processes: `--shard I/N`, `--start-at` |
//! | `merge` | `tokenmeter bench merge`: the summary of the union of several traces |

mod api;
mod api_key;
mod args;
mod client;
mod clock;
mod collect;
pub mod console;
mod counts;
mod discover;
mod embedded;
mod exit;
mod finished;
mod format;
mod gaps;
mod interrupt;
mod load;
mod load_args;
mod load_check;
mod measured;
mod merge;
mod oddities;
mod output;
mod overrides;
pub mod parse;
mod peer;
mod percentiles;
mod phases;
mod plan;
mod preflight;
mod progress;
mod records;
mod redirect;
mod refusal;
mod request_shape;
mod run_block;
mod runner;
mod samples;
mod sanitize;
mod saturation;
mod schedule;
mod selfcheck;
mod server_view;
mod shard;
mod slices;
mod slo;
mod summary;
mod sweep;
mod tls;
mod trace;
mod url;
mod workload;
mod workload_args;

#[cfg(test)]
mod tests;

pub use args::{
    BenchArgs, DEFAULT_ENDPOINT, DEFAULT_KEY_ENV, DEFAULT_MAX_EVENT_SIZE, DEFAULT_REQUESTS,
    DEFAULT_SLO, DEFAULT_SWEEP_RESOLUTION, DEFAULT_SWEEP_STEP_DURATION, DEFAULT_SWEEP_TARGET,
    DEFAULT_TIMEOUT,
};
pub use exit::code as exit_code;
pub use finished::Run;
pub use load_args::{DEFAULT_BURSTINESS, LoadArgs};
pub use merge::{MergeArgs, run as merge};
pub use peer::{PeerArgs, PercentileMetric, ResultFormat};
pub use plan::{Plan, PlanBuilder};
pub use request_shape::{ExtraBody, HeaderArg, MaxTokensField, ShapeArgs};
/// The URL type of [`BenchArgs::url`] and [`MetricsTarget::Url`] (`reqwest`'s).
pub use reqwest::Url;
pub use run_block::RunArgs;
pub use schedule::StageSpec;
pub use shard::{Shard, ShardArgs, StartAt};
pub use slices::args::{MetricsTarget, SliceArgs};
pub use slo::{JudgedFrom, Slo, SloError};
pub use workload::{
    ArrivalKind, CancelAt, Curve, DatasetFormat, LengthDist, LengthError, SharedPrefix,
};
pub use workload_args::{DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, WorkloadArgs};

use std::path::Path;
use std::sync::Arc;

use rand::SeedableRng as _;
use rand::rngs::StdRng;
use serde_json::json;
use tokenmeter::Meter;
use tokenmeter_slo::SloMonitor;
use tokenmeter_slo::batching::BatchAnalysis;

use crate::args::Plan as Validated;
use crate::client::{ApiKey, Client, Target};
use crate::clock::BenchClock;
use crate::counts::Counts;
use crate::exit::Exit;
use crate::interrupt::Interrupt;
use crate::measured::Measured;
use crate::output::{RunInfo, html, table};
use crate::progress::Progress;
use crate::schedule::Stage;
use crate::slo::read_spec;
use crate::url::{display_url, endpoint_url};

/// Runs the benchmark as `tokenmeter bench` does: validates `args`, runs against
/// [`BenchArgs::url`] (or the built-in simulated server when it is `None`), shows the report
/// on stdout and writes the `--json`, `--html` and `--trace` files the settings name. Ctrl-C
/// and SIGTERM stop it cleanly: what completed is written, marked as interrupted.
///
/// # Errors
/// Settings that cannot run, a server that cannot be reached, a run with no successful
/// request, an objective missed (`fail_under`) or an interruption: each classified for
/// [`exit_code`].
///
/// ```
/// use tokenmeter_bench::{BenchArgs, exit_code};
///
/// # #[tokio::main]
/// # async fn main() {
/// // Settings that cannot run are refused before anything is sent, with exit code 2.
/// let mut args = BenchArgs::default();
/// args.requests = Some(0);
/// let error = tokenmeter_bench::run(args).await.unwrap_err();
/// assert_eq!(exit_code(&error), 2, "{error:#}");
/// # }
/// ```
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let args = args
        .resolve_peers()
        .map_err(|e| exit::classify(e, Exit::Usage))?;
    let plan = args.plan().map_err(|e| exit::classify(e, Exit::Usage))?;
    shard::resolve(&args.shard, plan.sweep.is_some())
        .map_err(|e| exit::classify(e, Exit::Usage))?;
    if args.self_check_client {
        return selfcheck::run(args.json.clone()).await;
    }
    let inputs: Vec<(&Path, &str)> = [
        (args.workload.dataset.as_deref(), "the --dataset file"),
        (args.workload.tokenizer.as_deref(), "the --tokenizer file"),
        (args.slo_spec.as_deref(), "the --slo-spec file"),
        (args.ca_cert.as_deref(), "the --ca-cert file"),
    ]
    .into_iter()
    .filter_map(|(path, flag)| path.map(|p| (p, flag)))
    .collect();
    output::check_paths(
        &[
            (args.json.as_deref(), "--json"),
            (args.trace.as_deref(), "--trace"),
            (args.html.as_deref(), "--html"),
        ],
        &inputs,
    )
    .map_err(|e| exit::classify(e, Exit::Usage))?;
    let key = args
        .api_key()
        .map_err(|e| exit::classify(e, Exit::Usage))?
        .map(ApiKey::new);
    if plan.tls.insecure() {
        crate::console::warn(
            "--insecure: server certificates are not verified; anyone on the path can read and \
             change the traffic, API key included (test servers only)",
        );
    }
    // From here on, Ctrl-C and SIGTERM are the bench's: before the run they stop it cleanly.
    let stop = Interrupt::on_signals();
    match plan.url.clone() {
        Some(url) => {
            let reachable = discover::reachable(&url, &plan.tls);
            interrupt::before_the_run(&stop, "the connection check", reachable).await?;
            bench(&args, &plan, url, key, None, None, &stop).await
        }
        None => {
            let server = embedded::start().await?;
            let url = reqwest::Url::parse(&server.url())?;
            let batching = server.slo().batching.clone();
            let result = bench(
                &args,
                &plan,
                url,
                key,
                Some(server.model()),
                Some(&batching),
                &stop,
            )
            .await;
            if result.is_ok() {
                output::show(
                    args.stdout_taken(),
                    &format!("\nserver side, {}", server.slo().text()),
                );
            }
            server.shutdown().await?;
            result
        }
    }
}

/// Runs against `base` and writes every output.
pub(crate) async fn bench(
    args: &BenchArgs,
    plan: &Validated,
    base: reqwest::Url,
    key: Option<ApiKey>,
    default_model: Option<&str>,
    server_batching: Option<&BatchAnalysis>,
    stop: &Interrupt,
) -> anyhow::Result<()> {
    let prepared = prepare(args, plan, &base, key, default_model, server_batching, stop).await?;
    let verdict;
    let (done, written) = match &plan.sweep {
        None => {
            let (run, written) =
                measure(args, plan, prepared, &base, server_batching, stop).await?;
            verdict = run.report()?;
            (run.into_collected(), written)
        }
        Some(rates) => {
            let Prepared {
                client,
                mut info,
                mut rng,
                mut collector,
                ..
            } = prepared;
            let quiet = args.stdout_taken();
            let sweep = sweep::run(args, plan, rates, client, &mut rng, stop, &mut collector).await;
            let done = collector.done();
            let traces = &done.measured;
            info.load = "sweep".to_owned();
            output::show(quiet, &table::render_sweep(&info, &sweep));
            let counts = Counts::of(traces, &args.slo);
            output::show(quiet, &counts.render());
            let samples = samples::error_samples(traces);
            output::show(quiet, &samples::render(&samples));
            let interrupted = stop.interrupted();
            if interrupted {
                output::show(quiet, "\ninterrupted: the sweep stopped early\n");
            }
            if let Some(path) = &args.json {
                let value = json!({"run": info, "sweep": sweep, "counts": counts, "interrupted": interrupted});
                output::write_json(path, &value)?;
            }
            if let Some(path) = &args.html {
                let report = html::render_sweep(&info, &sweep, traces, &done.gaps)
                    .map(|h| counts::insert_html(h, &samples::html(&samples, html::esc)))
                    .map(|h| counts::insert_html(h, &counts.html(html::esc)));
                let n = traces.len();
                let report = report.map(|h| match interrupted {
                    true => interrupt::mark_html(h, n, n),
                    false => h,
                });
                output::write_html(path, report)?;
            }
            verdict = Ok(());
            collector.finish()
        }
    };
    written?;
    let traces = done.measured;
    let warnings = Counts::of(&traces, &args.slo).warnings();
    let odd = oddities::warnings(&traces);
    for warning in summary::usage_warnings(&traces)
        .into_iter()
        .chain(odd)
        .chain(warnings)
    {
        crate::console::warn(warning);
    }
    if stop.interrupted() {
        return Err(Exit::Interrupted
            .error("interrupted; what completed was written, marked as interrupted"));
    }
    if !traces.iter().any(Measured::succeeded) {
        let first = traces
            .iter()
            .find_map(|t| t.error.as_ref().map(ToString::to_string))
            .unwrap_or_else(|| "no request was sent".to_owned());
        return Err(Exit::CouldNotRun.error(format!(
            "no request succeeded; the first error was: {first} — check --url, --endpoint, \
             --model and the API key variable (--api-key-env)"
        )));
    }
    verdict
}

/// What every run needs before its first measured request: the client, the model, the
/// description, the test request done, the trace file open.
pub(crate) struct Prepared {
    client: Arc<Client>,
    api: client::Api,
    info: RunInfo,
    monitor: Option<SloMonitor>,
    shard: Option<shard::Shard>,
    rng: StdRng,
    collector: collect::Collector,
}

/// Finds the model, builds the client, sends the test request and opens the trace.
pub(crate) async fn prepare(
    args: &BenchArgs,
    plan: &Validated,
    base: &reqwest::Url,
    key: Option<ApiKey>,
    default_model: Option<&str>,
    server_batching: Option<&BatchAnalysis>,
    stop: &Interrupt,
) -> anyhow::Result<Prepared> {
    let (url, api) = endpoint_url(base, &plan.endpoint);
    let shape = args.shape.shape()?;
    let model = match (&args.model, default_model, shape.sent_model()) {
        (Some(model), _, _) => model.clone(),
        (None, Some(model), _) => model.to_owned(),
        // The model --extra-body sends: no need to ask the server for one.
        (None, None, Some(model)) => model.to_owned(),
        (None, None, None) => {
            let found =
                discover::model(&url, key.as_ref(), &shape, args.follow_redirects, &plan.tls);
            interrupt::before_the_run(stop, "model discovery", found).await?
        }
    };
    let replaced = overrides::overrides(&shape, &model, args.ignore_eos);
    for replaced in &replaced {
        crate::console::warn(replaced.warning());
    }
    // What is sent is what every report names.
    let model = shape.sent_model().map_or(model, str::to_owned);
    let shard = args.shard.shard()?;
    let clock = BenchClock::start();
    let run_start = shard::unix_now();
    let monitor = match &args.slo_spec {
        Some(path) => Some(SloMonitor::new(read_spec(path)?, clock.meter_clock())),
        None => None,
    };
    let mut meter = Meter::builder();
    if let Some(monitor) = &monitor {
        meter = meter.sink(monitor.clone());
    }
    let target = Target {
        url,
        api,
        model: model.clone(),
        ignore_eos: args.ignore_eos,
        timeout: args.timeout,
        follow_redirects: args.follow_redirects,
        max_event_size: args.max_event_size,
        tls: plan.tls.clone(),
        shape,
        tokenizer: plan.tokenizer.clone(),
    };
    let client = Arc::new(Client::new(target, key, clock, meter)?);
    let mut info = RunInfo {
        url: display_url(&client.target().url),
        model: client.sanitizer().clean(&model),
        load: match plan.stages.as_slice() {
            [one] => one.to_string(),
            stages => format!("{} stages (see by stage)", stages.len()),
        },
        workload: match overrides::header(&replaced) {
            Some(sent) => format!("{} · {sent}", plan.source.describe()),
            None => plan.source.describe(),
        },
        seed: args.seed,
        numbers: run_block::RunNumbers::now(
            &plan.load,
            args.requests(),
            &args.run,
            client.sanitizer(),
        ),
    };
    info.numbers.extra_body_overrides = overrides::block(&replaced);
    // Not for the embedded simulator: its server-side report counts the run's requests only.
    if !args.no_preflight && server_batching.is_none() {
        // Its own generator: the run's prompts and arrivals do not depend on the test.
        let mut test_rng = StdRng::seed_from_u64(args.seed ^ PREFLIGHT_SEED);
        if let Some(mut spec) = workload::specs(&plan.source, 1, &mut test_rng).pop() {
            spec.max_tokens = spec.max_tokens.min(PREFLIGHT_MAX_TOKENS);
            let check = preflight::check(&client, &spec, !args.shape.no_stream);
            interrupt::before_the_run(stop, "the test request", check).await?;
        }
    }
    // Arrivals draw from their own generator: the prompts of a seed do not depend on the load.
    let rng = StdRng::seed_from_u64(args.seed ^ ARRIVAL_SEED);
    let trace_file = match &args.trace {
        Some(path) => Some(trace::TraceWriter::create(
            path,
            trace::TraceRun {
                run_start_unix_ns: Some(trace::ns(run_start)),
                seed: Some(args.seed),
                shard: shard.map(|s| s.to_string()),
            },
        )?),
        None => None,
    };
    Ok(Prepared {
        client,
        api,
        info,
        monitor,
        shard,
        rng,
        collector: collect::Collector::new(trace_file),
    })
}

/// Runs a single run (not a sweep) to its end: warm-up, the measured requests, the slices.
/// Returns the finished run and the trace file's end (an error if a line was not written).
pub(crate) async fn measure(
    args: &BenchArgs,
    plan: &Validated,
    prepared: Prepared,
    base: &reqwest::Url,
    server_batching: Option<&BatchAnalysis>,
    stop: &Interrupt,
) -> anyhow::Result<(Run, anyhow::Result<()>)> {
    let Prepared {
        client,
        api,
        info,
        monitor,
        shard,
        mut rng,
        mut collector,
    } = prepared;
    if args.load.warmup > 0 {
        warm_up(args, plan, client.clone(), stop).await;
    }
    let mut cancel_rng = StdRng::seed_from_u64(args.seed ^ CANCEL_SEED);
    let injection = args.workload.injection();
    let specs = workload::Specs::new(
        &plan.source,
        StdRng::seed_from_u64(args.seed),
        args.workload.think_time,
    )
    .map(move |mut spec| {
        if let Some(injection) = &injection {
            spec.cancel = injection.pick(&mut cancel_rng);
            for turn in &mut spec.next {
                turn.cancel = injection.pick(&mut cancel_rng);
            }
        }
        spec
    })
    .enumerate()
    .map(move |(k, mut spec)| {
        spec.skip = shard.is_some_and(|s| !s.owns(k as u64));
        spec
    });
    if let Some(at) = args.shard.start_at {
        interrupt::before_the_run(stop, "the wait for --start-at", at.wait()).await?;
    }
    let planned: Option<usize> = plan.stages.iter().map(Stage::planned).sum();
    let label = if plan.stages.len() > 1 {
        "stages"
    } else {
        "bench"
    };
    let mut progress = Progress::new(planned.unwrap_or(0) as u64, label, !args.no_progress);
    let embedded = server_batching.is_some();
    let view = slices::View::start(&args.slices, &client, base, embedded).await?;
    let cpu_before = selfcheck::process_cpu_time();
    let wall = std::time::Instant::now();
    let mut watch = saturation::Watch::new(
        args.stop_on_saturation
            .unwrap_or(false)
            .then(|| constant_rate(&plan.stages))
            .flatten(),
        args.max_error_rate,
    );
    runner::run_stages(
        client,
        specs,
        &plan.stages,
        &mut rng,
        &mut progress,
        stop,
        &mut collector,
        &mut watch,
    )
    .await;
    let client_cpu = selfcheck::process_cpu_time()
        .zip(cpu_before)
        .map(|(after, before)| (after.saturating_sub(before), wall.elapsed()));
    progress.done();
    let (done, written) = collector.finish();
    let slices = view.finish(&done.measured, &done.gaps, &args.slo).await;
    let planned = planned.unwrap_or(done.measured.len());
    let interrupted = stop.interrupted().then_some((done.measured.len(), planned));
    let run = Run::new(finished::Parts {
        args: args.clone(),
        stages: plan.stages.clone(),
        info,
        api,
        collected: done,
        slices,
        monitor,
        server_batching: server_batching.cloned(),
        interrupted,
        planned,
        client_cpu,
        stopped_early: watch.stopped().cloned(),
    });
    Ok((run, written))
}

/// Sends `--warmup` requests at the first stage's load and forgets them: prompts of their own
/// (the run's prompts do not depend on the warm-up), nothing recorded.
async fn warm_up(args: &BenchArgs, plan: &Validated, client: Arc<Client>, stop: &Interrupt) {
    let mut rng = StdRng::seed_from_u64(args.seed ^ WARMUP_SEED);
    let specs = workload::specs(&plan.source, args.load.warmup, &mut rng);
    let mut progress = Progress::new(args.load.warmup as u64, "warm-up", !args.no_progress);
    let stage = Stage::requests(plan.stages[0].load, args.load.warmup);
    let mut done = collect::Collector::new(None);
    runner::run_stages(
        client,
        specs.into_iter(),
        &[stage],
        &mut rng,
        &mut progress,
        stop,
        &mut done,
        &mut saturation::Watch::off(),
    )
    .await;
    progress.done();
    let done = done.finish().0.measured;
    let ok = done.iter().filter(|m| m.succeeded()).count();
    crate::console::err(&format!(
        "warm-up: {} requests sent ({ok} succeeded), left out of the results\n",
        done.len()
    ));
}

/// The rate of a run of one constant open-loop stage (no ramp, finite): the one whose
/// saturation can be judged.
pub(crate) fn constant_rate(stages: &[Stage]) -> Option<f64> {
    match stages {
        [one] => match one.load {
            runner::Load::Rate {
                rate, ramp: None, ..
            } if rate.is_finite() => Some(rate),
            _ => None,
        },
        _ => None,
    }
}

/// Mixed into `--seed` for the choice of injected cancellations.
const CANCEL_SEED: u64 = 0xca_9ce1;

/// Mixed into `--seed` for the arrivals.
const ARRIVAL_SEED: u64 = 0xa771;

/// Mixed into `--seed` for the warm-up's prompts and arrivals.
const WARMUP_SEED: u64 = 0x3a7e;

/// Mixed into `--seed` for the test request's prompt.
const PREFLIGHT_SEED: u64 = 0x7e57;

/// The test request asks for at most this many tokens.
const PREFLIGHT_MAX_TOKENS: u64 = 4;

// The README's example runs with the doc tests, so the page crates.io shows stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
