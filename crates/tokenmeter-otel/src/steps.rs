//! One engine's slots (steps, KV-cache usage, preemptions), with their attribute sets
//! prepared once per engine: the core's [`EngineRows`] loop over this exporter's [`Slot`]s.
//! Recording allocates nothing, except an info value (a new attribute set, rarely).

use std::sync::{Mutex, PoisonError};

use opentelemetry::KeyValue;
use tokenmeter::conventions::Value;
use tokenmeter::sink::{EngineRows, RecordValue};
use tokenmeter::{Labels, Role};

use crate::attrs;
use crate::instruments::Instruments;
use crate::series::Slot;

/// An engine row's slot, and for an info row the attribute set it last recorded.
pub(crate) struct EngineSlot {
    slot: Slot<()>,
    /// The info row's current attribute set: recorded 0 when another one replaces it, so the
    /// stale set reads 0 (as in the Prometheus exporter) and one set carries the value.
    current: Mutex<Option<Vec<KeyValue>>>,
}

impl RecordValue for EngineSlot {
    fn record(&self, variant: usize, value: Value) {
        self.slot.record(variant, value);
    }

    /// An info row (cache configuration, LoRA adapters): the engine's attributes plus `attrs`,
    /// which the core bounds. Allocates, but info values change rarely.
    fn record_info(&self, attrs: &[(&'static str, &str)], value: Value) {
        let set: Vec<KeyValue> = self
            .slot
            .set(0)
            .iter()
            .cloned()
            .chain(
                attrs
                    .iter()
                    .map(|(key, value)| KeyValue::new(*key, (*value).to_owned())),
            )
            .collect();
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(previous) = current.take().filter(|previous| *previous != set) {
            self.slot.instrument.record(Value::Level(0.0), &previous);
        }
        self.slot.instrument.record(value, &set);
        *current = Some(set);
    }
}

/// The slots of every engine row of `instruments`, labelled by `labels`.
pub(crate) fn engine_rows(
    instruments: &Instruments,
    labels: &Labels<'_>,
) -> EngineRows<EngineSlot> {
    EngineRows::new(
        instruments
            .rows
            .iter()
            .filter(|(row, _)| row.feed.is_engine())
            .map(|(row, instrument)| {
                let sets = attrs::sets(row.attrs, labels, Role::Server);
                let slot = Slot::new((), instrument, row.attrs, sets);
                let current = Mutex::new(None);
                (row, EngineSlot { slot, current })
            }),
    )
}
