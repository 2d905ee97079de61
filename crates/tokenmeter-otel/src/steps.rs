//! One engine's slots (steps, KV-cache usage, preemptions), with their attribute sets
//! prepared once per engine: the core's [`EngineRows`] loop over this exporter's [`Slot`]s.
//! Recording allocates nothing, except an info value (a new attribute set, rarely).

use opentelemetry::KeyValue;
use tokenmeter::conventions::Value;
use tokenmeter::sink::{EngineRows, RecordValue};
use tokenmeter::{Labels, Role};

use crate::attrs;
use crate::instruments::Instruments;
use crate::series::Slot;

impl RecordValue for Slot<()> {
    fn record(&self, variant: usize, value: Value) {
        Slot::record(self, variant, value);
    }

    /// An info row (cache configuration, LoRA adapters): the engine's attributes plus `attrs`,
    /// which the core bounds. Allocates, but info values change rarely.
    fn record_info(&self, attrs: &[(&'static str, &str)], value: Value) {
        let set: Vec<KeyValue> = self
            .set(0)
            .iter()
            .cloned()
            .chain(
                attrs
                    .iter()
                    .map(|(key, value)| KeyValue::new(*key, (*value).to_owned())),
            )
            .collect();
        self.instrument.record(value, &set);
    }
}

/// The slots of every engine row of `instruments`, labelled by `labels`.
pub(crate) fn engine_rows(instruments: &Instruments, labels: &Labels<'_>) -> EngineRows<Slot<()>> {
    EngineRows::new(
        instruments
            .rows
            .iter()
            .filter(|(row, _)| row.feed.is_engine())
            .map(|(row, instrument)| {
                let sets = attrs::sets(row.attrs, labels, Role::Server);
                (row, Slot::new((), instrument, row.attrs, sets))
            }),
    )
}
