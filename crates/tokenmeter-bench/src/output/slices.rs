//! The slices in the terminal (a compact table, with `--slice`) and in the HTML report (charts
//! over time and a table). The JSON is the [`Slices`] value itself.

use std::fmt::Write as _;

use plotters::style::RGBColor;
use tokenmeter::report::Summary;

use crate::output::charts::{self, Line, colour};
use crate::output::html::esc;
use crate::slices::server::ServerSlice;
use crate::slices::{Slice, Slices};

/// Server-side series.
const SERVER: RGBColor = RGBColor(127, 127, 127);
/// Client p50.
const CLIENT_P50: RGBColor = RGBColor(174, 199, 232);
/// Client mean.
const CLIENT_MEAN: RGBColor = RGBColor(31, 119, 180);
/// Waiting requests.
const WAITING: RGBColor = colour::IN_FLIGHT;
/// Running requests.
const RUNNING: RGBColor = RGBColor(44, 160, 44);

fn ms(s: &Summary, pick: fn(&Summary) -> f64) -> String {
    if s.count == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}", pick(s) * 1e3)
    }
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

/// Milliseconds with two decimals, `-` for none.
fn ms_opt(seconds: Option<f64>) -> String {
    opt(seconds.map(|s| s * 1e3), 2)
}

/// The server's columns of a slice: waiting (max), running (mean), KV % (max), the bucket of
/// the server's p95 TTFT (ms), and client − server TTFT as a difference of exact means (ms).
fn server_cells(s: Option<&ServerSlice>) -> [String; 5] {
    let s = s.cloned().unwrap_or_default();
    [
        opt(s.waiting.map(|g| g.max), 0),
        opt(s.running.map(|g| g.mean), 1),
        opt(s.kv_usage.map(|g| g.max * 100.0), 2),
        s.ttft
            .map_or_else(|| "-".to_owned(), |q| q.p95.interval_ms()),
        ms_opt(s.client_minus_server_ttft_mean),
    ]
}

/// The whole run's exact means, in words (`None` without a server view).
pub(crate) fn run_line(slices: &Slices) -> Option<String> {
    let run = slices.server_run.as_ref()?;
    let mut parts = Vec::new();
    let gap = |name: &str, g: &crate::slices::means::MeanGap| {
        format!(
            "client − server {name} {:.3} ms, difference of means (exact from _sum/_count; client {:.3} ms of {}, server {:.3} ms of {})",
            g.difference() * 1e3,
            g.client.mean_s * 1e3,
            g.client.count,
            g.server.mean_s * 1e3,
            g.server.count
        )
    };
    if let Some(g) = &run.ttft_mean {
        parts.push(gap("TTFT", g));
    }
    if let Some(g) = &run.e2e_mean {
        parts.push(gap("E2E", g));
    }
    if let Some(q) = &run.queue_server_mean {
        parts.push(format!(
            "server queue time mean {:.3} ms (exact, of {})",
            q.mean_s * 1e3,
            q.count
        ));
    }
    if let Some(t) = &run.ttft {
        parts.push(format!(
            "server TTFT p50 in {} ms, p95 in {} ms (histogram buckets)",
            t.p50.interval_ms(),
            t.p95.interval_ms()
        ));
    }
    (!parts.is_empty()).then(|| format!("whole run: {}", parts.join("; ")))
}

/// The terminal's table of slices.
pub(crate) fn render(slices: &Slices) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nby slice of {} s (TTFT by first token, the rest by end; latencies in ms):",
        slices.width_s
    );
    let server = slices.server_metrics.is_some();
    let _ = write!(
        out,
        "  {:>7}{:>7}{:>8}{:>9}{:>8}{:>9}{:>9}{:>8}{:>9}{:>9}",
        "start s",
        "ended",
        "req/s",
        "tok/s",
        "good/s",
        "p50 TTFT",
        "p95 TTFT",
        "p95 ITL",
        "p95 TPOT",
        "p95 E2E"
    );
    if server {
        let _ = write!(
            out,
            " │{:>6}{:>6}{:>6}{:>16}{:>11}",
            "wait", "run", "KV%", "srv p95 bucket", "c−s mean"
        );
    }
    out.push('\n');
    for slice in &slices.slices {
        row(&mut out, slice, server);
    }
    if let Some(report) = &slices.server_metrics {
        let _ = writeln!(
            out,
            "  server: {} scrapes of {} every {} s, {} failed; wait = max waiting, run = mean running, srv p95 bucket = the bucket of the server's TTFT histogram its p95 falls in (ms; the buckets are all it knows), c−s mean = client − server TTFT, difference of means (exact from _sum/_count) between the scrapes bounding the slice (ms)",
            report.scrapes, report.url, report.interval_s, report.failed
        );
    }
    if let Some(line) = run_line(slices) {
        let _ = writeln!(out, "  {line}");
    }
    out
}

