//! The self-contained HTML report: the summary table and inline SVG charts, no external file.

use std::fmt::Write as _;

use tokenmeter::report::Summary;

use crate::gaps::{GapSpan, Gaps};
use crate::measured::Measured;
use crate::slo::Judge;
use crate::summary::BenchSummary;
use crate::sweep::SweepResult;

use super::charts::{self, colour};
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

fn stat_row(out: &mut String, name: &str, s: &Summary, scale: f64, digits: usize) {
    let _ = write!(out, "<tr><td>{}</td>", esc(name));
    for v in [s.p50, s.p90, s.p95, s.p99, s.mean, s.max] {
        let _ = write!(out, "<td>{:.*}</td>", digits, v * scale);
    }
    let _ = writeln!(out, "<td>{}</td></tr>", s.count);
}

fn summary_table(out: &mut String, s: &BenchSummary) {
    out.push_str(
        "<table><tr><th></th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>mean</th>\
         <th>max</th><th>n</th></tr>\n",
    );
    stat_row(out, "TTFT (ms)", &s.ttft, 1e3, 2);
    stat_row(out, "TPOT (ms)", &s.tpot, 1e3, 2);
    stat_row(out, "ITL (ms)", &s.itl, 1e3, 2);
    stat_row(out, "E2E (ms)", &s.e2e, 1e3, 2);
    stat_row(out, "E2E to the stream's end (ms)", &s.e2e_stream, 1e3, 2);
    stat_row(out, "input tokens", &s.input_tokens, 1.0, 0);
    stat_row(out, "output tokens", &s.output_tokens, 1.0, 0);
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
    let _ = writeln!(
        out,
        "<p class=\"meta\">outcomes: {}</p>",
        esc(&outcomes_line(&s.outcomes))
    );
    if let Some(line) = crate::output::table::per_request_gap_line(s) {
        let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&line));
    }
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
    traces: &[Measured],
    gaps: &Gaps,
    summary: &BenchSummary,
) -> Result<(), String> {
    let ok: Vec<&Measured> = traces.iter().filter(|t| t.succeeded()).collect();
    let records = || ok.iter().filter_map(|t| t.record.as_ref());
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
        charts::cdf("TTFT: cumulative distribution", &ttft, colour::TTFT)?,
        charts::cdf("TPOT: cumulative distribution", &tpot, colour::TPOT)?,
        charts::cdf("E2E latency: cumulative distribution", &e2e, colour::E2E)?,
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
pub(crate) fn render(
    info: &RunInfo,
    summary: &BenchSummary,
    traces: &[Measured],
    gaps: &Gaps,
) -> Result<String, String> {
    let mut out = String::new();
    header(&mut out, "tokenmeter bench report", info);
    summary_table(&mut out, summary);
    run_charts(&mut out, traces, gaps, summary)?;
    out.push_str("</body></html>\n");
    Ok(out)
}

/// The report of a sweep: the curve, the table per rate, then the charts of the best step.
pub(crate) fn render_sweep(
    info: &RunInfo,
    sweep: &SweepResult,
    traces: &[Measured],
    gaps: &Gaps,
) -> Result<String, String> {
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
        let step_traces: Vec<Measured> = traces
            .iter()
            .filter(|t| t.rate == Some(step.rate))
            .cloned()
            .collect();
        let _ = writeln!(out, "<h2>At {:.2} req/s</h2>", step.rate);
        summary_table(&mut out, &step.summary);
        run_charts(&mut out, &step_traces, gaps, &step.summary)?;
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
