//! `tokenmeter bench merge A.jsonl B.jsonl …`: the summary, JSON and HTML of the union of
//! several processes' `--trace` files (the shards of one run, see [`shard`](super::shard)).
//!
//! Exact, because traces are raw: every line is put on one time line ([`read`]), replayed into
//! the core's record ([`replay`]) and summarised by the same code as a run.
//!
//! | Module | Concept |
//! |---|---|
//! | [`read`] | the files, their wall-clock origins, duplicate requests |
//! | [`replay`] | a trace line back into the core's record |

pub(crate) mod read;
pub(crate) mod replay;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::json;

use crate::args::DEFAULT_SLO;
use crate::counts::{self, Counts};
use crate::exit::{self, Exit};
use crate::gaps::Gaps;
use crate::intervals::{Inputs, RunIntervals};
use crate::load_check::LoadCheck;
use crate::output::{self, RunInfo, html, table};
use crate::packed::Packed;
use crate::run_block::{RunNumbers, utc};
use crate::samples;
use crate::sanitize::Sanitizer;
use crate::slices::Slices;
use crate::slo::{JudgedFrom, Slo};
use crate::summary::summarize;

/// The settings of `tokenmeter bench merge`: the traces and what to write ([`run`]).
///
/// ```
/// # fn main() -> anyhow::Result<()> {
/// use tokenmeter_bench::MergeArgs;
///
/// let mut args = MergeArgs::new(vec!["shard-0.jsonl".into(), "shard-1.jsonl".into()]);
/// args.json = Some("merged.json".into());
/// args.slo = "ttft=500ms".parse()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct MergeArgs {
    /// The trace files, one per process (at least one).
    pub traces: Vec<PathBuf>,
    /// Where the summary goes as JSON (`-`: stdout); `None` (default): not written.
    pub json: Option<PathBuf>,
    /// Where the HTML report goes; `None` (default): not written.
    pub html: Option<PathBuf>,
    /// Per-request objectives for goodput, as the runs'; default [`DEFAULT_SLO`].
    pub slo: Slo,
    /// From when TTFT and E2E are judged, as the runs'; default [`JudgedFrom::Schedule`].
    pub slo_from: JudgedFrom,
    /// The level of every figure's confidence interval (`--confidence`); default 95%.
    pub confidence: tokenmeter::report::Confidence,
}

impl Default for MergeArgs {
    fn default() -> Self {
        Self {
            traces: Vec::new(),
            json: None,
            html: None,
            slo: DEFAULT_SLO,
            slo_from: JudgedFrom::Schedule,
            confidence: tokenmeter::report::Confidence::default(),
        }
    }
}

impl MergeArgs {
    /// The settings to merge `traces`, the rest by default.
    ///
    /// ```
    /// use tokenmeter_bench::{DEFAULT_SLO, MergeArgs};
    ///
    /// let args = MergeArgs::new(vec!["a.jsonl".into()]);
    /// assert_eq!((args.traces.len(), args.slo), (1, DEFAULT_SLO));
    /// ```
    pub fn new(traces: Vec<PathBuf>) -> Self {
        Self {
            traces,
            ..Self::default()
        }
    }
}

/// Merges the `--trace` files of several bench processes (the shards of one run): prints the
/// summary of their union and writes its JSON and HTML, as a run does.
///
/// ```
/// use tokenmeter_bench::{MergeArgs, exit_code, merge};
///
/// let missing = MergeArgs::new(vec!["no-such-trace.jsonl".into()]);
/// let error = merge(&missing).unwrap_err();
/// assert!(format!("{error:#}").contains("no-such-trace.jsonl"), "{error:#}");
/// # let _ = exit_code(&error);
/// ```
pub fn run(args: &MergeArgs) -> anyhow::Result<()> {
    if args.traces.is_empty() {
        return Err(exit::classify(
            anyhow::anyhow!("merge needs at least one trace file; give the runs' --trace files"),
            Exit::Usage,
        ));
    }
    let traces: Vec<(&Path, &str)> = args
        .traces
        .iter()
        .map(|trace| (trace.as_path(), "a trace to merge"))
        .collect();
    output::check_paths(
        &[
            (args.json.as_deref(), "--json"),
            (args.html.as_deref(), "--html"),
        ],
        &traces,
    )
    .map_err(|e| exit::classify(e, Exit::Usage))?;
    let merged = load(&args.traces).map_err(|e| exit::classify(e, Exit::Usage))?;
    let quiet = [&args.json, &args.html]
        .into_iter()
        .flatten()
        .any(|p| p.as_os_str() == "-");
    for warning in &merged.warnings {
        crate::console::warn(warning);
    }
    let slo = Slo {
        judged_from: args.slo_from,
        ..args.slo
    };
    let summary = summarize(&merged.measured, &merged.gaps, &slo);
    let info = info(&merged);
    let slices = Slices::of(&merged.measured, &merged.gaps, &slo, None, None);
    let intervals = RunIntervals::of(&Inputs {
        measured: (&merged.measured).into(),
        gaps: &merged.gaps,
        summary: &summary,
        slices: &slices,
        level: args.confidence,
        seed: merged.seed.unwrap_or(0),
    });
    output::show(quiet, &table::render(&info, &summary, &intervals));
    // The traces do not say the load they were sent at: the rates are not judged, the wait for
    // slots and the client's lag are (see load_check).
    let load = LoadCheck::of(&[], &merged.measured, &summary, None);
    output::show(quiet, &load.render());
    let phases = crate::phases::of(&merged.measured);
    if let Some(diagnosis) = &phases.diagnosis {
        output::show(quiet, &format!("  diagnosis: {diagnosis}\n"));
    }
    let classes = output::classes::breakdown(&merged.measured, None, None);
    if summary.successful > 0 {
        output::show(quiet, &output::classes::render(&classes));
    }
    let counts = Counts::of(&merged.measured, &slo);
    output::show(quiet, &counts.render());
    let errors = samples::error_samples(&merged.measured);
    output::show(quiet, &samples::render(&errors));
    if let Some(path) = &args.json {
        let mut summary = json!(summary);
        crate::intervals::json::annotate(&mut summary, &intervals);
        let value = json!({
            "run": info,
            "summary": summary,
            "load": load,
            "phases": phases,
            "by_class": classes,
            "counts": counts,
            "error_samples": errors,
            "samples": output::samples_json::of(&merged.measured, &slo),
            "merged": {
                "files": merged.files,
                "shards": merged.shards,
                "seeds": merged.seeds,
                "warnings": merged.warnings,
            },
        });
        output::write_json(path, &value)?;
    }
    if let Some(path) = &args.html {
        let report = html::render(&info, &summary, &merged.measured, &merged.gaps, &intervals)
            .map(|h| counts::insert_html(h, &counts.html(html::esc)));
        output::write_html(path, report)?;
    }
    Ok(())
}

