//! What repeated runs leave behind: the "across N runs" table, one line per run as it ends,
//! and the `--json` object holding each run's complete report and every figure across them.

use std::fmt::Write as _;

use serde_json::{Value, json};
use tokenmeter::report::Bounds;

use crate::finished::Run;
use crate::repeat::{AcrossRuns, Repeated};

/// More runs than this show their range (min–max) rather than each value.
const RUNS_LISTED: usize = 5;

/// A repeated plan's reports: the table the command prints after the runs, and its `--json`.
///
/// ```
/// use tokenmeter_bench::Plan;
///
/// # #[tokio::main]
/// # async fn main() -> anyhow::Result<()> {
/// let plan = Plan::builder().requests(3).rate(f64::INFINITY).output_tokens(3).repeat(2);
/// let repeated = plan.build()?.run_repeated().await?;
/// assert!(repeated.table().contains("TTFT p95"));
/// let json = repeated.to_json();
/// assert_eq!(json["runs"].as_array().unwrap().len(), 2);
/// assert_eq!(json["runs"][1]["summary"]["successful"], 3);
/// assert_eq!(json["repeat"]["figures"]["ttft_p50"]["runs"].as_array().unwrap().len(), 2);
/// # Ok(())
/// # }
/// ```
impl Repeated {
    /// The "across N runs" table: for each key figure, the pooled value (all runs' requests
    /// as one sample) with its interval, the mean of the runs' own values with its Student-t
    /// interval, and each run's value (their range beyond five runs). Latencies in ms.
    pub fn table(&self) -> String {
        let n = self.runs.len();
        let level = self.level.level() * 100.0;
        let df = n.saturating_sub(1);
        let mut out = format!(
            "\nacross {n} run{} · the same plan each run (same prompts, lengths and arrival times)\n  \
             pooled: every run's requests as one sample; [{level:.0}% interval] from order \
             statistics\n    (percentiles), Wilson (attainment), none for a rate; (n<72): too \
             few requests for one\n  across runs: the mean of the runs' own values; \
             [{level:.0}% interval] Student t, {df} degree{} of\n    freedom: how much a figure \
             moves from run to run\n\n",
            if n == 1 { "" } else { "s" },
            if df == 1 { "" } else { "s" }
        );
        let each = if n > RUNS_LISTED {
            "runs (min–max)"
        } else {
            "each run"
        };
        let _ = writeln!(
            out,
            "  {:<18}{:<28}{:<28}{each}",
            "figure", "pooled", "across runs"
        );
        for figure in &self.figures {
            let (scale, unit) = shown_unit(figure.unit);
            let value = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), |v| number(v * scale));
            let pooled = match figure.pooled_bounds {
                Some(bounds) => with_bounds(value(figure.pooled), bounds, scale),
                None => value(figure.pooled),
            };
            let across = with_bounds(value(figure.mean), figure.mean_bounds, scale);
            let runs = if n > RUNS_LISTED {
                let values = || figure.runs.iter().flatten().copied();
                let lo = values().min_by(f64::total_cmp);
                let hi = values().max_by(f64::total_cmp);
                format!("{}–{}", value(lo), value(hi))
            } else {
                let values: Vec<String> = figure.runs.iter().map(|v| value(*v)).collect();
                values.join("  ")
            };
            let name = format!("{} {unit}", figure.label);
            let _ = writeln!(out, "  {name:<18}{pooled:<28}{across:<28}{runs}");
        }
        if let Some(note) = cache_note(&self.cached_prompt_shares()) {
            out += &note;
        }
        out
    }

    /// The `--json` of repeated runs: `repeat` (the runs made, the runs asked, the
    /// cool-down, the level and every figure across the runs) and `runs`, each run's
    /// complete report exactly as a run without `--repeat` writes it ([`Run::to_json`]).
    pub fn to_json(&self) -> Value {
        let figures: serde_json::Map<String, Value> = self
            .figures
            .iter()
            .map(|f| (f.name.to_owned(), figure_json(f)))
            .collect();
        json!({
            "repeat": {
                "n": self.runs.len(),
                "asked": self.runs.first().map_or(self.runs.len(), |r| r.args.repeat),
                "cooldown_s": self.cooldown.as_secs_f64(),
                "confidence": self.level.level(),
                "cached_prompt_share": self.cached_prompt_shares(),
                "figures": figures,
            },
            "runs": self.runs.iter().map(Run::to_json).collect::<Vec<_>>(),
        })
    }
}

