//! The HTML page of `bench compare --html`: self-contained (inline SVG, no external file),
//! in the style of a run's report. Both sides' CDFs overlaid (TTFT, TPOT, E2E; ITL when both
//! sides hold their gaps), then each figure's relative difference with its interval as a bar,
//! coloured by its verdict, beside the threshold; the table of every figure.

mod differences;

use std::fmt::Write as _;

use plotters::style::RGBColor;

use super::comparison::{Comparison, FigureComparison, Verdict};
use super::side::{RequestFigures, Side};
use crate::output::charts::{self, colour};
use crate::output::html::{STYLE, esc};

/// The base side's colour in the CDFs.
const BASE: RGBColor = colour::TTFT;
/// The new side's colour in the CDFs.
const NEW: RGBColor = colour::IN_FLIGHT;

/// A verdict's colour and words.
pub(super) fn look(verdict: Verdict) -> (&'static str, &'static str) {
    match verdict {
        Verdict::Regressed => ("#d62728", "regressed"),
        Verdict::Improved => ("#2ca02c", "improved"),
        Verdict::NoSignificantDifference => ("#7f7f7f", "no significant difference"),
        Verdict::TooFew => ("#bbbbbb", "too few samples"),
    }
}

/// Every value of one figure over all the side's runs, in seconds.
fn pooled(side: &Side, figure: impl Fn(&RequestFigures) -> Vec<f64>) -> Vec<f64> {
    side.runs
        .iter()
        .flat_map(|run| run.requests.iter().flat_map(&figure))
        .collect()
}

/// The overlaid CDF of one figure of both sides.
fn cdf(
    title: &str,
    base: &Side,
    new: &Side,
    figure: impl Fn(&RequestFigures) -> Vec<f64> + Copy,
) -> Result<String, String> {
    let series = vec![
        ("base", BASE, charts::cdf_points(&pooled(base, figure), 1e3)),
        ("new", NEW, charts::cdf_points(&pooled(new, figure), 1e3)),
    ];
    charts::lines(title, "fraction of requests", "ms", series, false)
}

/// The page of `comparison` of `base` and `new` (the sides it was made from).
pub(crate) fn render(comparison: &Comparison, base: &Side, new: &Side) -> Result<String, String> {
    let mut out = String::new();
    let settings = &comparison.settings;
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>tokenmeter bench compare</title><style>{STYLE}</style></head><body>\n\
         <h1>tokenmeter bench compare</h1>\n\
         <p class=\"meta\">base: {} ({} run{}) · new: {} ({} run{})</p>\n\
         <p class=\"meta\">confidence {}% · threshold {}% · {} bootstrap resamples · seed {}</p>\n",
        esc(&comparison.base.0),
        comparison.base.1,
        if comparison.base.1 == 1 { "" } else { "s" },
        esc(&comparison.new.0),
        comparison.new.1,
        if comparison.new.1 == 1 { "" } else { "s" },
        settings.confidence.level() * 100.0,
        settings.threshold * 100.0,
        settings.resamples,
        settings.seed,
    );
    let regressed = comparison.regressed();
    let _ = writeln!(
        out,
        "<p class=\"verdict\" style=\"font-weight:bold;color:{}\">{}</p>",
        if regressed { "#d62728" } else { "#2ca02c" },
        if regressed {
            "a gating figure regressed (exit code 1)"
        } else {
            "no gating figure regressed (exit code 0)"
        }
    );
    for line in comparison.shape_differences.iter().chain(&comparison.notes) {
        let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(line));
    }
    out.push_str(&differences::svg(comparison));
    out.push_str("<div class=\"charts\">\n");
    let mut charts = vec![
        cdf("TTFT: base vs new", base, new, |r| {
            r.ttft.into_iter().collect()
        })?,
        cdf("TPOT: base vs new", base, new, |r| {
            r.tpot.into_iter().collect()
        })?,
        cdf("E2E latency: base vs new", base, new, |r| {
            r.e2e.into_iter().collect()
        })?,
    ];
    if base.itl_known && new.itl_known {
        charts.push(cdf("ITL: base vs new", base, new, |r| r.itl.clone())?);
    }
    for svg in charts {
        out.push_str(&svg);
        out.push('\n');
    }
    out.push_str("</div>\n");
    figure_table(&mut out, &comparison.figures);
    out.push_str("</body></html>\n");
    Ok(out)
}

/// One row per figure: both values, the difference, its interval, the verdict.
fn figure_table(out: &mut String, figures: &[FigureComparison]) {
    out.push_str(
        "<table class=\"figures\"><tr><th>figure</th><th>base</th><th>new</th>\
         <th>difference</th><th>relative</th><th>interval of the relative</th>\
         <th>verdict</th><th>gates</th></tr>\n",
    );
    for f in figures {
        let (colour, words) = look(f.verdict);
        let percent = |x: f64| format!("{:+.1}%", x * 100.0);
        let interval = f.relative_bounds.and_then(|b| b.interval()).map_or_else(
            || "–".to_owned(),
            |(lo, hi)| format!("[{}, {}]", percent(lo), percent(hi)),
        );
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:+.3}</td><td>{}</td><td>{}</td>\
             <td style=\"color:{colour};font-weight:bold\">{words}</td><td>{}</td></tr>",
            esc(&f.label),
            f.base,
            f.new,
            f.difference,
            f.relative.map_or_else(|| "–".to_owned(), percent),
            interval,
            if f.gates { "yes" } else { "" },
        );
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests;
