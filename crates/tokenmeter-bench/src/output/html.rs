//! The self-contained HTML report: the summary table and inline SVG charts, no external file.

use std::fmt::Write as _;

use tokenmeter::report::{Bounds, Summary};

use crate::gaps::{GapSpan, Gaps};
use crate::intervals::RunIntervals;
use crate::reqs::Reqs;
use crate::slo::Judge;
use crate::summary::BenchSummary;
use crate::sweep::SweepResult;
use tokenmeter::report::SummaryBounds;

use super::charts::{self, ErrorBar, colour};
use super::table::outcomes_line;
use crate::run_block::RunInfo;

/// Escapes text for HTML.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub(crate) const STYLE: &str = "body{font-family:sans-serif;margin:16px 24px;color:#222;background:#fff}\
h1{font-size:22px;margin:0 0 4px}p.meta{margin:2px 0;color:#555;font-size:13px}\
table{border-collapse:collapse;margin:10px 0;font-size:13px}\
td,th{border:1px solid #ddd;padding:3px 9px;text-align:right}th{background:#f4f4f4}\
td:first-child,th:first-child{text-align:left}\
.charts{display:grid;grid-template-columns:repeat(2,560px);gap:12px}\
.charts svg{border:1px solid #eee}";

/// A value cell, with its interval when there is one: `32.44 ±1.30` (both ends in the
/// cell's title), `—` when the sample is too small.
fn cell(out: &mut String, point: f64, bounds: Option<Bounds>, scale: f64, digits: usize) {
    let Some(b) = bounds else {
        let _ = write!(out, "<td>{:.*}</td>", digits, point * scale);
        return;
    };
    match (b.half_width(point), b) {
        (Some(half), Bounds::Within { lo, hi }) => {
            let _ = write!(
                out,
                "<td title=\"{:.*} – {:.*}\">{:.*} ±{:.*}</td>",
                digits,
                lo * scale,
                digits,
                hi * scale,
                digits,
                point * scale,
                digits,
                half * scale
            );
        }
        (_, Bounds::TooFew { have, need }) => {
            let _ = write!(
                out,
                "<td title=\"too few samples: {have}, an interval needs {need}\">—</td>"
            );
        }
        _ => {
            let _ = write!(out, "<td>{:.*}</td>", digits, point * scale);
        }
    }
}

fn stat_row(
    out: &mut String,
    name: &str,
    s: &Summary,
    bounds: Option<SummaryBounds>,
    scale: f64,
    digits: usize,
) {
    let _ = write!(out, "<tr><td>{}</td>", esc(name));
    for (i, v) in [s.p50, s.p90, s.p95, s.p99, s.mean].into_iter().enumerate() {
        cell(out, v, bounds.map(|b| b.named()[i].1), scale, digits);
    }
    let _ = write!(out, "<td>{:.*}</td>", digits, s.max * scale);
    let _ = writeln!(out, "<td>{}</td></tr>", s.count);
}

fn summary_table(out: &mut String, s: &BenchSummary, iv: Option<&RunIntervals>) {
    if let Some(iv) = iv {
        let _ = writeln!(
            out,
            "<p class=\"meta\">±: the wider side of each figure's {}% confidence interval \
             (both ends in the cell's title and in --json); —: too few samples for one; the \
             maximum has none. Percentiles: order statistics; means: Student t; ITL: {} \
             resamples of the requests; error bars on the CDFs: p50, p90, p95, p99.</p>",
            iv.level.level() * 100.0,
            iv.itl_resamples
        );
    }
    out.push_str(
        "<table><tr><th></th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>mean</th>\
         <th>max</th><th>n</th></tr>\n",
    );
    let pick = |f: fn(&RunIntervals) -> SummaryBounds| iv.map(f);
    stat_row(out, "TTFT (ms)", &s.ttft, pick(|i| i.ttft), 1e3, 2);
    stat_row(out, "TPOT (ms)", &s.tpot, pick(|i| i.tpot), 1e3, 2);
    stat_row(out, "ITL (ms)", &s.itl, iv.and_then(|i| i.itl), 1e3, 2);
    stat_row(out, "E2E (ms)", &s.e2e, pick(|i| i.e2e), 1e3, 2);
    let to_end = pick(|i| i.e2e_stream);
    stat_row(
        out,
        "E2E to the stream's end (ms)",
        &s.e2e_stream,
        to_end,
        1e3,
        2,
    );
    let input = pick(|i| i.input_tokens);
    stat_row(out, "input tokens", &s.input_tokens, input, 1.0, 0);
    let output = pick(|i| i.output_tokens);
    stat_row(out, "output tokens", &s.output_tokens, output, 1.0, 0);
    out.push_str("</table>\n");
    let _ = writeln!(
        out,
        "<p class=\"meta\">throughput {:.2} req/s · {:.1} output tok/s · goodput {:.2} req/s · \
         {:.1} output tok/s · attainment {:.1}% ({}/{} good) · SLO {}</p>",
        s.request_throughput,
        s.output_throughput,
        s.goodput,
        s.goodput_output_tokens,
        s.attainment * 100.0,
        s.good_requests,
        s.requests,
        esc(&s.slo.to_string())
    );
    if let Some(iv) = iv {
        let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&rates_line(iv)));
    }
    let _ = writeln!(
        out,
        "<p class=\"meta\">outcomes: {}</p>",
        esc(&outcomes_line(&s.outcomes))
    );
    if let Some(line) = crate::output::table::per_request_gap_line(s) {
        let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&line));
    }
}

