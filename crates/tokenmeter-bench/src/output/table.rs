//! The summary as a text table.

use std::fmt::Write as _;

use tokenmeter::report::{Bounds, Summary};

use crate::intervals::RunIntervals;
use crate::run_block::RunInfo;
use crate::slo::JudgedFrom;
use crate::summary::{BenchSummary, Outcomes};
use crate::sweep::SweepResult;
use tokenmeter::report::SummaryBounds;

/// Width of a value cell: ` 1234.56 ±123.45` fits.
const CELL: usize = 17;

/// (statistic, have, need): a statistic whose sample was too small.
type TooFew = (&'static str, u64, u64);

/// A row's statistics with their intervals beside them, and the footnotes they need.
struct Rows<'a> {
    out: &'a mut String,
    /// Each too-small statistic and the rows it was too small in.
    too_few: Vec<(TooFew, Vec<String>)>,
}

/// `32.44 ±1.30` (± the wider side of the interval), `—` when the sample is too small, the
/// bare value when there is no interval.
fn cell(point: f64, bounds: Option<Bounds>, scale: f64, digits: usize) -> String {
    match bounds {
        None => format!("{:.digits$}", point * scale),
        Some(b) => match b.half_width(point) {
            Some(half) => format!("{:.digits$} ±{:.digits$}", point * scale, half * scale),
            None => "—".to_owned(),
        },
    }
}

impl Rows<'_> {
    fn row(
        &mut self,
        name: &str,
        s: &Summary,
        bounds: Option<SummaryBounds>,
        scale: f64,
        digits: [usize; 2],
    ) {
        let [digits, mean_digits] = digits;
        let points = [s.p50, s.p90, s.p95, s.p99, s.mean];
        let _ = write!(self.out, "  {name:<14}");
        for (i, point) in points.into_iter().enumerate() {
            let b = bounds.map(|b| b.named()[i].1);
            let d = if i == 4 { mean_digits } else { digits };
            // A leading space keeps cells apart when a value is wider than its column.
            let _ = write!(
                self.out,
                "{:>CELL$}",
                format!(" {}", cell(point, b, scale, d))
            );
        }
        let max = format!(" {:.digits$}", s.max * scale);
        let _ = writeln!(self.out, "{max:>10}{:>8}", s.count);
        for key in bounds.iter().flat_map(SummaryBounds::too_few) {
            let label = name.split(" (").next().unwrap_or(name).to_owned();
            match self.too_few.iter_mut().find(|(k, _)| *k == key) {
                Some((_, rows)) => rows.push(label),
                None => self.too_few.push((key, vec![label])),
            }
        }
    }

    fn ms(&mut self, name: &str, s: &Summary, bounds: Option<SummaryBounds>) {
        self.row(name, s, bounds, 1e3, [2, 2]);
    }

    fn tokens(&mut self, name: &str, s: &Summary, bounds: Option<SummaryBounds>) {
        self.row(name, s, bounds, 1.0, [0, 1]);
    }
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

/// `12.34 ±0.56 unit` (± the wider side), or the bare value when the interval is missing.
fn rate(point: f64, b: Bounds, digits: usize, unit: &str) -> String {
    match b.half_width(point) {
        Some(half) => format!("{point:.digits$} ±{half:.digits$} {unit}"),
        None => format!("{point:.digits$} {unit}"),
    }
}

