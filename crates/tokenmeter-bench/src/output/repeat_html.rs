//! `--html` with `--repeat`: one self-contained page of the "across N runs" table, each figure
//! drawn on its own axis: every run's value as a dot, the across-run interval as a blue bar and
//! the pooled interval as an orange one. Each run's full report is in `--json` (or `--html` of
//! a single run).

use std::fmt::Write as _;

use tokenmeter::report::Bounds;

use super::html::esc;
use crate::repeat::{AcrossRuns, Repeated};

/// The across-run interval's colour (`#1f77b4`).
const ACROSS: &str = "#1f77b4";
/// The pooled interval's colour (`#ff7f0e`).
const POOLED: &str = "#ff7f0e";
/// Each figure's axis, in pixels.
const WIDTH: f64 = 360.0;
const HEIGHT: f64 = 26.0;

const STYLE: &str = "body{font-family:sans-serif;margin:16px 24px;color:#222;background:#fff}\
h1{font-size:22px;margin:0 0 4px}p{margin:4px 0;color:#444;font-size:13px}\
table{border-collapse:collapse;margin:10px 0;font-size:13px}\
td,th{border:1px solid #ddd;padding:3px 9px;text-align:right}th{background:#f4f4f4}\
td:first-child,th:first-child{text-align:left}td svg{display:block}";

/// The HTML page of repeated runs.
///
/// ```
/// use tokenmeter_bench::Plan;
///
/// # #[tokio::main]
/// # async fn main() -> anyhow::Result<()> {
/// let plan = Plan::builder().requests(2).rate(f64::INFINITY).output_tokens(3).repeat(2);
/// let page = plan.build()?.run_repeated().await?.html();
/// assert!(page.starts_with("<!DOCTYPE html>") && page.contains("across 2 runs"));
/// # Ok(())
/// # }
/// ```
impl Repeated {
    /// The self-contained page `--html` writes with `--repeat`: the "across N runs" table,
    /// each figure drawn on its own axis (a dot per run, the across-run interval in blue, the
    /// pooled one in orange), and the runs' shares of prompts served from the server's cache.
    pub fn html(&self) -> String {
        let n = self.runs.len();
        let level = self.level.level() * 100.0;
        let mut out = format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tokenmeter \
             bench: {n} repeated runs</title><style>{STYLE}</style></head><body>\n<h1>tokenmeter \
             bench: across {n} runs</h1>\n"
        );
        if let Some(info) = self.runs.first().map(|r| &r.info) {
            let _ = writeln!(
                out,
                "<p>{} · model {} · {} · {} · seed {} · the same plan each run (same prompts, \
                 lengths and arrival times) · cool-down {:.1} s</p>",
                esc(&info.url),
                esc(info.model.as_str()),
                esc(&info.load),
                esc(&info.workload),
                info.seed,
                self.cooldown.as_secs_f64()
            );
        }
        let _ = writeln!(
            out,
            "<p><b style=\"color:{POOLED}\">pooled</b>: every run's requests as one sample, \
             {level:.0}% interval from order statistics (percentiles) or Wilson (attainment); \
             <b style=\"color:{ACROSS}\">across runs</b>: the mean of the runs' own values, \
             {level:.0}% Student-t interval ({} degrees of freedom); dots: each run.</p>",
            n.saturating_sub(1)
        );
        out.push_str(
            "<table><tr><th>figure</th><th>pooled</th><th>across runs</th><th>each run</th>\
             <th>runs (dots), across-run and pooled intervals</th></tr>\n",
        );
        for figure in &self.figures {
            row(&mut out, figure);
        }
        out.push_str("</table>\n");
        let shares: Vec<String> = self
            .cached_prompt_shares()
            .iter()
            .map(|s| s.map_or_else(|| "—".to_owned(), |s| format!("{:.0}%", s * 100.0)))
            .collect();
        let _ = writeln!(
            out,
            "<p>prompt tokens the server served from its cache, by run: {} (every run sends the \
             same prompts: a prefix cache serves later runs' from memory)</p>\n</body></html>",
            esc(&shares.join(", "))
        );
        out
    }
}

/// One figure's row: its values, and its axis.
fn row(out: &mut String, f: &AcrossRuns) {
    let (scale, unit) = match f.unit {
        "s" => (1e3, "ms"),
        "fraction" => (100.0, "%"),
        other => (1.0, other),
    };
    let shown = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), |v| format!("{:.2}", v * scale));
    let with = |v: Option<f64>, b: Option<Bounds>| match b {
        Some(Bounds::Within { lo, hi }) => {
            format!("{} [{:.2}, {:.2}]", shown(v), lo * scale, hi * scale)
        }
        // Too few requests for an interval: say how many it needs.
        Some(Bounds::TooFew { need, .. }) if need != u64::MAX => {
            format!("{} (n&lt;{need})", shown(v))
        }
        _ => shown(v),
    };
    let runs: Vec<String> = f.runs.iter().map(|v| shown(*v)).collect();
    let _ = writeln!(
        out,
        "<tr class=\"figure\"><td>{} ({})</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        esc(f.label),
        esc(unit),
        with(f.pooled, f.pooled_bounds),
        with(f.mean, Some(f.mean_bounds)),
        runs.join(" · "),
        axis(f)
    );
}

/// The figure's axis from 0 to its largest value or interval end: a dot per run, the
/// across-run interval (upper bar) and the pooled one (lower bar).
fn axis(f: &AcrossRuns) -> String {
    let across = f.mean_bounds.interval();
    let pooled = f.pooled_bounds.and_then(Bounds::interval);
    let top = f
        .runs
        .iter()
        .flatten()
        .copied()
        .chain(across.map(|(_, hi)| hi))
        .chain(pooled.map(|(_, hi)| hi))
        .chain(f.pooled)
        .fold(0.0_f64, f64::max);
    let x = |v: f64| {
        if top > 0.0 {
            4.0 + (v / top).clamp(0.0, 1.0) * (WIDTH - 8.0)
        } else {
            4.0
        }
    };
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\">\
         <line x1=\"4\" y1=\"{y}\" x2=\"{x2}\" y2=\"{y}\" stroke=\"#ccc\"/>",
        y = HEIGHT / 2.0,
        x2 = WIDTH - 4.0
    );
    for (interval, y, colour) in [(across, 7.0, ACROSS), (pooled, 19.0, POOLED)] {
        if let Some((lo, hi)) = interval {
            let _ = write!(
                svg,
                "<rect x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"4\" fill=\"{colour}\"/>",
                x(lo),
                y - 2.0,
                (x(hi) - x(lo)).max(2.0)
            );
        }
    }
    for value in f.runs.iter().flatten() {
        let _ = write!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{}\" r=\"3\" fill=\"#222\"/>",
            x(*value),
            HEIGHT / 2.0
        );
    }
    svg.push_str("</svg>");
    svg
}