fn row(out: &mut String, slice: &Slice, server: bool) {
    let s = &slice.summary;
    let _ = write!(
        out,
        "  {:>7.2}{:>7}{:>8.2}{:>9.1}{:>8.2}{:>9}{:>9}{:>8}{:>9}{:>9}",
        slice.start_s,
        s.requests,
        s.request_throughput,
        s.output_throughput,
        s.goodput,
        ms(&s.ttft, |s| s.p50),
        ms(&s.ttft, |s| s.p95),
        ms(&s.itl, |s| s.p95),
        ms(&s.tpot, |s| s.p95),
        ms(&s.e2e, |s| s.p95),
    );
    if server {
        let [wait, run, kv, ttft, gap] = server_cells(slice.server.as_ref());
        let _ = write!(out, " │{wait:>6}{run:>6}{kv:>6}{ttft:>16}{gap:>11}");
    }
    out.push('\n');
}

/// Points (slice middle, value) of the slices where `value` has one.
fn points(slices: &Slices, value: impl Fn(&Slice) -> Option<f64>) -> Vec<(f64, f64)> {
    slices
        .slices
        .iter()
        .filter_map(|s| Some(((s.start_s + s.end_s) / 2.0, value(s)?)))
        .filter(|p| p.1.is_finite())
        .collect()
}

fn client(pick: fn(&Summary) -> f64, of: fn(&Slice) -> &Summary) -> impl Fn(&Slice) -> Option<f64> {
    move |s| {
        let summary = of(s);
        (summary.count > 0).then(|| pick(summary) * 1e3)
    }
}

fn server_value(s: &Slice, read: fn(&ServerSlice) -> Option<f64>) -> Option<f64> {
    s.server.as_ref().and_then(read)
}

/// The HTML section: charts over time and the table.
pub(crate) fn html(slices: &Slices) -> Result<String, String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<h2>Over time</h2>\n<p class=\"meta\">slices of {} s{} · {}</p>",
        slices.width_s,
        if slices.automatic {
            " (automatic; set with --slice)"
        } else {
            ""
        },
        esc(slices.membership)
    );
    if let Some(r) = &slices.server_metrics {
        let _ = writeln!(
            out,
            "<p class=\"meta\">server view: {} scrapes of {} every {} s, {} failed{}; names found: {}</p>",
            r.scrapes,
            esc(&r.url),
            r.interval_s,
            r.failed,
            r.errors
                .first()
                .map_or_else(String::new, |e| format!(" (first failure: {})", esc(e))),
            esc(&r.names.join(", "))
        );
    }
    let ttft_lines: Vec<Line<'_>> = vec![
        (
            "client p50",
            CLIENT_P50,
            points(slices, client(|s| s.p50, |s| &s.summary.ttft)),
        ),
        (
            "client p95",
            colour::TTFT,
            points(slices, client(|s| s.p95, |s| &s.summary.ttft)),
        ),
        (
            "client mean",
            CLIENT_MEAN,
            points(slices, client(|s| s.mean, |s| &s.summary.ttft)),
        ),
        (
            "server mean (exact, _sum/_count)",
            SERVER,
            points(slices, |s| {
                server_value(s, |v| v.ttft_mean.map(|m| m.server.mean_s * 1e3))
            }),
        ),
    ];
    let latency_lines: Vec<Line<'_>> = vec![
        (
            "ITL p95",
            colour::ITL,
            points(slices, client(|s| s.p95, |s| &s.summary.itl)),
        ),
        (
            "TPOT p95",
            colour::TPOT,
            points(slices, client(|s| s.p95, |s| &s.summary.tpot)),
        ),
        (
            "server ITL mean (exact, _sum/_count)",
            SERVER,
            points(slices, |s| {
                server_value(s, |v| v.itl_server_mean.map(|m| m.mean_s * 1e3))
            }),
        ),
    ];
    let rate_lines: Vec<Line<'_>> = vec![
        (
            "succeeded",
            colour::THROUGHPUT,
            points(slices, |s| Some(s.summary.request_throughput)),
        ),
        (
            "good",
            colour::GOODPUT,
            points(slices, |s| Some(s.summary.goodput)),
        ),
    ];
    out.push_str("<div class=\"charts\">\n");
    for svg in [
        charts::lines(
            "TTFT over time (by first token)",
            "ms",
            "seconds",
            ttft_lines,
            true,
        )?,
        charts::lines(
            "ITL and TPOT over time (by end)",
            "ms",
            "seconds",
            latency_lines,
            true,
        )?,
        charts::lines(
            "Throughput and goodput over time (by end)",
            "requests / s",
            "seconds",
            rate_lines,
            true,
        )?,
        charts::lines(
            "E2E over time (by end)",
            "ms",
            "seconds",
            vec![(
                "E2E p95",
                colour::E2E,
                points(slices, client(|s| s.p95, |s| &s.summary.e2e)),
            )],
            true,
        )?,
    ] {
        out.push_str(&svg);
        out.push('\n');
    }
    if slices.server_metrics.is_some() {
        let queue: Vec<Line<'_>> = vec![
            (
                "waiting (max)",
                WAITING,
                points(slices, |s| server_value(s, |v| v.waiting.map(|g| g.max))),
            ),
            (
                "running (mean)",
                RUNNING,
                points(slices, |s| server_value(s, |v| v.running.map(|g| g.mean))),
            ),
        ];
        let kv: Vec<Line<'_>> = vec![(
            "KV-cache usage (max)",
            SERVER,
            points(slices, |s| {
                server_value(s, |v| v.kv_usage.map(|g| g.max * 100.0))
            }),
        )];
        out.push_str(&charts::lines(
            "Server queue over time",
            "requests",
            "seconds",
            queue,
            true,
        )?);
        out.push('\n');
        out.push_str(&charts::lines(
            "Server KV-cache usage over time",
            "%",
            "seconds",
            kv,
            true,
        )?);
        out.push('\n');
    }
    out.push_str("</div>\n");
    table(&mut out, slices);
    Ok(out)
}

