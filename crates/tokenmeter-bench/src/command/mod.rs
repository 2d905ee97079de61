//! What `tokenmeter bench` does with its settings: checks them and the output paths, takes
//! Ctrl-C and SIGTERM, runs against `--url` or the built-in simulated server, writes every
//! output, warns, and turns the run into the command's verdict (its exit code, [`exit`]).
//!
//! [`exit`]: crate::exit_code

mod repeat;
mod sweep;

use std::path::Path;

use tokenmeter_slo::batching::BatchAnalysis;

use crate::api_key::ApiKey;
use crate::args::BenchArgs;
use crate::counts::Counts;
use crate::exit::{self, Exit};
use crate::interrupt::{self, Interrupt};
use crate::packed::Packed;
use crate::pipeline::{measure, prepare};
use crate::reqs::Reqs;
use crate::validate::Validated;
use crate::{discover, embedded, oddities, output, selfcheck, shard, summary};

/// Runs the benchmark as `tokenmeter bench` does: prints the table, writes `--json`,
/// `--trace` and `--html`, and returns an error whose exit code ([`exit_code`](crate::exit_code))
/// says why the command failed: a usage error, a run that could not be made, an objective
/// missed, or an interruption.
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
    let checks = [
        args.self_check_client,
        args.self_check_ceiling,
        args.self_check_serve.is_some(),
    ];
    if checks.iter().filter(|on| **on).count() > 1 {
        return Err(exit::classify(
            anyhow::anyhow!(
                "--self-check-client, --self-check-ceiling and --self-check-serve each run on \
                 their own; give one of them"
            ),
            Exit::Usage,
        ));
    }
    if args.self_check_client {
        return selfcheck::run(args.json.clone()).await;
    }
    if let Some(addr) = args.self_check_serve {
        let served = selfcheck::serve(addr).await;
        return served.map_err(|e| exit::classify(e, Exit::CouldNotRun));
    }
    if args.self_check_ceiling {
        let url = args.url.as_deref().cloned();
        let ceiling = selfcheck::run_ceiling(url, args.json.clone()).await;
        return ceiling.map_err(|e| exit::classify(e, Exit::CouldNotRun));
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
    let traces = repeat::trace_paths(&args);
    let mut outputs = vec![(args.json.as_deref(), "--json")];
    outputs.extend(traces.iter().map(|path| (Some(path.as_path()), "--trace")));
    outputs.push((args.html.as_deref(), "--html"));
    output::check_paths(&outputs, &inputs).map_err(|e| exit::classify(e, Exit::Usage))?;
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
async fn bench(
    args: &BenchArgs,
    plan: &Validated,
    base: reqwest::Url,
    key: Option<ApiKey>,
    default_model: Option<&str>,
    server_batching: Option<&BatchAnalysis>,
    stop: &Interrupt,
) -> anyhow::Result<()> {
    if args.repeat > 1 {
        let done =
            repeat::bench(args, plan, &base, key, default_model, server_batching, stop).await?;
        return settle(args, done.traces, done.written, done.verdict, stop);
    }
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
            let swept = crate::pipeline::sweep(args, plan, rates, prepared, stop, true).await;
            verdict = Ok(());
            sweep::write(args, swept, stop)?
        }
    };
    settle(args, done.measured, written, verdict, stop)
}

/// After the runs: the trace's end, the warnings of every request, an interrupt, a run with
/// no success, then the verdict.
fn settle(
    args: &BenchArgs,
    traces: Packed,
    written: anyhow::Result<()>,
    verdict: anyhow::Result<()>,
    stop: &Interrupt,
) -> anyhow::Result<()> {
    written?;
    let warnings = Counts::of(&traces, &args.slo).warnings();
    let odd = oddities::warnings(traces.iter().map(|m| m.rare.oddities));
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
    if !traces.iter().any(|m| m.succeeded()) {
        return Err(Exit::CouldNotRun.error(nothing_succeeded((&traces).into())));
    }
    verdict
}

/// Why a run has no successful request, for the exit-3 message: the first error when there is
/// one, else that every request sent was cancelled (by `--cancel-fraction` or an interrupt),
/// else that none was sent.
fn nothing_succeeded(traces: Reqs<'_>) -> String {
    if let Some(first) = traces.iter().find_map(|t| t.rare.error.clone()) {
        return format!(
            "no request succeeded; the first error was: {first} — check --url, --endpoint, \
             --model and the API key variable (--api-key-env)"
        );
    }
    if traces.is_empty() {
        return "no request succeeded: no request was sent — check --url, --endpoint and \
                --num-prompts"
            .to_owned();
    }
    let cancelled = traces
        .iter()
        .filter(|t| t.outcome() == tokenmeter::Outcome::Cancelled)
        .count();
    format!(
        "no request succeeded: {cancelled} of the {} requests sent were cancelled and none \
         answered in full — a run needs at least one request that is not cancelled (lower \
         --cancel-fraction)",
        traces.len()
    )
}
