//! Offered against achieved: did the run deliver the load it asked for, and who fell behind?
//!
//! Every request carries when it was due, when it could have left at the earliest (due, and a
//! slot of the concurrency cap free) and when it was sent ([`Measured`]). From those:
//!
//! - **scheduled rate**: (n − 1) ÷ the span of the first turns' due times, the rate the load
//!   model asked for in this run (a Poisson schedule's own realisation of `--rate`);
//! - **sent rate**: the same over their send times; below the scheduled rate when requests
//!   waited for a slot or the client fell behind;
//! - **slot wait** (ready − due) and **dispatch lag** (send − ready), p50, p99 and max;
//! - the process's **CPU** over the run, in cores.
//!
//! The verdicts say in words which figures that makes unreliable (a burst, `--rate inf`, is
//! sent one request after another by design: its rates and lag are shown, not judged):
//!
//! - requests waited for a slot (a cap below what the rate needs): TTFT and E2E timed from the
//!   send leave that wait out; the figures from the schedule hold it;
//! - the client fell behind its own schedule with slots free (dispatch lag p99 above 1 ms and
//!   above 5% of the TTFT p50, and either growing through the run — the last quarter's p50
//!   above the first's by as much — or a sent rate below the schedule's with no slot to wait
//!   for): every latency may hold the client's own delay; the client was the bottleneck. A
//!   lag as large that does not grow is jitter (the runtime's timer, scheduling): a note, not
//!   a verdict;
//! - the server did not keep up (an open loop whose TTFT p50 over the last quarter of requests
//!   is above twice that of the first quarter plus 10 ms): the queue grew through the run, so
//!   its percentiles depend on its length, not on the load alone.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use tokenmeter::report::Summary;

use crate::measured::Measured;
use crate::phases::medians_at_ends;
use crate::reqs::Reqs;
use crate::runner::Load;
use crate::schedule::Stage;
use crate::summary::BenchSummary;

/// A latency figure's p50, p99 and max, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Spread {
    /// Median.
    pub(crate) p50: f64,
    /// 99th percentile.
    pub(crate) p99: f64,
    /// Maximum.
    pub(crate) max: f64,
    /// Requests it is over.
    pub(crate) count: u64,
}

impl Spread {
    fn of(values: impl Iterator<Item = Duration>) -> Self {
        Self::from(&Summary::of_durations(values))
    }
}

impl From<&Summary> for Spread {
    fn from(s: &Summary) -> Self {
        Self {
            p50: s.p50,
            p99: s.p99,
            max: s.max,
            count: s.count,
        }
    }
}

/// Offered against achieved, for the JSON and the table.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct LoadCheck {
    /// The rate asked for (`--rate`, one stage without a ramp), requests per second.
    pub(crate) offered_rate: Option<f64>,
    /// The concurrency cap of an open loop (`--rate` with `--concurrency`).
    pub(crate) cap: Option<usize>,
    /// (n − 1) ÷ the span of the first turns' due times: the rate the schedule asked for.
    pub(crate) scheduled_rate: Option<f64>,
    /// (n − 1) ÷ the span of their sends: the rate the client achieved.
    pub(crate) sent_rate: Option<f64>,
    /// Successful requests per second over the run (its throughput).
    pub(crate) completed_rate: f64,
    /// Ready − due (s): the wait for a slot of the concurrency cap.
    pub(crate) slot_wait: Spread,
    /// Send − ready (s): how late the client sent requests that were due and had a slot.
    pub(crate) dispatch_lag: Spread,
    /// Requests that waited more than 1 ms for a slot.
    pub(crate) waited_for_slot: u64,
    /// CPU the bench process used over the run, in cores (the embedded simulator's included
    /// when it ran in the same process).
    pub(crate) client_cpu_cores: Option<f64>,
    /// The client sent at the rate its schedule asked for (within 5%).
    pub(crate) rate_achieved: bool,
    /// The client fell behind its own schedule: it was the bottleneck.
    pub(crate) client_bottleneck: bool,
    /// `Some(false)`: an open loop whose server fell behind (TTFT grew through the run).
    pub(crate) server_kept_up: Option<bool>,
    /// The TTFT p50 (s) of the first and the last quarter of requests, by due time.
    pub(crate) ttft_p50_first_last_quarter: Option<(f64, f64)>,
    /// Which reported figures the verdicts make unreliable, by their JSON names.
    pub(crate) unreliable: Vec<&'static str>,
    /// The dispatch lag p50 (s) of the first and the last quarter of requests, by due time.
    pub(crate) dispatch_lag_p50_first_last_quarter: Option<(f64, f64)>,
    /// The verdicts, in words.
    pub(crate) verdicts: Vec<String>,
    /// What is worth knowing but makes no figure unreliable, in words.
    pub(crate) notes: Vec<String>,
}

