//! The summary as a text table.

use std::fmt::Write as _;

use tokenmeter::report::Summary;

use crate::run_block::RunInfo;
use crate::slo::JudgedFrom;
use crate::summary::{BenchSummary, Outcomes};
use crate::sweep::SweepResult;

fn ms_row(out: &mut String, name: &str, s: &Summary) {
    let ms = |x: f64| x * 1e3;
    let _ = writeln!(
        out,
        "  {name:<14}{:>10.2}{:>10.2}{:>10.2}{:>10.2}{:>10.2}{:>10.2}{:>8}",
        ms(s.p50),
        ms(s.p90),
        ms(s.p95),
        ms(s.p99),
        ms(s.mean),
        ms(s.max),
        s.count
    );
}

fn tok_row(out: &mut String, name: &str, s: &Summary) {
    let _ = writeln!(
        out,
        "  {name:<14}{:>10.0}{:>10.0}{:>10.0}{:>10.0}{:>10.1}{:>10.0}{:>8}",
        s.p50, s.p90, s.p95, s.p99, s.mean, s.max, s.count
    );
}

/// `success 195 · error 5 (rate_limited 3, timeout 2)`.
pub(crate) fn outcomes_line(o: &Outcomes) -> String {
    let mut line = format!("success {}", o.success);
    if o.degraded > 0 {
        let _ = write!(line, " · degraded {}", o.degraded);
    }
    if o.cancelled > 0 {
        let _ = write!(line, " · cancelled {}", o.cancelled);
    }
    let errors = o.errors_total();
    if errors > 0 {
        let classes: Vec<String> = o.errors.iter().map(|(c, n)| format!("{c} {n}")).collect();
        let _ = write!(line, " · error {errors} ({})", classes.join(", "));
    } else {
        line.push_str(" · error 0");
    }
    line
}

/// A request that waited more than this in the client makes the from-schedule rows worth a
/// look.
const QUEUE_SHOWN: f64 = 1e-3;

/// Whether TTFT and E2E from the schedule are shown: some request waited in the client more
/// than 1 ms between when it was due and its send.
pub(crate) fn shows_schedule(s: &BenchSummary) -> bool {
    s.client_queue.count > 0 && s.client_queue.max > QUEUE_SHOWN
}

/// The table of one run.
pub(crate) fn render(info: &RunInfo, s: &BenchSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "tokenmeter bench · {} · model {}",
        info.url, info.model
    );
    let _ = writeln!(
        out,
        "{} requests · {} · {} · seed {}",
        s.requests, info.load, info.workload, info.seed
    );
    let judged = match s.slo.judged_from {
        _ if s.slo.is_empty() => "",
        JudgedFrom::Schedule => " (TTFT, E2E from the schedule)",
        JudgedFrom::Send => " (TTFT, E2E from the send)",
    };
    let _ = writeln!(
        out,
        "duration {:.2} s · SLO {}{judged}",
        s.duration_s, s.slo
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:<14}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>8}",
        "", "p50", "p90", "p95", "p99", "mean", "max", "n"
    );
    ms_row(&mut out, "TTFT (ms)", &s.ttft);
    if s.ttfot != s.ttft {
        // reasoning came first: the answer's first token is later
        ms_row(&mut out, "TTFOT (ms)", &s.ttfot);
    }
    ms_row(&mut out, "TTST (ms)", &s.ttst);
    ms_row(&mut out, "TPOT (ms)", &s.tpot);
    ms_row(&mut out, "NTPOT (ms)", &s.ntpot);
    ms_row(&mut out, "ITL (ms)", &s.itl);
    ms_row(&mut out, "E2E (ms)", &s.e2e);
    ms_row(&mut out, "to end (ms)", &s.e2e_stream);
    if shows_schedule(s) {
        // Timed from when each request was due: what its user felt (see load_check).
        ms_row(&mut out, "client queue", &s.client_queue);
        ms_row(&mut out, "TTFT sched.", &s.ttft_from_schedule);
        ms_row(&mut out, "E2E sched.", &s.e2e_from_schedule);
    }
    tok_row(&mut out, "input tokens", &s.input_tokens);
    tok_row(&mut out, "output tokens", &s.output_tokens);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  throughput    {:.2} req/s · {:.1} output tok/s · {:.1} total tok/s",
        s.request_throughput, s.output_throughput, s.total_token_throughput
    );
    let _ = writeln!(
        out,
        "  goodput       {:.2} req/s · {:.1} output tok/s · attainment {:.1}% ({}/{} good)",
        s.goodput,
        s.goodput_output_tokens,
        s.attainment * 100.0,
        s.good_requests,
        s.requests
    );
    let _ = writeln!(out, "  outcomes      {}", outcomes_line(&s.outcomes));
    if let Some(line) = per_request_gap_line(s) {
        let _ = writeln!(out, "  {line}");
    }
    out
}

