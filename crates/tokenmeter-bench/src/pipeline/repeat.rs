//! `--repeat N`: the same plan run N times against one server, a cool-down between runs,
//! each run prepared and measured as a single run is; nothing printed.

use std::path::{Path, PathBuf};

use tokenmeter_slo::batching::BatchAnalysis;

use super::measure::measure;
use super::prepare::{Prepared, prepare};
use crate::api_key::ApiKey;
use crate::args::BenchArgs;
use crate::finished::Run;
use crate::interrupt::{Interrupt, Stage};
use crate::validate::Validated;

/// The settings of run `k` (1-based) of a repeated plan: the plan's, with `--trace` written
/// to its own file per run ([`trace_path`]); after the first run, the first run's model
/// (`model`) and no second test request.
pub(crate) fn run_args(args: &BenchArgs, k: usize, model: Option<&str>) -> BenchArgs {
    let mut each = args.clone();
    each.trace = args.trace.as_deref().map(|path| trace_path(path, k));
    if let Some(model) = model {
        each.model = Some(model.to_owned());
        each.no_preflight = true;
    }
    each
}

/// Where run `k` of a repeated plan writes its trace: `trace.jsonl` → `trace.run2.jsonl`
/// (`trace` → `trace.run2`).
pub(crate) fn trace_path(path: &Path, k: usize) -> PathBuf {
    let name = match (path.file_stem(), path.extension()) {
        (Some(stem), Some(ext)) => format!(
            "{}.run{k}.{}",
            stem.to_string_lossy(),
            ext.to_string_lossy()
        ),
        _ => format!(
            "{}.run{k}",
            path.file_name().unwrap_or_default().to_string_lossy()
        ),
    };
    path.with_file_name(name)
}

/// Where the runs go, and what later runs are prepared with.
pub(crate) struct Target<'a> {
    /// The server's base URL.
    pub(crate) base: &'a reqwest::Url,
    /// The API key.
    pub(crate) key: Option<ApiKey>,
    /// The built-in simulated server's batching, when it is the server.
    pub(crate) server_batching: Option<&'a BatchAnalysis>,
}

/// Runs the plan `args.repeat` times: the first run on `first` (prepared with
/// [`run_args`]`(args, 1, None)`), each later one prepared again after `args.cooldown`.
/// `each` sees every run as it finishes. Stops after a run that was interrupted, or at an
/// interrupt during a cool-down. Returns the runs made and the traces' end (the first error
/// of a trace not written).
pub(crate) async fn repeat(
    args: &BenchArgs,
    plan: &Validated,
    first: Prepared,
    target: Target<'_>,
    stop: &Interrupt,
    mut each: impl FnMut(usize, &Run),
) -> anyhow::Result<(Vec<Run>, anyhow::Result<()>)> {
    let model = first.client.target().model.clone();
    let mut runs = Vec::with_capacity(args.repeat);
    let mut written = Ok(());
    let mut prepared = Some(first);
    for k in 1..=args.repeat {
        let run_args = run_args(args, k, (k > 1).then_some(model.as_str()));
        let ready = match prepared.take() {
            Some(ready) => ready,
            None => {
                let pause = tokio::time::sleep(args.cooldown);
                tokio::select! {
                    () = pause => {}
                    () = stop.reached(Stage::Draining) => break,
                }
                let (key, batching) = (target.key.clone(), target.server_batching);
                prepare(&run_args, plan, target.base, key, None, batching, stop).await?
            }
        };
        let (run, trace) = measure(
            &run_args,
            plan,
            ready,
            target.base,
            target.server_batching,
            stop,
        )
        .await?;
        if written.is_ok() {
            written = trace;
        }
        each(k, &run);
        let interrupted = run.interrupted.is_some();
        runs.push(run);
        if interrupted || stop.interrupted() {
            break;
        }
    }
    Ok((runs, written))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_has_its_own_trace_file() {
        let at = |p: &str, k| trace_path(Path::new(p), k);
        assert_eq!(at("out/trace.jsonl", 2), Path::new("out/trace.run2.jsonl"));
        assert_eq!(at("trace", 1), Path::new("trace.run1"));
        assert_eq!(at("/tmp/a.b.jsonl", 3), Path::new("/tmp/a.b.run3.jsonl"));
    }

    #[test]
    fn later_runs_keep_the_first_model_and_skip_the_test_request() {
        let args = BenchArgs {
            trace: Some("t.jsonl".into()),
            ..BenchArgs::default()
        };
        let first = run_args(&args, 1, None);
        assert_eq!(first.trace.as_deref(), Some(Path::new("t.run1.jsonl")));
        assert!(!first.no_preflight && first.model.is_none());
        let second = run_args(&args, 2, Some("m"));
        assert_eq!(second.model.as_deref(), Some("m"));
        assert!(second.no_preflight);
    }
}