fn table(out: &mut String, slices: &Slices) {
    let server = slices.server_metrics.is_some();
    out.push_str(
        "<table><tr><th>start (s)</th><th>ended</th><th>req/s</th><th>output tok/s</th>\
         <th>goodput</th><th>p50 TTFT</th><th>p95 TTFT</th><th>p95 ITL</th><th>p95 TPOT</th>\
         <th>p95 E2E</th>",
    );
    if server {
        out.push_str(
            "<th>waiting (max)</th><th>running (mean)</th><th>KV % (max)</th>\
             <th>server p95 TTFT: its histogram bucket</th>\
             <th>client − server TTFT, difference of means (exact from _sum/_count)</th>\
             <th>client − server E2E, difference of means (exact)</th>\
             <th>server mean TTFT (exact)</th><th>server mean queue time (exact)</th>",
        );
    }
    out.push_str("</tr>\n");
    for slice in &slices.slices {
        let s = &slice.summary;
        let _ = write!(
            out,
            "<tr><td>{:.2}</td><td>{}</td><td>{:.2}</td><td>{:.1}</td><td>{:.2}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            slice.start_s,
            s.requests,
            s.request_throughput,
            s.output_throughput,
            s.goodput,
            ms(&s.ttft, |s| s.p50),
            ms(&s.ttft, |s| s.p95),
            ms(&s.itl, |s| s.p95),
            ms(&s.tpot, |s| s.p95),
            ms(&s.e2e, |s| s.p95),
        );
        if server {
            let view = slice.server.as_ref();
            let more = [
                ms_opt(view.and_then(|v| v.client_minus_server_e2e_mean)),
                ms_opt(view.and_then(|v| v.ttft_mean).map(|m| m.server.mean_s)),
                ms_opt(view.and_then(|v| v.queue_server_mean).map(|m| m.mean_s)),
            ];
            for cell in server_cells(view).into_iter().chain(more) {
                let _ = write!(out, "<td>{}</td>", esc(&cell));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n<p class=\"meta\">latencies in ms");
    if server {
        out.push_str(
            "; a server percentile is the histogram bucket it falls in (the buckets are all the \
             server's histogram knows); client − server figures are differences of exact means \
             between the scrapes bounding the slice",
        );
    }
    out.push_str("</p>\n");
    if let Some(line) = run_line(slices) {
        let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&line));
    }
}

/// The report `html` with the slices' section before its end.
pub(crate) fn append_html(html: String, slices: &Slices) -> Result<String, String> {
    let section = self::html(slices)?;
    Ok(match html.rfind("</body>") {
        Some(at) => format!("{}{section}{}", &html[..at], &html[at..]),
        None => html + &section,
    })
}
