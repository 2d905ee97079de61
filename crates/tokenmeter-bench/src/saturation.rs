//! Stopping a run that can no longer say anything new: a server that is evidently not keeping
//! up with an open loop (`--stop-on-saturation`, on by default in `--sweep`), or an error storm
//! (`--max-error-rate R`).
//!
//! The runner shows [`Watch`] every request as it ends, in the order they end. **Saturation**
//! needs two pieces of evidence at once, both from the schedule of a constant open-loop rate:
//!
//! - *diverging latency*: the TTFT from the schedule (the time from when a request was due to
//!   its first token; its end for a request without one), as medians of consecutive blocks of
//!   [`BLOCK`] requests, rose over the last three blocks and the latest is above twice the
//!   first block's plus 50 ms: the queue (in the server, or in the client behind a cap) grows
//!   with every arrival;
//! - *answers falling behind arrivals*: fewer requests have ended than had been due one
//!   typical latency (the first block's median) earlier, by more than three Poisson standard
//!   deviations (3 √N) plus 2.
//!
//! A server that keeps up shows neither for long: noise makes one block slower, not three in a
//! row each slower and the last twice the first. **An error storm**: at least
//! [`ERROR_WINDOW`] requests ended, and of the last [`ERROR_WINDOW`] a share above the limit
//! failed (errors of any class; cancellations are not errors).
//!
//! Once tripped, the runner sends nothing more; what is in flight finishes (and is reported).

use std::time::Duration;

use serde::Serialize;

use crate::measured::Measured;

/// Requests per block of the latency trend.
pub(crate) const BLOCK: usize = 8;

/// The error-rate window, in requests.
pub(crate) const ERROR_WINDOW: usize = 20;

/// Why a run stopped early.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct StoppedEarly {
    /// `saturation` or `error_rate`.
    pub(crate) reason: &'static str,
    /// The evidence, in words.
    pub(crate) verdict: String,
    /// Requests that had ended when it tripped.
    pub(crate) after_requests: u64,
}

/// Watches requests as they end (see the module).
#[derive(Clone, Debug, Default)]
pub(crate) struct Watch {
    /// The constant open-loop rate to hold the answers against (`None`: no saturation check).
    rate: Option<f64>,
    max_error_rate: Option<f64>,
    /// When the first request was due (bench clock).
    start: Option<Duration>,
    ended: u64,
    block: Vec<f64>,
    medians: Vec<f64>,
    recent: std::collections::VecDeque<bool>,
    stopped: Option<StoppedEarly>,
}

impl Watch {
    /// A watch that never trips.
    pub(crate) fn off() -> Self {
        Self::default()
    }

    /// A watch for saturation at the constant open-loop `rate` (when given) and for an error
    /// rate above `max_error_rate` (when given).
    pub(crate) fn new(rate: Option<f64>, max_error_rate: Option<f64>) -> Self {
        Self {
            rate: rate.filter(|r| r.is_finite() && *r > 0.0),
            max_error_rate,
            ..Self::default()
        }
    }

    /// Why the run should stop, once it should.
    pub(crate) fn stopped(&self) -> Option<&StoppedEarly> {
        self.stopped.as_ref()
    }

    /// Takes a request that ended.
    pub(crate) fn ended(&mut self, measured: &Measured) {
        if self.stopped.is_some() {
            return;
        }
        self.ended += 1;
        if let Some(due) = measured.due() {
            self.start = Some(self.start.map_or(due, |s| s.min(due)));
        }
        self.errors(measured);
        if self.stopped.is_none() {
            self.saturation(measured);
        }
    }

    fn errors(&mut self, measured: &Measured) {
        let Some(limit) = self.max_error_rate else {
            return;
        };
        let failed = measured.outcome().error_class().is_some();
        self.recent.push_back(failed);
        if self.recent.len() > ERROR_WINDOW {
            self.recent.pop_front();
        }
        let errors = self.recent.iter().filter(|f| **f).count();
        let share = errors as f64 / self.recent.len() as f64;
        if self.recent.len() == ERROR_WINDOW && share > limit {
            self.stopped = Some(StoppedEarly {
                reason: "error_rate",
                verdict: format!(
                    "{errors} of the last {ERROR_WINDOW} requests failed ({:.0}%, above \
                     --max-error-rate {limit})",
                    share * 100.0
                ),
                after_requests: self.ended,
            });
        }
    }