/// A dispatch lag p99 above this is the client falling behind (with the share of TTFT below).
const LAG_FLOOR: Duration = Duration::from_millis(1);

/// Rates within this share of each other are the same.
const RATE_TOLERANCE: f64 = 0.05;

/// (n − 1) ÷ the span of `times`: the rate at which they came; `None` for fewer than two or
/// a span of 0.
pub(crate) fn rate_over(mut times: Vec<Duration>) -> Option<f64> {
    times.sort_unstable();
    let span = times.last()?.saturating_sub(*times.first()?).as_secs_f64();
    (times.len() >= 2 && span > 0.0).then(|| (times.len() - 1) as f64 / span)
}

impl LoadCheck {
    /// The check of `measured`, sent through `stages` and summarised in `summary`; `cpu` is
    /// the process CPU time over the run's `wall` time.
    pub(crate) fn of<'r>(
        stages: &[Stage],
        measured: impl Into<Reqs<'r>>,
        summary: &BenchSummary,
        cpu: Option<(Duration, Duration)>,
    ) -> Self {
        let measured: Reqs<'r> = measured.into();
        // `burst`: every request due at once (`--rate inf`): the client sends them one after
        // another by design, so neither rates nor its lag are judged.
        let burst = stages
            .iter()
            .any(|s| matches!(s.load, Load::Rate { rate, .. } if !rate.is_finite()));
        let (offered_rate, cap, open) = match stages {
            [one] => match one.load {
                Load::Rate {
                    rate,
                    max_concurrency,
                    ramp,
                    ..
                } => (
                    (rate.is_finite() && ramp.is_none()).then_some(rate),
                    max_concurrency,
                    rate.is_finite(),
                ),
                Load::Replay { .. } => (None, None, true),
                Load::Concurrency(_) => (None, None, false),
            },
            _ => (None, None, false),
        };
        let first = || {
            measured
                .iter()
                .filter(|m| m.turn == 0 && m.due().is_some() && m.record.is_some())
        };
        let scheduled_rate = rate_over(first().filter_map(|m| m.due()).collect()).filter(|_| open);
        let sent_rate =
            rate_over(first().filter_map(|m| Some(m.record()?.arrival)).collect()).filter(|_| open);
        let slot_waits = || {
            measured
                .iter()
                .filter_map(|m| Some(m.ready()?.saturating_sub(m.due()?)))
        };
        let slot_wait = Spread::of(slot_waits());
        let waited_for_slot = slot_waits().filter(|w| *w > LAG_FLOOR).count() as u64;
        let dispatch_lag = Spread::from(&summary.dispatch_lag);
        let client_cpu_cores = cpu
            .filter(|(_, wall)| !wall.is_zero())
            .map(|(cpu, wall)| cpu.as_secs_f64() / wall.as_secs_f64());
        let ttft = &summary.ttft;
        let rate_achieved = match (scheduled_rate, sent_rate) {
            (Some(asked), Some(sent)) if open => sent >= asked * (1.0 - RATE_TOLERANCE),
            _ => true,
        };
        let lag_limit = LAG_FLOOR.as_secs_f64().max(0.05 * ttft.p50);
        let late = !burst && dispatch_lag.count > 0 && dispatch_lag.p99 > lag_limit;
        // Late by a steady jitter (the runtime's 1 ms timer, scheduling) is not behind: behind
        // is a lag that grows through the run, or a sent rate below the schedule's with no
        // slot to wait for.
        let lag_quarters = medians_at_ends(measured, Measured::dispatch_lag, 4);
        let growing = lag_quarters.is_some_and(|(first, last)| last > first + lag_limit);
        let client_bottleneck = late && (growing || (!rate_achieved && waited_for_slot == 0));
        let jitter = late && !client_bottleneck;
        let quarters = open
            .then(|| medians_at_ends(measured, |m| m.record()?.ttft, 4))
            .flatten();
        let server_kept_up = quarters.map(|(first, last)| last <= 2.0 * first + 0.010);
        let mut check = Self {
            offered_rate,
            cap,
            scheduled_rate,
            sent_rate,
            completed_rate: summary.request_throughput,
            slot_wait,
            dispatch_lag,
            waited_for_slot,
            client_cpu_cores,
            rate_achieved,
            client_bottleneck,
            server_kept_up,
            ttft_p50_first_last_quarter: quarters,
            dispatch_lag_p50_first_last_quarter: lag_quarters,
            unreliable: Vec::new(),
            verdicts: Vec::new(),
            notes: Vec::new(),
        };
        check.judge(ttft.p50);
        if jitter {
            check.notes.push(format!(
                "the client sent requests up to {:.2} ms after they were due (p99 {:.2} ms; \
                 timer and scheduling jitter, not growing through the run): TTFT and E2E from \
                 the schedule include it",
                check.dispatch_lag.max * 1e3,
                check.dispatch_lag.p99 * 1e3
            ));
        }
        check
    }

    fn judge(&mut self, ttft_p50: f64) {
        let ms = |s: f64| s * 1e3;
        if self.waited_for_slot > 0 {
            let cap = self
                .cap
                .map_or(String::new(), |c| format!(" of the {c} allowed in flight"));
            self.verdicts.push(format!(
                "{} requests waited in the client for a slot{cap} (p99 {:.1} ms, max {:.1} ms): \
                 TTFT and E2E timed from the send leave that wait out; read them from the schedule",
                self.waited_for_slot,
                ms(self.slot_wait.p99),
                ms(self.slot_wait.max)
            ));
            self.unreliable
                .extend(["ttft", "ttst", "ttfot", "e2e", "e2e_stream", "ntpot"]);
        }
        if !self.rate_achieved
            && let (Some(asked), Some(sent)) = (self.scheduled_rate, self.sent_rate)
        {
            let nominal = self
                .offered_rate
                .map_or(String::new(), |r| format!(" (--rate {r})"));
            self.verdicts.push(format!(
                "the asked rate was not achieved: the schedule asked {asked:.2} req/s{nominal}, \
                 the client sent {sent:.2} req/s"
            ));
        }
        if self.client_bottleneck {
            let cpu = self.client_cpu_cores.map_or(String::new(), |c| {
                format!("; the bench process used {c:.2} CPU cores")
            });
            self.verdicts.push(format!(
                "the client fell behind its own schedule: it sent requests that were due and had a \
                 slot p99 {:.2} ms late (max {:.2} ms), against a TTFT p50 of {:.2} ms{cpu}. The \
                 client was the bottleneck: every latency may hold its own delay, and the load \
                 it reached is not the load asked for",
                ms(self.dispatch_lag.p99),
                ms(self.dispatch_lag.max),
                ms(ttft_p50)
            ));
            self.unreliable.extend(["ttft", "itl", "tpot", "e2e"]);
        }
        if let (Some(false), Some((first, last))) =
            (self.server_kept_up, self.ttft_p50_first_last_quarter)
        {
            self.verdicts.push(format!(
                "the server did not keep up: TTFT p50 grew from {:.1} ms (first quarter of \
                 requests) to {:.1} ms (last quarter); its queue grew through the run, so the \
                 latency percentiles depend on the run's length, not on the rate alone",
                ms(first),
                ms(last)
            ));
            self.unreliable
                .extend(["ttft", "e2e", "ttft_from_schedule", "e2e_from_schedule"]);
        }
        self.unreliable.sort_unstable();
        self.unreliable.dedup();
    }

    /// The lines under the table.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let ms = |s: f64| s * 1e3;
        let rate = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{r:.2} req/s"));
        let asked = match self.offered_rate {
            Some(r) => format!("asked {r} req/s · schedule {}", rate(self.scheduled_rate)),
            None => format!("schedule {}", rate(self.scheduled_rate)),
        };
        let _ = writeln!(
            out,
            "  load          {asked} · sent {} · completed {:.2} req/s",
            rate(self.sent_rate),
            self.completed_rate
        );
        let cpu = self
            .client_cpu_cores
            .map_or(String::new(), |c| format!(" · CPU {c:.2} cores"));
        let _ = writeln!(
            out,
            "  client        dispatch lag p50 {:.2} · p99 {:.2} · max {:.2} ms · slot wait p99 {:.1} ms{cpu}",
            ms(self.dispatch_lag.p50),
            ms(self.dispatch_lag.p99),
            ms(self.dispatch_lag.max),
            ms(self.slot_wait.p99),
        );
        for verdict in &self.verdicts {
            let _ = writeln!(out, "  warning: {verdict}");
        }
        for note in &self.notes {
            let _ = writeln!(out, "  note: {note}");
        }
        if !self.unreliable.is_empty() {
            let _ = writeln!(out, "  unreliable: {}", self.unreliable.join(", "));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slo::Slo;
    use crate::summary::summarize;
    use crate::tests::manual_run::{MS, Run};
    use crate::workload::ArrivalKind;

    /// The check of `run`, sent through `stages`.
    fn check(stages: &[Stage], run: &Run, cpu: Option<(Duration, Duration)>) -> LoadCheck {
        let summary = summarize(&run.measured, &run.gaps, &Slo::default());
        LoadCheck::of(stages, &run.measured, &summary, cpu)
    }

    fn rate_stage(rate: f64, cap: Option<usize>) -> Vec<Stage> {
        vec![Stage::requests(
            Load::Rate {
                rate,
                kind: ArrivalKind::Constant,
                max_concurrency: cap,
                burstiness: 1.0,
                ramp: None,
            },
            16,
        )]
    }

    /// A server of 200 ms service, one at a time, driven at 10 req/s with a cap of 1: each
    /// request waits for the one before, the sends fall behind the schedule.
    #[test]
    fn a_capped_run_that_cannot_keep_up_says_so() {
        let mut run = Run::new();
        for k in 0..16u64 {
            let due = Duration::from_millis(100 * k);
            let sent = Duration::from_millis(200 * k);
            run.ok(sent, 20 * MS, 10 * MS, 19);
            run.due(due, sent);
        }
        let check = check(&rate_stage(10.0, Some(1)), &run, None);
        assert!(!check.rate_achieved, "{check:?}");
        assert!((check.scheduled_rate.unwrap() - 10.0).abs() < 1e-9);
        assert!((check.sent_rate.unwrap() - 5.0).abs() < 1e-9);
        assert_eq!(check.waited_for_slot, 15);
        assert!((check.slot_wait.max - 1.5).abs() < 1e-9);
        assert!(!check.client_bottleneck, "slots, not the client");
        assert!(check.unreliable.contains(&"e2e"));
        let text = check.render();
        assert!(text.contains("asked rate was not achieved"), "{text}");
        assert!(text.contains("waited in the client for a slot"), "{text}");
    }

    #[test]
    fn a_client_late_with_free_slots_is_the_bottleneck() {
        let mut run = Run::new();
        for k in 0..16u64 {
            let due = Duration::from_millis(10 * k);
            let sent = due + Duration::from_millis(5 + k);
            run.ok(sent, 20 * MS, 1 * MS, 3);
            run.due(due, due);
        }
        let check = check(
            &rate_stage(100.0, None),
            &run,
            Some((Duration::from_millis(950), Duration::from_secs(1))),
        );
        assert!(check.client_bottleneck, "{check:?}");
        assert_eq!(check.waited_for_slot, 0);
        assert!((check.client_cpu_cores.unwrap() - 0.95).abs() < 1e-9);
        let text = check.render();
        assert!(text.contains("client was the bottleneck"), "{text}");
        assert!(text.contains("0.95 CPU cores"), "{text}");
    }

    #[test]
    fn a_steady_lag_is_jitter_not_a_bottleneck() {
        let mut run = Run::new();
        for k in 0..16u64 {
            let due = Duration::from_millis(100 * k);
            let lag = Duration::from_micros(1_000 + 3_000 * (k % 2));
            run.ok(due + lag, 20 * MS, 10 * MS, 5);
            run.due(due, due);
        }
        let check = check(&rate_stage(10.0, None), &run, None);
        assert!(
            !check.client_bottleneck && check.verdicts.is_empty(),
            "{check:?}"
        );
        assert!(check.unreliable.is_empty(), "{check:?}");
        assert!(
            check
                .render()
                .contains("note: the client sent requests up to 4.00 ms")
        );
    }

    #[test]
    fn a_run_on_schedule_has_no_verdict() {
        let mut run = Run::new();
        for k in 0..16u64 {
            let due = Duration::from_millis(100 * k);
            run.ok(due + Duration::from_micros(50), 20 * MS, 10 * MS, 5);
            run.due(due, due);
        }
        let check = check(&rate_stage(10.0, None), &run, None);
        assert!(check.rate_achieved && !check.client_bottleneck, "{check:?}");
        assert_eq!(check.server_kept_up, Some(true));
        assert!(check.verdicts.is_empty() && check.unreliable.is_empty());
    }

    #[test]
    fn a_growing_queue_in_the_server_is_not_keeping_up() {
        let mut run = Run::new();
        for k in 0..16u64 {
            let due = Duration::from_millis(50 * k);
            run.ok(due, MS * (20 + 30 * k as u32), 10 * MS, 5);
            run.due(due, due);
        }
        let check = check(&rate_stage(20.0, None), &run, None);
        assert_eq!(check.server_kept_up, Some(false), "{check:?}");
        assert!(check.render().contains("server did not keep up"));
    }
}