/// The intervals of the rates, both ends.
fn rates_line(iv: &RunIntervals) -> String {
    let parts: Vec<String> = iv
        .rates()
        .into_iter()
        .map(|(name, b)| match b {
            Bounds::Within { lo, hi } => format!("{name} {lo:.3}–{hi:.3}"),
            Bounds::TooFew { have, need } => format!("{name} — (have {have}, need {need})"),
        })
        .collect();
    format!(
        "{}% intervals: {} (throughputs from {} time slices)",
        iv.level.level() * 100.0,
        parts.join(" · "),
        iv.throughput_slices
    )
}

/// The error bars of a row: its percentiles that have an interval.
fn bars(bounds: Option<SummaryBounds>) -> Vec<ErrorBar> {
    let Some(b) = bounds else { return Vec::new() };
    [(0.5, b.p50), (0.9, b.p90), (0.95, b.p95), (0.99, b.p99)]
        .into_iter()
        .filter_map(|(at, b)| b.interval().map(|(lo, hi)| ErrorBar { at, lo, hi }))
        .collect()
}

fn header(out: &mut String, title: &str, info: &RunInfo) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        esc(title),
        esc(title)
    );
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} · model {} · {} · {} · seed {}</p>",
        esc(&info.url),
        esc(info.model.as_str()),
        esc(&info.load),
        esc(&info.workload),
        info.seed
    );
}

/// Gaps drawn in the ITL histogram, at most.
const ITL_SAMPLE: usize = 200_000;

/// At most [`ITL_SAMPLE`] of the gaps of `spans`, evenly spread over them, in seconds: the
/// histogram's shape without a copy of every gap of a long run.
fn itl_sample(gaps: &Gaps, spans: &[GapSpan]) -> Vec<f64> {
    let n: usize = spans.iter().map(|s| s.len()).sum();
    let step = n.div_ceil(ITL_SAMPLE).max(1);
    spans
        .iter()
        .flat_map(|&s| gaps.of(s))
        .step_by(step)
        .map(|d| d.as_secs_f64())
        .collect()
}

