//! One rate of a sweep: its requests judged after a warm-up, whether the server kept up, the
//! attainment's interval, and whether it passed.

use tokenmeter::report::{Z95, wilson};

use serde::Serialize;

use crate::args::BenchArgs;
use crate::collect::Collector;
use crate::load_check::rate_over;
use crate::reqs::Reqs;
use crate::saturation::{StoppedEarly, Watch};
use crate::summary::{BenchSummary, summarize};

/// A step with fewer requests than this is too short for a steady state: it is warned about.
pub(crate) const MIN_STEADY_REQUESTS: u64 = 30;

/// One rate of a sweep.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct SweepStep {
    /// Offered rate (requests per second).
    pub(crate) rate: f64,
    /// The summary of the step's requests after its warm-up (see [`judge`]).
    pub(crate) summary: BenchSummary,
    /// Requests sent before the step was judged, left out of its summary (its warm-up).
    pub(crate) warmup_requests: u64,
    /// The rate the server answered at: (n − 1) ÷ the span of the judged successes' ends.
    pub(crate) served_rate: Option<f64>,
    /// The rate the schedule asked for: (n − 1) ÷ the span of the judged requests' due times.
    pub(crate) scheduled_rate: Option<f64>,
    /// The server kept up: not stopped early, and its served rate at least [`SERVED_SHARE`]
    /// of the scheduled rate.
    pub(crate) kept_up: bool,
    /// The Wilson 95% interval of the attainment.
    pub(crate) attainment_interval: Option<(f64, f64)>,
    /// Times the step was extended because the interval straddled the target.
    pub(crate) extended: u32,
    /// Why the step stopped early, if it did.
    pub(crate) stopped_early: Option<StoppedEarly>,
}

/// A step kept up when it served at least this share of its scheduled rate.
pub(crate) const SERVED_SHARE: f64 = 0.9;

/// A step whose attainment interval straddles the target is extended by its own size this
/// many times at most; then the point estimate decides, with a warning.
pub(crate) const MAX_EXTENSIONS: u32 = 2;

impl SweepStep {
    /// Whether the step reached `goal`: the server kept up, and the attainment's interval lies
    /// at or above the goal (its point estimate decides when the interval straddles it).
    pub(crate) fn passes(&self, goal: f64) -> bool {
        self.kept_up
            && match self.attainment_interval {
                Some((lo, _)) if lo >= goal => true,
                Some((_, hi)) if hi < goal => false,
                _ => self.summary.attainment >= goal,
            }
    }

    /// Whether the attainment interval straddles `goal` (more requests would decide it).
    pub(super) fn undecided(&self, goal: f64) -> bool {
        self.attainment_interval
            .is_some_and(|(lo, hi)| lo < goal && goal <= hi)
    }
}

/// The warning for a step too short for a steady state, if it is.
pub(crate) fn short_step(step: &SweepStep) -> Option<String> {
    let n = step.summary.requests;
    (n < MIN_STEADY_REQUESTS).then(|| {
        format!(
            "the sweep step at {:.2} req/s had {n} requests, too few for a steady state (at \
             least {MIN_STEADY_REQUESTS}: raise -n)",
            step.rate
        )
    })
}

/// The step at `rate` from its requests so far (`measured`, in id order): the first tenth of
/// them (at least one) is its warm-up, the rest is judged.
pub(super) fn judge(
    rate: f64,
    measured: Reqs<'_>,
    into: &Collector,
    args: &BenchArgs,
    watch: &Watch,
) -> SweepStep {
    let warmup = (measured.len() / 10).max(1).min(measured.len());
    let judged = measured.tail(warmup);
    let summary = summarize(judged, &into.done().gaps, &args.slo);
    let served_rate = rate_over(
        judged
            .iter()
            .filter(|m| m.succeeded())
            .filter_map(|m| Some(m.record()?.end()))
            .collect(),
    );
    let scheduled_rate = rate_over(judged.iter().filter_map(|m| m.due()).collect());
    let stopped_early = watch.stopped().cloned();
    let kept_up = stopped_early.is_none()
        && match (served_rate, scheduled_rate) {
            (Some(served), Some(asked)) => served >= SERVED_SHARE * asked,
            _ => summary.successful > 0,
        };
    SweepStep {
        rate,
        attainment_interval: wilson(summary.good_requests, summary.requests, Z95),
        summary,
        warmup_requests: warmup as u64,
        served_rate,
        scheduled_rate,
        kept_up,
        extended: 0,
        stopped_early,
    }
}
