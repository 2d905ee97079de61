//! The per-request verdict: good iff it succeeded and met every latency objective.

use tokenmeter::RequestRecord;

use crate::spec::{LatencyMetric, ObjectiveKind, SloClass};
use crate::window::{Contribution, PhaseSums};

/// How one request fared against its class's objectives.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::{Clock, Labels, ManualClock, Meter, sink::InMemorySink};
/// use tokenmeter_slo::{LatencyMetric, Objective, SloClass, Verdict};
///
/// let class = SloClass::new("chat")
///     .objective(Objective::latency(LatencyMetric::Ttft, 95.0, Duration::from_millis(500)))
///     .objective(Objective::success_rate(0.99));
///
/// let time = ManualClock::new();
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().clock(Clock::manual(&time)).sink(memory.clone()).build();
/// let mut request = meter.series(&Labels::server("chat")).start();
/// time.advance(Duration::from_millis(500));
/// request.record_tokens(1); // TTFT exactly at the threshold: inclusive, so good
/// request.succeed();
///
/// let verdict = Verdict::of(&class, &memory.records()[0]);
/// assert!(verdict.good);
/// assert_eq!(verdict.objectives, vec![Some(true), Some(true)]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verdict {
    /// Succeeded (not degraded) and met every latency objective that applied (inclusive ≤).
    pub good: bool,
    /// Per objective, in the class's order: `None` when the request does not count for it
    /// (the value was not observed, or a cancelled request for a rate objective).
    pub objectives: Vec<Option<bool>>,
}

impl Verdict {
    /// Judges `record` against `class`.
    pub fn of(class: &SloClass, record: &RequestRecord) -> Self {
        let objectives: Vec<Option<bool>> =
            class.objectives.iter().map(|o| o.judge(record)).collect();
        let latency_ok = class
            .objectives
            .iter()
            .zip(&objectives)
            .filter(|(o, _)| matches!(o.kind, ObjectiveKind::Latency { .. }))
            .all(|(_, v)| *v != Some(false));
        Self {
            good: record.outcome.is_success() && latency_ok,
            objectives,
        }
    }

    pub(crate) fn contribution<'a>(
        &'a self,
        class: &SloClass,
        record: &RequestRecord,
    ) -> Contribution<'a> {
        let ttft_objective = class
            .objectives
            .iter()
            .zip(&self.objectives)
            .find(|(o, _)| {
                matches!(
                    o.kind,
                    ObjectiveKind::Latency {
                        metric: LatencyMetric::Ttft,
                        ..
                    }
                )
            });
        let ttft_phases = match (ttft_objective, record.ttft) {
            (Some((_, Some(ok))), Some(ttft)) => {
                let queue = record.queue.unwrap_or_default();
                let prefill = record.prefill.unwrap_or_default();
                Some((
                    *ok,
                    PhaseSums {
                        n: 1,
                        queue: queue.as_secs_f64(),
                        prefill: prefill.as_secs_f64(),
                        other: ttft.saturating_sub(queue + prefill).as_secs_f64(),
                    },
                ))
            }
            _ => None,
        };
        Contribution {
            good: self.good,
            output_tokens: record.output_tokens,
            objectives: &self.objectives,
            ttft_phases,
            latencies: LatencyMetric::ALL.map(|m| m.of(record)),
        }
    }
}