    fn saturation(&mut self, measured: &Measured) {
        let (Some(rate), Some(start), Some(record)) = (self.rate, self.start, measured.record())
        else {
            return;
        };
        let waited = measured
            .ttft_from_schedule()
            .or_else(|| measured.latency_from_schedule())
            .map_or(0.0, |d| d.as_secs_f64());
        self.block.push(waited);
        if self.block.len() == BLOCK {
            let mut block = std::mem::take(&mut self.block);
            block.sort_by(f64::total_cmp);
            self.medians
                .push((block[BLOCK / 2 - 1] + block[BLOCK / 2]) / 2.0);
        }
        let [first, .., a, b, c] = self.medians[..] else {
            return;
        };
        let diverging = a < b && b < c && c > 2.0 * first + 0.050;
        // Arrivals due up to one typical latency before this end should have ended by now.
        let elapsed = record.end().saturating_sub(start).as_secs_f64();
        let expected = rate * (elapsed - first).max(0.0);
        let behind = expected - self.ended as f64;
        let falling_behind = behind > 3.0 * expected.sqrt() + 2.0;
        if diverging && falling_behind {
            self.stopped = Some(StoppedEarly {
                reason: "saturation",
                verdict: format!(
                    "the server is not keeping up with {rate} req/s: TTFT from the schedule \
                     (median of {BLOCK} requests) grew from {:.0} ms to {:.0} ms, and {} \
                     requests had ended where about {:.0} were due",
                    first * 1e3,
                    c * 1e3,
                    self.ended,
                    expected
                ),
                after_requests: self.ended,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use tokenmeter::ErrorClass;

    use super::*;
    use crate::tests::manual_run::{MS, Run};

    /// `n` requests due every `1/rate` s, each served `service` after the one before (one at a
    /// time, first token at its start + 10 ms), fed to a watch at `rate`.
    fn served(rate: f64, service: Duration, n: u32) -> Watch {
        let mut run = Run::new();
        let mut free = Duration::ZERO;
        let mut watch = Watch::new(Some(rate), None);
        for k in 0..n {
            let due = Duration::from_secs_f64(f64::from(k) / rate);
            let start = due.max(free);
            run.ok(start, 10 * MS, service.saturating_sub(15 * MS) / 3, 4);
            free = start + service;
            run.due(due, start);
            watch.ended(run.measured.last().unwrap());
        }
        watch
    }

    #[test]
    fn a_server_at_half_the_rate_is_saturated() {
        let watch = served(20.0, 100 * MS, 120);
        let stopped = watch.stopped().expect("saturated");
        assert_eq!(stopped.reason, "saturation");
        assert!(stopped.after_requests < 60, "{stopped:?}");
        assert!(stopped.verdict.contains("not keeping up"), "{stopped:?}");
    }

    #[test]
    fn a_server_that_keeps_up_runs_to_the_end() {
        assert_eq!(served(8.0, 100 * MS, 200).stopped(), None);
        // Just below its capacity of 10 req/s.
        assert_eq!(served(9.5, 100 * MS, 200).stopped(), None);
    }

    #[test]
    fn an_error_storm_stops_the_run() {
        let mut run = Run::new();
        let mut watch = Watch::new(None, Some(0.5));
        for k in 0..40u32 {
            let at = MS * (k * 10);
            if k < 10 || k % 4 == 0 {
                run.ok(at, MS, MS, 2);
            } else {
                run.error(at, at + MS, ErrorClass::Overloaded);
            }
            watch.ended(run.measured.last().unwrap());
        }
        let stopped = watch.stopped().expect("tripped");
        assert_eq!(stopped.reason, "error_rate");
        assert!(
            stopped.verdict.contains("--max-error-rate 0.5"),
            "{stopped:?}"
        );
        // Off: never.
        let mut off = Watch::off();
        for m in &run.measured {
            off.ended(m);
        }
        assert_eq!(off.stopped(), None);
    }
}
