//! [`OtelSteps`]: one engine's step instruments and attribute sets, prepared once per engine.

use std::fmt;
use std::sync::Arc;

use tokenmeter::Labels;
use tokenmeter::sink::{EngineSink, Step, StepKind};

use crate::attrs::{self, Set};
use crate::instruments::Instruments;

/// What [`OtelSink`](crate::OtelSink) hands the meter for an engine's steps: per step, three
/// measurements with an attribute slice prepared here. No allocation.
pub(crate) struct OtelSteps {
    instruments: Arc<Instruments>,
    /// The engine attributes plus `kind`, in [`StepKind::ALL`] order.
    attrs: [Set; StepKind::ALL.len()],
}

impl OtelSteps {
    pub(crate) fn new(instruments: Arc<Instruments>, labels: &Labels<'_>) -> Self {
        Self {
            instruments,
            attrs: attrs::steps(labels, StepKind::ALL),
        }
    }
}

impl EngineSink for OtelSteps {
    fn step(&self, step: &Step) {
        let attrs = &*self.attrs[step.kind.index()];
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