/// The charts of one set of requests (successful ones for latencies), from their records.
fn run_charts(
    out: &mut String,
    traces: Reqs<'_>,
    gaps: &Gaps,
    summary: &BenchSummary,
    iv: Option<&RunIntervals>,
) -> Result<(), String> {
    let row = |f: fn(&RunIntervals) -> SummaryBounds| bars(iv.map(f));
    let ok = traces.filter(|t| t.succeeded());
    let ok = ok.reqs();
    let records = || ok.iter().filter_map(|t| t.owned_record());
    let ttft: Vec<f64> = records()
        .filter_map(|r| r.ttft)
        .map(|d| d.as_secs_f64())
        .collect();
    let tpot: Vec<f64> = ok.iter().filter_map(|t| t.tpot_seconds()).collect();
    let e2e: Vec<f64> = ok
        .iter()
        .filter_map(|t| t.latency())
        .map(|d| d.as_secs_f64())
        .collect();
    let spans: Vec<GapSpan> = ok.iter().map(|t| t.gaps).collect();
    let itl = itl_sample(gaps, &spans);
    out.push_str("<div class=\"charts\">\n");
    for svg in [
        charts::cdf(
            "TTFT: cumulative distribution",
            &ttft,
            colour::TTFT,
            &row(|i| i.ttft),
        )?,
        charts::cdf(
            "TPOT: cumulative distribution",
            &tpot,
            colour::TPOT,
            &row(|i| i.tpot),
        )?,
        charts::cdf(
            "E2E latency: cumulative distribution",
            &e2e,
            colour::E2E,
            &row(|i| i.e2e),
        )?,
        charts::histogram("Inter-token latency", &itl, colour::ITL)?,
        charts::in_flight(traces)?,
        charts::goodput(traces, &Judge::new(&summary.slo))?,
    ] {
        out.push_str(&svg);
        out.push('\n');
    }
    out.push_str("</div>\n");
    Ok(())
}

/// The report of one run.
pub(crate) fn render<'r>(
    info: &RunInfo,
    summary: &BenchSummary,
    traces: impl Into<Reqs<'r>>,
    gaps: &Gaps,
    iv: &RunIntervals,
) -> Result<String, String> {
    let traces: Reqs<'r> = traces.into();
    let mut out = String::new();
    header(&mut out, "tokenmeter bench report", info);
    summary_table(&mut out, summary, Some(iv));
    run_charts(&mut out, traces, gaps, summary, Some(iv))?;
    out.push_str("</body></html>\n");
    Ok(out)
}

/// The report of a sweep: the curve, the table per rate, then the charts of the best step.
pub(crate) fn render_sweep<'r>(
    info: &RunInfo,
    sweep: &SweepResult,
    traces: impl Into<Reqs<'r>>,
    gaps: &Gaps,
) -> Result<String, String> {
    let traces: Reqs<'r> = traces.into();
    let mut out = String::new();
    header(&mut out, "tokenmeter bench sweep report", info);
    let capacity = sweep
        .capacities
        .iter()
        .find(|c| (c.goal - sweep.target).abs() < 1e-12)
        .map_or_else(String::new, |c| {
            format!(
                "capacity at {:.0}% attainment: {}",
                c.goal * 100.0,
                c.describe()
            )
        });
    let _ = writeln!(
        out,
        "<p><b>{}</b> · SLO {}</p>",
        esc(&capacity),
        esc(&sweep.slo.to_string())
    );
    let (attainment, goodput) = charts::sweep(&sweep.steps, sweep.target)?;
    let _ = writeln!(
        out,
        "<div class=\"charts\">\n{attainment}\n{goodput}\n</div>"
    );
    out.push_str(
        "<table><tr><th>rate (req/s)</th><th>sent</th><th>req/s</th><th>goodput</th>\
         <th>attainment</th><th>p99 TTFT (ms)</th><th>p99 TPOT (ms)</th><th>outcomes</th></tr>\n",
    );
    for step in &sweep.steps {
        let s = &step.summary;
        let _ = writeln!(
            out,
            "<tr><td>{:.2}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.1}%</td>\
             <td>{:.1}</td><td>{:.1}</td><td>{}</td></tr>",
            step.rate,
            s.requests,
            s.request_throughput,
            s.goodput,
            s.attainment * 100.0,
            s.ttft.p99 * 1e3,
            s.tpot.p99 * 1e3,
            esc(&outcomes_line(&s.outcomes))
        );
    }
    out.push_str("</table>\n");
    let shown = sweep
        .capacity
        .and_then(|rate| sweep.steps.iter().find(|s| s.rate == rate))
        .or_else(|| sweep.steps.first());
    if let Some(step) = shown {
        let step_traces = traces.filter(|t| t.rate() == Some(step.rate));
        let _ = writeln!(out, "<h2>At {:.2} req/s</h2>", step.rate);
        summary_table(&mut out, &step.summary, None);
        run_charts(&mut out, step_traces.reqs(), gaps, &step.summary, None)?;
    }
    out.push_str("</body></html>\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
