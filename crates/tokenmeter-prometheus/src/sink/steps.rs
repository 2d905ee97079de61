//! [`StepHandles`]: one engine's step metrics, registered once when the engine asks the meter
//! for its [`StepRecorder`](tokenmeter::sink::StepRecorder), then only indexed.

use metrics::{Counter, Histogram, Label};
use tokenmeter::Labels;
use tokenmeter::sink::{EngineSink, Step, StepKind};

use super::labels::{self, with};
use super::target::Target;
use crate::names::{label, semconv, vllm};
use crate::profile::Profile;

/// The step kinds, in slot order. A kind added to the core later lands in the `mixed` slot.
const KINDS: [StepKind; 3] = [StepKind::Prefill, StepKind::Decode, StepKind::Mixed];

fn kind_index(kind: StepKind) -> usize {
    match kind {
        StepKind::Prefill => 0,
        StepKind::Decode => 1,
        _ => 2,
    }
}

/// Every handle one engine's steps need, one per step kind where the metric has `kind`.
pub(crate) struct StepHandles {
    duration: [Histogram; 3],
    batch_size: [Histogram; 3],
    tokens: [Counter; 3],
    /// `vllm:iteration_tokens_total` (no `kind`, as in vLLM); a no-op in the semconv profile.
    iteration_tokens: Histogram,
}

impl StepHandles {
    /// Registers the handles for an engine labelled by `engine`'s provider and models
    /// (semconv, without the operation, like the engine gauges) or by `model_name` (vLLM).
    pub(crate) fn new(profile: Profile, target: &Target, engine: &Labels<'_>) -> Self {
        let base = match profile {
            Profile::Semconv => labels::semconv(engine, false),
            Profile::Vllm => labels::vllm(engine),
        };
        let by_kind = |kind: StepKind| -> Vec<Label> {
            with(&base, label::STEP_KIND.prometheus, kind.as_str())
        };
        let iteration_tokens = match profile {
            Profile::Vllm => target.histogram(vllm::ITERATION_TOKENS.prometheus, base.clone()),
            Profile::Semconv => Histogram::noop(),
        };
        Self {
            duration: KINDS.map(|kind| {
                target.histogram(semconv::ENGINE_STEP_DURATION.prometheus, by_kind(kind))
            }),
            batch_size: KINDS
                .map(|kind| target.histogram(semconv::ENGINE_BATCH_SIZE.prometheus, by_kind(kind))),
            tokens: KINDS
                .map(|kind| target.counter(semconv::ENGINE_STEP_TOKENS.prometheus, by_kind(kind))),
            iteration_tokens,
        }
    }
}

impl EngineSink for StepHandles {
    fn step(&self, step: &Step) {
        let slot = kind_index(step.kind);
        self.duration[slot].record(step.duration.as_secs_f64());
        self.batch_size[slot].record(f64::from(step.batch_size));
        self.tokens[slot].increment(u64::from(step.tokens));
        self.iteration_tokens.record(f64::from(step.tokens));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_slot_in_order() {
        for (slot, kind) in KINDS.into_iter().enumerate() {
            assert_eq!(kind_index(kind), slot, "{kind:?}");
        }
    }
}