/// One line for run `k` of `n` as it ends: its counts, TTFT, output rate and duration, and
/// whether it stopped early or was interrupted (its `--json` entry says why).
pub(crate) fn run_line(k: usize, n: usize, run: &Run) -> String {
    let s = &run.summary;
    let ttft = match s.ttft.count {
        0 => "no TTFT".to_owned(),
        _ => format!(
            "TTFT p50 {} ms p95 {} ms",
            number(s.ttft.p50 * 1e3),
            number(s.ttft.p95 * 1e3)
        ),
    };
    let mut line = format!(
        "run {k} of {n}: {} sent, {} succeeded · {ttft} · {} output tok/s · {:.2} s",
        s.requests,
        s.successful,
        number(s.output_throughput),
        s.duration_s
    );
    if let Some(stopped) = &run.stopped_early {
        let _ = write!(
            line,
            " · stopped early ({}) after {} requests",
            stopped.reason, stopped.after_requests
        );
    }
    if let Some((sent, planned)) = run.interrupted {
        let _ = write!(
            line,
            " · interrupted: {sent} of {planned} planned requests sent"
        );
    }
    line + "\n"
}

/// Runs whose shares of prompt tokens served from the server's cache differ by more than this
/// were not served alike.
const CACHE_SPREAD: f64 = 0.1;

/// A note when the runs' shares of cached prompt tokens differ by more than [`CACHE_SPREAD`]:
/// a server with a prefix cache finds the repeated prompts cached after the first run.
fn cache_note(shares: &[Option<f64>]) -> Option<String> {
    let known = || shares.iter().flatten().copied();
    let lo = known().min_by(f64::total_cmp)?;
    let hi = known().max_by(f64::total_cmp)?;
    if hi - lo <= CACHE_SPREAD {
        return None;
    }
    let each: Vec<String> = shares
        .iter()
        .map(|s| s.map_or_else(|| "—".to_owned(), |s| format!("{:.0}%", s * 100.0)))
        .collect();
    Some(format!(
        "\nnote: the server served unequal shares of the prompts from its prompt cache\n  \
         ({}, by run): every run sends the same prompts, so later runs find them cached,\n  \
         and the across-run interval holds that difference too. Compare the runs after the\n  \
         first (its prompts were new), or turn the server's prefix cache off to measure.\n",
        each.join(", ")
    ))
}

/// The factor and unit a figure is shown in: seconds as ms, fractions as %.
fn shown_unit(unit: &str) -> (f64, &str) {
    match unit {
        "s" => (1e3, "ms"),
        "fraction" => (100.0, "%"),
        other => (1.0, other),
    }
}

/// A value with four significant figures at most, two decimals at least below 100.
fn number(v: f64) -> String {
    match v.abs() {
        a if a >= 1000.0 => format!("{v:.0}"),
        a if a >= 100.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

/// `value [lo, hi]`, or `value (n<need)` when the sample is too small for an interval.
fn with_bounds(value: String, bounds: Bounds, scale: f64) -> String {
    match bounds {
        Bounds::Within { lo, hi } => {
            format!("{value} [{}, {}]", number(lo * scale), number(hi * scale))
        }
        Bounds::TooFew { need, .. } if need == u64::MAX => value,
        Bounds::TooFew { need, .. } => format!("{value} (n<{need})"),
    }
}

/// One figure in `--json`: its unit, each run's value, the mean and its interval, the pooled
/// value and its interval (`null` when there is none; `*_needs`: the sample an interval needs,
/// when it was too small).
fn figure_json(f: &AcrossRuns) -> Value {
    let interval = |b: Option<Bounds>| b.and_then(Bounds::interval).map(|(lo, hi)| [lo, hi]);
    let needs = |b: Option<Bounds>| match b {
        Some(Bounds::TooFew { need, .. }) if need != u64::MAX => Some(need),
        _ => None,
    };
    json!({
        "unit": f.unit,
        "runs": f.runs,
        "mean": f.mean,
        "ci": interval(Some(f.mean_bounds)),
        "ci_needs": needs(Some(f.mean_bounds)),
        "pooled": f.pooled,
        "pooled_ci": interval(f.pooled_bounds),
        "pooled_ci_needs": needs(f.pooled_bounds),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unequal_cached_prompt_shares_are_said_and_equal_ones_are_not() {
        let note = cache_note(&[Some(0.0), Some(0.94), Some(1.0)]).expect("a note");
        assert!(note.contains("(0%, 94%, 100%, by run)"), "{note}");
        assert_eq!(cache_note(&[Some(0.5), Some(0.55), None]), None);
        assert_eq!(cache_note(&[None, None]), None);
    }
}
