//! [`StepHandles`]: one engine's step metrics, registered once when the engine asks the meter
//! for its [`StepRecorder`](tokenmeter::sink::StepRecorder), then only indexed.

use metrics::{Counter, Histogram, Label};
use tokenmeter::Labels;
use tokenmeter::sink::{EngineSink, Step, StepKind};

use super::labels::{self, with};
use super::target::Target;
use crate::names::{label, semconv, vllm};
use crate::profile::Profile;

/// Every handle one engine's steps need, one per step kind where the metric has `kind`.
pub(crate) struct StepHandles {
    duration: [Histogram; StepKind::ALL.len()],
    batch_size: [Histogram; StepKind::ALL.len()],
    tokens: [Counter; StepKind::ALL.len()],
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
            duration: StepKind::ALL.map(|kind| {
                target.histogram(semconv::ENGINE_STEP_DURATION.prometheus, by_kind(kind))
            }),
            batch_size: StepKind::ALL
                .map(|kind| target.histogram(semconv::ENGINE_BATCH_SIZE.prometheus, by_kind(kind))),
            tokens: StepKind::ALL
                .map(|kind| target.counter(semconv::ENGINE_STEP_TOKENS.prometheus, by_kind(kind))),
            iteration_tokens,
        }
    }
}

impl EngineSink for StepHandles {
    fn step(&self, step: &Step) {
        let slot = step.kind.index();
        self.duration[slot].record(step.duration.as_secs_f64());
        self.batch_size[slot].record(f64::from(step.batch_size));
        self.tokens[slot].increment(u64::from(step.tokens));
        self.iteration_tokens.record(f64::from(step.tokens));
    }
}
