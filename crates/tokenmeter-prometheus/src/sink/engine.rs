//! [`EngineHandles`]: one engine's handles (steps, KV-cache usage, preemptions), registered
//! once when the engine asks the meter for its
//! [`EngineRecorder`](tokenmeter::sink::EngineRecorder), then only indexed.

use tokenmeter::conventions::{EngineSignal, Feed, StepField, Value};
use tokenmeter::sink::{EngineSink, Step};
use tokenmeter::{Labels, Role};

use super::handle::Slot;
use super::labels;
use super::target::RecorderTarget;
use crate::profile::Profile;
use crate::rows::PromRow;

/// Every engine row's handles.
pub(crate) struct EngineHandles {
    steps: Box<[Slot<StepField>]>,
    signals: Box<[Slot<EngineSignal>]>,
}

impl EngineHandles {
    /// Registers the handles of every engine row, labelled by `engine`'s provider and models
    /// (semconv, without the operation) or by `model_name` (vLLM).
    pub(crate) fn new(
        profile: Profile,
        target: &RecorderTarget,
        rows: &[PromRow],
        engine: &Labels<'_>,
    ) -> Self {
        let (mut steps, mut signals) = (Vec::new(), Vec::new());
        for row in rows {
            let attrs = row.row.attrs;
            let labels = |variant| labels::of(profile, attrs, engine, Role::Server, variant);
            match row.row.feed {
                Feed::Step(field) => steps.push(Slot::new(target, row, field, labels)),
                Feed::Engine(signal) => signals.push(Slot::new(target, row, signal, labels)),
                _ => {}
            }
        }
        Self {
            steps: steps.into(),
            signals: signals.into(),
        }
    }

    fn signal(&self, signal: EngineSignal, value: Value) {
        for slot in self.signals.iter().filter(|s| s.field == signal) {
            slot.record(0, value);
        }
    }
}

impl EngineSink for EngineHandles {
    fn step(&self, step: &Step) {
        for slot in self.steps.iter() {
            slot.record(slot.attrs.step_variant(step), slot.field.read(step));
        }
    }

    fn kv_cache_usage(&self, fraction: f64) {
        self.signal(EngineSignal::KvCacheUsage, Value::Level(fraction));
    }

    fn preemptions(&self, count: u64) {
        self.signal(EngineSignal::Preemptions, Value::Count(count));
    }
}