/// Client − server TTFT per request, when the server sent its own timings.
pub(crate) fn per_request_gap_line(s: &BenchSummary) -> Option<String> {
    let gap = s.client_minus_server_ttft_per_request.as_ref()?;
    Some(format!(
        "client − server TTFT per request (the server's own TTFT from its metrics object, {} requests): mean {:.3} ms · p50 {:.3} ms · p99 {:.3} ms",
        gap.count,
        gap.mean * 1e3,
        gap.p50 * 1e3,
        gap.p99 * 1e3
    ))
}

/// The table of a sweep.
pub(crate) fn render_sweep(info: &RunInfo, sweep: &SweepResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "tokenmeter bench --sweep · {} · model {}",
        info.url, info.model
    );
    let _ = writeln!(
        out,
        "{} · seed {} · SLO {} · target attainment {:.0}%",
        info.workload,
        info.seed,
        sweep.slo,
        sweep.target * 100.0
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:>8}{:>7}{:>9}{:>9}{:>12}{:>14}{:>11}  verdict · outcomes",
        "rate", "judged", "served", "goodput", "attainment", "95% interval", "p99 TTFT"
    );
    for step in &sweep.steps {
        let s = &step.summary;
        let served = step
            .served_rate
            .map_or("-".to_owned(), |r| format!("{r:.2}"));
        let interval = step.attainment_interval.map_or("-".to_owned(), |(lo, hi)| {
            format!("{:.1}–{:.1}%", lo * 100.0, hi * 100.0)
        });
        let verdict = match (&step.stopped_early, step.kept_up, step.passes(sweep.target)) {
            (Some(stopped), _, _) => format!("stopped: {}", stopped.reason),
            (None, false, _) => "not served".to_owned(),
            (None, true, true) => "pass".to_owned(),
            (None, true, false) => "fail".to_owned(),
        };
        let _ = writeln!(
            out,
            "  {:>8.2}{:>7}{:>9}{:>9.2}{:>11.1}%{:>14}{:>9.1}ms  {verdict} · {}",
            step.rate,
            s.requests,
            served,
            s.goodput,
            s.attainment * 100.0,
            interval,
            s.ttft_from_schedule.p99 * 1e3,
            outcomes_line(&s.outcomes)
        );
    }
    let _ = writeln!(
        out,
        "  (a step passes when the server served at least 90% of its scheduled rate and the \
         attainment's interval, TTFT and E2E from the schedule, clears the target; its first \
         tenth is a warm-up, not judged; p99 TTFT from the schedule)"
    );
    let _ = writeln!(out);
    for c in &sweep.capacities {
        let target = if (c.goal - sweep.target).abs() < 1e-12 {
            " (the target)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  capacity at {:.0}% attainment{target}: {}",
            c.goal * 100.0,
            c.describe()
        );
    }
    let _ = writeln!(
        out,
        "  (DistServe goodput: the highest rate that passed below the lowest that failed; \
         searched to {:.0}%)",
        sweep.resolution * 100.0
    );
    for warning in &sweep.warnings {
        let _ = writeln!(out, "  warning: {warning}");
    }
    out
}