/// The table of one run, each figure with its interval from `iv`.
pub(crate) fn render(info: &RunInfo, s: &BenchSummary, iv: &RunIntervals) -> String {
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
    let level = iv.level.level() * 100.0;
    let _ = writeln!(
        out,
        "±: {level}% confidence interval, its wider side (--json has both ends); max has none"
    );
    let itl = match iv.itl {
        Some(_) => format!("ITL: {} resamples of the requests", iv.itl_resamples),
        None => format!("ITL: none (over {} gaps)", crate::intervals::itl::MAX_GAPS),
    };
    let _ = writeln!(
        out,
        "   percentiles: order statistics over each row's n · means: Student t · {itl}"
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:<14}{:>CELL$}{:>CELL$}{:>CELL$}{:>CELL$}{:>CELL$}{:>10}{:>8}",
        "", "p50", "p90", "p95", "p99", "mean", "max", "n"
    );
    let mut rows = Rows {
        out: &mut out,
        too_few: Vec::new(),
    };
    rows.ms("TTFT (ms)", &s.ttft, Some(iv.ttft));
    if s.ttfot != s.ttft {
        // reasoning came first: the answer's first token is later
        rows.ms("TTFOT (ms)", &s.ttfot, Some(iv.ttfot));
    }
    rows.ms("TTST (ms)", &s.ttst, Some(iv.ttst));
    rows.ms("TPOT (ms)", &s.tpot, Some(iv.tpot));
    rows.ms("NTPOT (ms)", &s.ntpot, Some(iv.ntpot));
    rows.ms("ITL (ms)", &s.itl, iv.itl);
    rows.ms("E2E (ms)", &s.e2e, Some(iv.e2e));
    rows.ms("to end (ms)", &s.e2e_stream, Some(iv.e2e_stream));
    if shows_schedule(s) {
        // Timed from when each request was due: what its user felt (see load_check).
        rows.ms("client queue", &s.client_queue, Some(iv.client_queue));
        rows.ms(
            "TTFT sched.",
            &s.ttft_from_schedule,
            Some(iv.ttft_from_schedule),
        );
        rows.ms(
            "E2E sched.",
            &s.e2e_from_schedule,
            Some(iv.e2e_from_schedule),
        );
    }
    rows.tokens("input tokens", &s.input_tokens, Some(iv.input_tokens));
    rows.tokens("output tokens", &s.output_tokens, Some(iv.output_tokens));
    let too_few = std::mem::take(&mut rows.too_few);
    if !too_few.is_empty() {
        let _ = writeln!(out, "  —: too few samples for a {level}% interval:");
        for ((stat, have, need), names) in too_few {
            let mut line = format!("     {stat} (have {have}, need {need}):");
            for (i, name) in names.iter().enumerate() {
                let sep = if i == 0 { " " } else { ", " };
                if line.chars().count() + sep.len() + name.chars().count() > 100 {
                    let _ = writeln!(out, "{},", line);
                    line = format!("       {name}");
                } else {
                    line += sep;
                    line += name;
                }
            }
            let _ = writeln!(out, "{line}");
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  throughput    {} · {} · {}",
        rate(s.request_throughput, iv.request_throughput, 2, "req/s"),
        rate(s.output_throughput, iv.output_throughput, 1, "output tok/s"),
        rate(
            s.total_token_throughput,
            iv.total_token_throughput,
            1,
            "total tok/s"
        ),
    );
    let attainment = match iv.attainment.interval() {
        Some((lo, hi)) => format!(
            "{:.1}% [{:.1}–{:.1}%]",
            s.attainment * 100.0,
            lo * 100.0,
            hi * 100.0
        ),
        None => format!("{:.1}%", s.attainment * 100.0),
    };
    let _ = writeln!(
        out,
        "  goodput       {} · {} · attainment {attainment} ({}/{} good)",
        rate(s.goodput, iv.goodput, 2, "req/s"),
        rate(
            s.goodput_output_tokens,
            iv.goodput_output_tokens,
            1,
            "output tok/s"
        ),
        s.good_requests,
        s.requests
    );
    if let Bounds::TooFew { have, need } = iv.request_throughput {
        let _ = writeln!(
            out,
            "                (no interval on the rates: {have} time slices, {need} needed)"
        );
    }
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

#[cfg(test)]
mod tests {
    use tokenmeter::report::{Bounds, Summary};

    use super::*;

    #[test]
    fn wide_cells_stay_apart_and_too_few_is_a_dash() {
        let mut out = String::new();
        let mut rows = Rows {
            out: &mut out,
            too_few: Vec::new(),
        };
        let s = Summary::of(vec![2.846_8, 5.821_09, 6.2, 6.3]);
        let wide = Bounds::Within { lo: 2.0, hi: 3.6 };
        let few = Bounds::TooFew { have: 4, need: 368 };
        let b = SummaryBounds::new([wide, wide, wide, few, wide]);
        rows.ms("TTFT (ms)", &s, Some(b));
        let too_few = std::mem::take(&mut rows.too_few);
        let line = out.lines().next().unwrap();
        // Every value is its own whitespace-separated word: none runs into the next.
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            &words[..3],
            ["TTFT", "(ms)", &format!("{:.2}", s.p50 * 1e3)],
            "{line}"
        );
        assert_eq!(
            words.iter().filter(|w| w.starts_with('±')).count(),
            4,
            "{line}"
        );
        assert_eq!(words.iter().filter(|w| **w == "—").count(), 1, "{line}");
        for word in &words[2..] {
            let number = word.trim_start_matches('±');
            assert!(
                *word == "—" || number.parse::<f64>().is_ok(),
                "{word:?} in {line}"
            );
        }
        assert_eq!(words.len(), 2 + 4 * 2 + 1 + 2, "{line}");
        assert_eq!(too_few, vec![(("p99", 4, 368), vec!["TTFT".to_owned()])]);
    }
}
