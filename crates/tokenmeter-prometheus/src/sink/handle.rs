//! [`Handle`]: one registered `metrics` handle of a row, and [`Slot`]: a row's handles for
//! every variant of its attribute set, registered once and then only indexed.

use metrics::{Counter, Gauge, Histogram, Label};
use tokenmeter::conventions::{AttrSet, InstrumentKind, Value};

use super::target::RecorderTarget;
use crate::rows::PromRow;

/// A registered handle.
pub(crate) enum Handle {
    Histogram(Histogram),
    Counter(Counter),
    /// A gauge that moves by deltas (an OTel up-down counter).
    UpDown(Gauge),
    /// A gauge that is set.
    Gauge(Gauge),
}

impl Handle {
    /// Registers the handle of `row` with `labels`.
    pub(crate) fn register(target: &RecorderTarget, row: &PromRow, labels: Vec<Label>) -> Self {
        let name = row.name.clone().into_owned();
        match row.kind() {
            InstrumentKind::Histogram => Handle::Histogram(target.histogram(name, labels)),
            InstrumentKind::Counter => Handle::Counter(target.counter(name, labels)),
            InstrumentKind::UpDownCounter => Handle::UpDown(target.gauge(name, labels)),
            InstrumentKind::Gauge => Handle::Gauge(target.gauge(name, labels)),
        }
    }

    /// Records `value`: a histogram sample, a counter increment, a gauge change or setting.
    #[inline]
    pub(crate) fn record(&self, value: Value) {
        match self {
            Handle::Histogram(h) => h.record(value.as_f64()),
            Handle::Counter(c) => c.increment(value.as_u64()),
            Handle::UpDown(g) => g.increment(value.as_f64()),
            Handle::Gauge(g) => g.set(value.as_f64()),
        }
    }
}

/// A row's handles, one per variant of its attribute set, and the field it reads.
pub(crate) struct Slot<F> {
    pub(crate) field: F,
    pub(crate) attrs: AttrSet,
    pub(crate) handles: Box<[Handle]>,
}

impl<F: Copy> Slot<F> {
    /// Registers every variant of `row`, labelled by `labels(variant)`.
    pub(crate) fn new(
        target: &RecorderTarget,
        row: &PromRow,
        field: F,
        labels: impl Fn(usize) -> Vec<Label>,
    ) -> Self {
        let attrs = row.row.attrs;
        Self {
            field,
            attrs,
            handles: (0..attrs.variants())
                .map(|variant| Handle::register(target, row, labels(variant)))
                .collect(),
        }
    }

    /// A slot with no handle (an info row's, whose handles come with their attributes).
    pub(crate) fn empty(attrs: AttrSet) -> Self
    where
        F: Default,
    {
        Self {
            field: F::default(),
            attrs,
            handles: Box::new([]),
        }
    }

    /// Records `value` into the handle of `variant` (the first one if out of range).
    #[inline]
    pub(crate) fn record(&self, variant: usize, value: Value) {
        if let Some(handle) = self.handles.get(variant).or(self.handles.first()) {
            handle.record(value);
        }
    }

    /// The handle of the first variant, the slot given up: the only one of a row whose
    /// attributes do not vary with the event (every per-item row).
    pub(crate) fn into_first(self) -> Option<Handle> {
        self.handles.into_vec().into_iter().next()
    }
}
