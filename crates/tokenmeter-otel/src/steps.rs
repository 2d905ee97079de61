//! [`OtelSteps`]: one engine's step instruments and attribute sets, prepared once per engine.

use std::fmt;
use std::sync::Arc;

use tokenmeter::Labels;
use tokenmeter::sink::{EngineSink, Step, StepKind};

use crate::attrs::{self, Set};
use crate::instruments::Instruments;

/// The step kinds, in slot order. A kind added to the core later records in the `mixed` slot.
const KINDS: [StepKind; 3] = [StepKind::Prefill, StepKind::Decode, StepKind::Mixed];

fn kind_index(kind: StepKind) -> usize {
    match kind {
        StepKind::Prefill => 0,
        StepKind::Decode => 1,
        _ => 2,
    }
}

/// What [`OtelSink`](crate::OtelSink) hands the meter for an engine's steps: per step, three
/// measurements with an attribute slice prepared here. No allocation.
pub(crate) struct OtelSteps {
    instruments: Arc<Instruments>,
    /// The engine attributes plus `kind`, in [`KINDS`] order.
    attrs: [Set; 3],
}

impl OtelSteps {
    pub(crate) fn new(instruments: Arc<Instruments>, labels: &Labels<'_>) -> Self {
        Self {
            instruments,
            attrs: attrs::steps(labels, KINDS),
        }
    }
}

impl EngineSink for OtelSteps {
    fn step(&self, step: &Step) {
        let attrs = &*self.attrs[kind_index(step.kind)];
        let i = &*self.instruments;
        i.step_duration.record(step.duration.as_secs_f64(), attrs);
        i.batch_size.record(u64::from(step.batch_size), attrs);
        i.step_tokens.add(u64::from(step.tokens), attrs);
    }
}

impl fmt::Debug for OtelSteps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelSteps")
            .field("attributes", &self.attrs)
            .finish_non_exhaustive()
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
