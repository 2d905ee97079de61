//! The differences chart: one row per figure, its relative difference (new − base) / base as
//! a dot and its confidence interval as a bar, coloured by the verdict, on an axis with 0 and
//! ± the threshold marked. Hand-drawn SVG: plotters has no interval bars.

use std::fmt::Write as _;

use super::look;
use crate::compare::comparison::Comparison;
use crate::output::html::esc;

const WIDTH: f64 = 1000.0;
const LABELS: f64 = 240.0;
const ROW: f64 = 24.0;
const TOP: f64 = 40.0;

/// The chart of `comparison`'s figures (an empty string when it has none).
pub(super) fn svg(comparison: &Comparison) -> String {
    let figures = &comparison.figures;
    if figures.is_empty() {
        return String::new();
    }
    let threshold = comparison.settings.threshold;
    let reach = figures
        .iter()
        .flat_map(|f| {
            let bounds = f.relative_bounds.and_then(|b| b.interval());
            [f.relative, bounds.map(|b| b.0), bounds.map(|b| b.1)]
        })
        .flatten()
        .filter(|v| v.is_finite())
        .fold(threshold * 2.0, |m, v| m.max(v.abs()))
        .max(0.01)
        * 1.1;
    let (left, right) = (LABELS + 10.0, WIDTH - 20.0);
    let mid = (left + right) / 2.0;
    let x = |v: f64| mid + v.clamp(-reach, reach) / reach * (right - left) / 2.0;
    let height = TOP + ROW * figures.len() as f64 + 30.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg class=\"differences\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" \
         height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\
         <text x=\"{left}\" y=\"18\" font-size=\"15\">relative difference (new − base) / base, \
         with its {}% interval</text>",
        comparison.settings.confidence.level() * 100.0
    );
    let bottom = height - 24.0;
    for (value, dash) in [(0.0, ""), (threshold, "4 3"), (-threshold, "4 3")] {
        let _ = writeln!(
            out,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{TOP}\" y2=\"{bottom}\" stroke=\"#888\" \
             stroke-dasharray=\"{dash}\"/><text x=\"{0:.1}\" y=\"{1:.1}\" \
             text-anchor=\"middle\">{2:+.0}%</text>",
            x(value),
            bottom + 14.0,
            value * 100.0
        );
    }
    for end in [-reach, reach] {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{:+.0}%</text>",
            x(end),
            bottom + 14.0,
            end * 100.0
        );
    }
    for (i, f) in figures.iter().enumerate() {
        let y = TOP + ROW * (i as f64 + 0.5);
        let (colour, words) = look(f.verdict);
        let _ = write!(
            out,
            "<text x=\"{LABELS}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            y + 4.0,
            esc(&f.label)
        );
        if let Some((lo, hi)) = f.relative_bounds.and_then(|b| b.interval()) {
            let _ = write!(
                out,
                "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" \
                 stroke-width=\"4\"><title>{words}</title></line>",
                x(lo),
                x(hi)
            );
        }
        if let Some(point) = f.relative.filter(|v| v.is_finite()) {
            let _ = write!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"{colour}\"><title>{}: {:+.1}% \
                 ({words})</title></circle>",
                x(point),
                esc(&f.label),
                point * 100.0
            );
        }
        out.push('\n');
    }
    out.push_str("</svg>\n");
    out
}
