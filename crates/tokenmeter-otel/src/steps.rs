//! [`OtelEngine`]: one engine's slots (steps, KV-cache usage, preemptions), with their
//! attribute sets prepared once per engine.

use std::fmt;

use tokenmeter::conventions::{EngineSignal, Feed, StepField, Value};
use tokenmeter::sink::{EngineSink, Step};
use tokenmeter::{Labels, Role};

use crate::attrs;
use crate::instruments::Instruments;
use crate::series::Slot;

/// What [`OtelSink`](crate::OtelSink) hands the meter for an engine: per step, a measurement
/// per step row with an attribute slice prepared here. No allocation.
pub(crate) struct OtelEngine {
    steps: Box<[Slot<StepField>]>,
    signals: Box<[Slot<EngineSignal>]>,
}

impl OtelEngine {
    pub(crate) fn new(instruments: &Instruments, labels: &Labels<'_>) -> Self {
        let (mut steps, mut signals) = (Vec::new(), Vec::new());
        for (row, instrument) in instruments.rows.iter() {
            let sets = || attrs::sets(row.attrs, labels, Role::Server);
            match row.feed {
                Feed::Step(f) => steps.push(Slot::new(f, instrument, row.attrs, sets())),
                Feed::Engine(s) => signals.push(Slot::new(s, instrument, row.attrs, sets())),
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

impl EngineSink for OtelEngine {
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

impl fmt::Debug for OtelEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelEngine")
            .field("steps", &self.steps.len())
            .field("signals", &self.signals.len())
            .finish_non_exhaustive()
    }
}
