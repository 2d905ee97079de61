//! [`OtelSeries`]: one series' slots, one per row of the table its role records, each with the
//! row's instrument and every attribute variant prepared once; what the hot path touches.

use std::fmt;
use std::time::Duration;

use opentelemetry::KeyValue;
use tokenmeter::conventions::{AttrSet, Feed, FirstTokenField, ItemField, RecordField, Value};
use tokenmeter::sink::{FirstToken, Gauge, Items, SeriesSink};
use tokenmeter::{Labels, RequestRecord};

use crate::attrs::{self, Set};
use crate::instruments::{Instrument, Instruments};

/// A row's instrument, the field it reads and its attribute sets, one per variant.
pub(crate) struct Slot<F> {
    pub(crate) field: F,
    pub(crate) attrs: AttrSet,
    pub(crate) instrument: Instrument,
    pub(crate) sets: Box<[Set]>,
}

impl<F> Slot<F> {
    pub(crate) fn new(field: F, instrument: &Instrument, attrs: AttrSet, sets: Box<[Set]>) -> Self {
        Self {
            field,
            attrs,
            instrument: instrument.clone(),
            sets,
        }
    }

    /// The attribute set of `variant` (the first one if out of range).
    #[inline]
    pub(crate) fn set(&self, variant: usize) -> &[KeyValue] {
        self.sets
            .get(variant)
            .or(self.sets.first())
            .map_or(&[], |set| &**set)
    }

    #[inline]
    pub(crate) fn record(&self, variant: usize, value: Value) {
        self.instrument.record(value, self.set(variant));
    }
}

/// A per-item row: its slot and, with bound instruments, the histogram bound to its set.
struct ItemSlot {
    slot: Slot<ItemField>,
    #[cfg(feature = "bound-instruments")]
    bound: Option<opentelemetry::metrics::BoundHistogram<f64>>,
}

impl ItemSlot {
    /// Records items: the one recording path of `item` and `items`, which picks the bound
    /// instrument, or the attribute set and the histogram, once per call (as the bound path
    /// does, the portable one matches the instrument's kind once per batch, not per item).
    #[inline]
    fn record(&self, items: impl Iterator<Item = (Duration, u32)>) {
        let field = self.slot.field;
        #[cfg(feature = "bound-instruments")]
        if let Some(bound) = &self.bound {
            items.for_each(|(gap, tokens)| bound.record(field.read(gap, tokens).as_f64()));
            return;
        }
        let set = self.slot.set(0);
        match &self.slot.instrument {
            Instrument::Seconds(histogram) => items
                .for_each(|(gap, tokens)| histogram.record(field.read(gap, tokens).as_f64(), set)),
            instrument => {
                items.for_each(|(gap, tokens)| instrument.record(field.read(gap, tokens), set))
            }
        }
    }
}

/// The handles of one series.
pub(crate) struct OtelSeries {
    first_token: Box<[Slot<FirstTokenField>]>,
    items: Box<[ItemSlot]>,
    end: Box<[Slot<RecordField>]>,
    gauges: Box<[Slot<Gauge>]>,
    labels: Set,
}

impl OtelSeries {
    pub(crate) fn new(instruments: &Instruments, labels: &Labels<'_>, bound: bool) -> Self {
        let role = labels.role();
        let (mut first_token, mut items, mut end, mut gauges) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let _ = bound;
        for (row, instrument) in instruments.rows.iter() {
            if !row.roles.includes(role) {
                continue;
            }
            let sets = attrs::sets(row.attrs, labels, role);
            match row.feed {
                Feed::FirstToken(f) => first_token.push(Slot::new(f, instrument, row.attrs, sets)),
                Feed::Item(f) => {
                    let slot = Slot::new(f, instrument, row.attrs, sets);
                    #[cfg(feature = "bound-instruments")]
                    let bound = match (&slot.instrument, bound) {
                        (Instrument::Seconds(h), true) => Some(h.bind(slot.set(0))),
                        _ => None,
                    };
                    items.push(ItemSlot {
                        slot,
                        #[cfg(feature = "bound-instruments")]
                        bound,
                    });
                }
                Feed::End(f) => end.push(Slot::new(f, instrument, row.attrs, sets)),
                Feed::Gauge(g) => gauges.push(Slot::new(g, instrument, row.attrs, sets)),
                _ => {}
            }
        }
        Self {
            first_token: first_token.into(),
            items: items.into(),
            end: end.into(),
            gauges: gauges.into(),
            labels: attrs::sets(AttrSet::Semconv, labels, role)
                .into_vec()
                .pop()
                .unwrap_or_default(),
        }
    }
}

impl SeriesSink for OtelSeries {
    fn first_token(&self, event: &FirstToken) {
        for slot in self.first_token.iter() {
            if let Some(value) = slot.field.read(event) {
                slot.record(0, value);
            }
        }
    }

    fn item(&self, gap: Duration, tokens: u32) {
        for slot in self.items.iter() {
            slot.record(std::iter::once((gap, tokens)));
        }
    }

    #[inline]
    fn items(&self, items: Items<'_>) {
        for slot in self.items.iter() {
            slot.record(items.iter().map(|item| (item.gap, item.tokens)));
        }
    }

    fn end(&self, record: &RequestRecord) {
        for slot in self.end.iter() {
            if let Some(value) = slot.field.read(record) {
                slot.record(slot.attrs.record_variant(record), value);
            }
        }
    }

    fn gauge(&self, gauge: Gauge, delta: i64) {
        for slot in self.gauges.iter().filter(|s| s.field == gauge) {
            slot.record(0, Value::Delta(delta));
        }
    }
}

impl fmt::Debug for OtelSeries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelSeries")
            .field("attributes", &self.labels)
            .field(
                "rows",
                &(self.first_token.len() + self.items.len() + self.end.len()),
            )
            .finish_non_exhaustive()
    }
}
