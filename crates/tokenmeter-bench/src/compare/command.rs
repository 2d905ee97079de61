//! What `tokenmeter bench compare BASE NEW` does, as a library call: read both sides
//! ([`input`](super::input)), refuse runs of different shapes unless told, compare them, print
//! the table and write `--json` and `--html` ([`run`]); the exit code's verdict ([`verdict`]).

use std::path::{Path, PathBuf};

use super::comparison::{CompareSettings, Comparison, Verdict};
use super::side::Side;
use super::{compare, html, input, shape, table, to_json};
use crate::args::DEFAULT_SLO;
use crate::exit::{self, Exit};
use crate::output;
use crate::slo::{JudgedFrom, Slo};

/// The settings of `tokenmeter bench compare`: the two sides, how to compare them and what to
/// write ([`run`]).
///
/// ```
/// use tokenmeter_bench::compare::CompareArgs;
///
/// let mut args = CompareArgs::new("base.json".into(), "new.json".into());
/// args.settings.threshold = 0.10;
/// args.html = Some("compare.html".into());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CompareArgs {
    /// The base run: a `--json` (one run, or `--repeat`'s runs) or a `--trace` file.
    pub base: PathBuf,
    /// The new run, as the base.
    pub new: PathBuf,
    /// Level, threshold, resamples, seed, different shapes allowed.
    pub settings: CompareSettings,
    /// The objectives a trace's requests are judged by (a `--json` holds its run's verdicts);
    /// default [`DEFAULT_SLO`].
    pub slo: Slo,
    /// From when a trace's TTFT and E2E are judged; default [`JudgedFrom::Schedule`].
    pub slo_from: JudgedFrom,
    /// Where the comparison goes as JSON (`-`: stdout); `None` (default): not written.
    pub json: Option<PathBuf>,
    /// Where the HTML page goes; `None` (default): not written.
    pub html: Option<PathBuf>,
}

impl CompareArgs {
    /// The settings to compare `base` with `new`, the rest by default.
    ///
    /// ```
    /// use tokenmeter_bench::compare::CompareArgs;
    ///
    /// let args = CompareArgs::new("a.json".into(), "b.jsonl".into());
    /// assert_eq!(args.settings.threshold, 0.05);
    /// ```
    pub fn new(base: PathBuf, new: PathBuf) -> Self {
        Self {
            base,
            new,
            settings: CompareSettings::default(),
            slo: DEFAULT_SLO,
            slo_from: JudgedFrom::Schedule,
            json: None,
            html: None,
        }
    }
}

/// Compares two runs' files: prints the table (on stderr when an output is `-`), writes
/// `--json` and `--html`, and returns the comparison ([`Comparison::regressed`]: the verdict;
/// [`verdict`]: it as the command's exit code).
///
/// # Errors
/// A usage error (exit code 2) when a file cannot be read or is not a run's `--json` or
/// `--trace` (naming the file and what is missing), when the runs' shapes differ without
/// [`CompareSettings::allow_different_shapes`] (naming each facet), or when an output path is
/// refused; exit code 3 when the comparison or an output could not be made.
///
/// ```
/// use tokenmeter_bench::compare::{CompareArgs, run};
/// use tokenmeter_bench::exit_code;
///
/// let error = run(&CompareArgs::new("no-base.json".into(), "no-new.json".into())).unwrap_err();
/// assert!(format!("{error:#}").contains("no-base.json"));
/// assert_eq!(exit_code(&error), 2);
/// ```
pub fn run(args: &CompareArgs) -> anyhow::Result<Comparison> {
    let usage = |e| exit::classify(e, Exit::Usage);
    output::check_paths(
        &[
            (args.json.as_deref(), "--json"),
            (args.html.as_deref(), "--html"),
        ],
        &[(args.base.as_path(), "BASE"), (args.new.as_path(), "NEW")],
    )
    .map_err(usage)?;
    let slo = Slo {
        judged_from: args.slo_from,
        ..args.slo
    };
    let base = input::read(&args.base, &slo).map_err(usage)?;
    let new = input::read(&args.new, &slo).map_err(usage)?;
    let differences = base.shape.differences(&new.shape);
    if !differences.is_empty() && !args.settings.allow_different_shapes {
        return Err(Exit::Usage.error(format!(
            "{} and {} are runs of different shapes, they measure different things:\n  {}\n\
             compare runs of the same model, lengths, load and objectives, or pass \
             --allow-different-shapes to compare them anyway",
            base.source,
            new.source,
            differences.join("\n  ")
        )));
    }
    let mut comparison = compare(&base, &new, &args.settings)?;
    if comparison.shape_differences.is_empty() {
        comparison.shape_differences = differences;
    }
    comparison.notes.extend(
        [&base, &new]
            .into_iter()
            .filter(|side| side.shape.facets.is_empty())
            .map(|side| shape::unchecked_note(&side.source)),
    );
    write(args, &comparison, &base, &new)?;
    Ok(comparison)
}

/// Shows the table and writes the files of `comparison`.
fn write(
    args: &CompareArgs,
    comparison: &Comparison,
    base: &Side,
    new: &Side,
) -> anyhow::Result<()> {
    let quiet = [&args.json, &args.html]
        .into_iter()
        .flatten()
        .any(|p: &PathBuf| output::is_stdout(Path::new(p)));
    output::show(quiet, &table(comparison));
    for note in &comparison.notes {
        output::show(quiet, &format!("note: {note}\n"));
    }
    if let Some(path) = &args.json {
        output::write_json(path, &to_json(comparison))?;
    }
    if let Some(path) = &args.html {
        output::write_html(path, html::render(comparison, base, new))?;
    }
    Ok(())
}

/// The command's verdict: `Ok` when no gating figure regressed, else an error naming each
/// regressed figure with its relative difference (exit code 1).
///
/// ```no_run
/// use tokenmeter_bench::compare::{CompareArgs, run, verdict};
///
/// # fn main() -> anyhow::Result<()> {
/// let comparison = run(&CompareArgs::new("main.json".into(), "branch.json".into()))?;
/// verdict(&comparison)?; // fails the CI job on a significant regression
/// # Ok(())
/// # }
/// ```
pub fn verdict(comparison: &Comparison) -> anyhow::Result<()> {
    let regressed: Vec<String> = comparison
        .figures
        .iter()
        .filter(|f| f.gates && f.verdict == Verdict::Regressed)
        .map(|f| match f.relative {
            Some(r) => format!("{} {:+.1}%", f.label, r * 100.0),
            None => format!("{} {:+}", f.label, f.difference),
        })
        .collect();
    if regressed.is_empty() {
        return Ok(());
    }
    Err(Exit::Regressed.error(format!(
        "{} regressed against {} beyond the {}% threshold: {}",
        comparison.new.0,
        comparison.base.0,
        comparison.settings.threshold * 100.0,
        regressed.join(", ")
    )))
}