/// The union of several traces.
#[derive(Debug)]
pub(crate) struct Merged {
    /// Every request, on one time line, by id (settled and packed).
    pub(crate) measured: Packed,
    /// Their gaps.
    pub(crate) gaps: Gaps,
    /// The files, as given.
    pub(crate) files: Vec<String>,
    /// Their shards (`I/N`), where written.
    pub(crate) shards: Vec<Option<String>>,
    /// The earliest run origin, in nanoseconds since the Unix epoch.
    pub(crate) start_unix_ns: Option<u64>,
    /// The runs' `--seed`: the first file's (see [`read::seed`]).
    pub(crate) seed: Option<u64>,
    /// Each file's `--seed`, in the order given.
    pub(crate) seeds: Vec<Option<u64>>,
    /// Shards missing or from different splits, seeds that differ.
    pub(crate) warnings: Vec<String>,
}

/// Reads, aligns and replays `paths`.
pub(crate) fn load(paths: &[PathBuf]) -> anyhow::Result<Merged> {
    let files = paths
        .iter()
        .map(|p| read::read(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let traces = read::align(&files)?;
    let (seed, seed_warning) = read::seed(&files);
    let mut warnings = read::shard_warnings(&files);
    warnings.extend(seed_warning);
    let replay = replay::Replay::default();
    let mut measured = Packed::default();
    let mut gaps = Gaps::new();
    for trace in &traces {
        let mut one = replay.measured(trace).with_context(|| {
            let file = files.iter().find(|f| {
                f.lines
                    .iter()
                    .any(|(_, t)| t.id == trace.id && t.rate == trace.rate)
            });
            format!(
                "request {} of {}: not a trace tokenmeter writes",
                trace.id,
                file.map_or_else(String::new, |f| f.path.display().to_string())
            )
        })?;
        one.settle(&mut gaps);
        measured.push(one);
    }
    Ok(Merged {
        measured,
        gaps,
        files: files.iter().map(|f| f.path.display().to_string()).collect(),
        shards: files.iter().map(|f| f.shard.clone()).collect(),
        start_unix_ns: files.iter().filter_map(|f| f.start).min(),
        seed,
        seeds: files.iter().map(|f| f.seed).collect(),
        warnings,
    })
}

/// The `run` block of a merge: what the traces say (no URL, model or load: they are not in
/// a trace), with the runs' seed.
fn info(merged: &Merged) -> RunInfo {
    let since_epoch = std::time::Duration::from_nanos(merged.start_unix_ns.unwrap_or(0));
    RunInfo {
        url: "(merged traces)".to_owned(),
        model: Sanitizer::default().clean("(see the runs)"),
        load: format!("{} traces merged", merged.files.len()),
        workload: format!(
            "{} requests from {}",
            merged.measured.len(),
            merged.files.join(", ")
        ),
        seed: merged.seed.unwrap_or(0),
        numbers: RunNumbers {
            started_at: utc(since_epoch),
            started_unix_s: since_epoch.as_secs_f64(),
            version: env!("CARGO_PKG_VERSION"),
            command: crate::request_shape::redact_command_line(std::env::args()),
            rate: serde_json::Value::Null,
            concurrency: None,
            n: merged.measured.len(),
            label: None,
            metadata: BTreeMap::new(),
            extra_body_overrides: BTreeMap::new(),
        },
    }
}

#[cfg(test)]
mod tests;
