//! `tokenmeter bench --repeat N`: the runs, one line each as it ends, then the "across N
//! runs" table, `--json` with every run's report, and the verdict of `--fail-under` on the
//! pooled attainment.

use std::path::PathBuf;

use tokenmeter_slo::batching::BatchAnalysis;

use crate::api_key::ApiKey;
use crate::args::BenchArgs;
use crate::exit;
use crate::interrupt::Interrupt;
use crate::output;
use crate::packed::Packed;
use crate::pipeline::{Target, prepare, repeat, run_args, trace_path};
use crate::repeat::Repeated;
use crate::validate::Validated;

/// The trace files the command writes: one per run with `--repeat` N ≥ 2
/// (`trace.run1.jsonl`, …), else `--trace`'s own; checked with the other outputs before the
/// first request.
pub(super) fn trace_paths(args: &BenchArgs) -> Vec<PathBuf> {
    match (&args.trace, args.repeat) {
        (None, _) => Vec::new(),
        (Some(path), 0 | 1) => vec![path.clone()],
        (Some(path), n) => (1..=n).map(|k| trace_path(path, k)).collect(),
    }
}

/// What the repeated runs leave to the command: every run's requests (for its warnings and
/// checks), the traces' end, and the verdict.
pub(super) struct Done {
    pub(super) traces: Packed,
    pub(super) written: anyhow::Result<()>,
    pub(super) verdict: anyhow::Result<()>,
}

/// Runs the plan `args.repeat` times against `base` and writes every output.
pub(super) async fn bench(
    args: &BenchArgs,
    plan: &Validated,
    base: &reqwest::Url,
    key: Option<ApiKey>,
    default_model: Option<&str>,
    server_batching: Option<&BatchAnalysis>,
    stop: &Interrupt,
) -> anyhow::Result<Done> {
    let first = run_args(args, 1, None);
    let prepared = prepare(
        &first,
        plan,
        base,
        key.clone(),
        default_model,
        server_batching,
        stop,
    )
    .await?;
    let target = Target {
        base,
        key,
        server_batching,
    };
    let (n, to_stderr) = (args.repeat, args.stdout_taken());
    let (runs, written) = repeat(args, plan, prepared, target, stop, |k, run| {
        output::show(to_stderr, &output::repeat::run_line(k, n, run));
    })
    .await?;
    let repeated = Repeated::of(runs, args.cooldown, args.confidence);
    output::show(to_stderr, &repeated.table());
    if let Some(path) = &args.json {
        output::write_json(path, &repeated.to_json())?;
    }
    if let Some(path) = &args.html {
        output::write_html(path, Ok(repeated.html()))?;
    }
    let pooled = repeated.figure("attainment").and_then(|f| f.pooled);
    let verdict = exit::fail_under(pooled.unwrap_or(0.0), args.fail_under);
    let mut traces = Packed::default();
    for run in repeated.runs {
        traces.extend(&run.into_collected().measured);
    }
    Ok(Done {
        traces,
        written,
        verdict,
    })
}
