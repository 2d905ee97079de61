//! One engine's handles (steps, KV-cache usage, preemptions), registered once when the engine
//! asks the meter for its [`EngineRecorder`](tokenmeter::sink::EngineRecorder), then only
//! indexed: the core's [`EngineRows`] loop over this exporter's [`Slot`]s.

use tokenmeter::conventions::Value;
use tokenmeter::sink::{EngineRows, RecordValue};
use tokenmeter::{Labels, Role};

use super::handle::Slot;
use super::labels;
use super::target::RecorderTarget;
use crate::profile::Profile;
use crate::rows::PromRow;

impl RecordValue for Slot<()> {
    fn record(&self, variant: usize, value: Value) {
        Slot::record(self, variant, value);
    }
}

/// Registers the handles of every engine row, labelled by `engine`'s provider and models
/// (semconv, without the operation) or by `model_name` (vLLM).
pub(crate) fn engine_rows(
    profile: Profile,
    target: &RecorderTarget,
    rows: &[PromRow],
    engine: &Labels<'_>,
) -> EngineRows<Slot<()>> {
    EngineRows::new(
        rows.iter()
            .filter(|row| row.row.feed.is_engine())
            .map(|row| {
                let attrs = row.row.attrs;
                let labels = |variant| labels::of(profile, attrs, engine, Role::Server, variant);
                (&row.row, Slot::new(target, row, (), labels))
            }),
    )
}
