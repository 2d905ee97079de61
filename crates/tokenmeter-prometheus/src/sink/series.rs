//! One series' handles: a slot per row of the table that the series' role records, registered
//! once when the series is resolved, then only indexed.

use std::time::Duration;

use tokenmeter::conventions::{Feed, FirstTokenField, ItemField, RecordField};
use tokenmeter::sink::{FirstToken, Gauge as LifecycleGauge, Items, SeriesSink};
use tokenmeter::{Labels, RequestRecord};

use super::handle::{Handle, Slot};
use super::labels;
use super::target::RecorderTarget;
use crate::profile::Profile;
use crate::rows::PromRow;

/// Every handle one series needs, grouped by the event that feeds it.
pub(crate) struct SeriesHandles {
    first_token: Box<[Slot<FirstTokenField>]>,
    items: Box<[Slot<ItemField>]>,
    end: Box<[Slot<RecordField>]>,
    gauges: Box<[Slot<LifecycleGauge>]>,
}

impl SeriesHandles {
    /// Registers the handles of every row of `rows` that a series of `series`' role records.
    pub(crate) fn new(
        profile: Profile,
        target: &RecorderTarget,
        rows: &[PromRow],
        series: &Labels<'_>,
    ) -> Self {
        let role = series.role();
        let (mut first_token, mut items, mut end, mut gauges) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for row in rows.iter().filter(|r| r.row.roles.includes(role)) {
            let attrs = row.row.attrs;
            let labels = |variant| labels::of(profile, attrs, series, role, variant);
            match row.row.feed {
                Feed::FirstToken(field) => first_token.push(Slot::new(target, row, field, labels)),
                Feed::Item(field) => items.push(Slot::new(target, row, field, labels)),
                Feed::End(field) => end.push(Slot::new(target, row, field, labels)),
                Feed::Gauge(gauge) => gauges.push(Slot::new(target, row, gauge, labels)),
                _ => {}
            }
        }
        Self {
            first_token: first_token.into(),
            items: items.into(),
            end: end.into(),
            gauges: gauges.into(),
        }
    }
}

impl SeriesSink for SeriesHandles {
    fn first_token(&self, event: &FirstToken) {
        for slot in self.first_token.iter() {
            if let Some(value) = slot.field.read(event) {
                slot.record(0, value);
            }
        }
    }

    fn item(&self, gap: Duration, tokens: u32) {
        for slot in self.items.iter() {
            slot.record(0, slot.field.read(gap, tokens));
        }
    }

    /// One epoch pin for the whole batch: `metrics-exporter-prometheus` keeps a histogram's
    /// samples in a `metrics-util` `AtomicBucket`, which pins crossbeam's default epoch
    /// collector on every push. Pinned already, each push's pin is a counter increment instead
    /// of a full fence (measured: `cargo bench -p tokenmeter-benches --bench prometheus`,
    /// `record_batch` against `record_batch_pinned`). With another recorder the pin is a few
    /// nanoseconds per batch spent for nothing.
    ///
    /// A gap row on a histogram (the ITL of every profile) records the gaps straight into its
    /// handle; any other per-item row reads its field from each item.
    #[inline]
    fn items(&self, items: Items<'_>) {
        let _pinned = crossbeam_epoch::pin();
        for slot in self.items.iter() {
            match (slot.field, slot.first()) {
                (ItemField::Gap, Some(Handle::Histogram(histogram))) => {
                    for gap in items.gaps() {
                        histogram.record(gap.as_secs_f64());
                    }
                }
                (field, Some(handle)) => {
                    for item in items.iter() {
                        handle.record(field.read(item.gap, item.tokens));
                    }
                }
                (_, None) => {}
            }
        }
    }

    fn end(&self, record: &RequestRecord) {
        for slot in self.end.iter() {
            if let Some(value) = slot.field.read(record) {
                slot.record(slot.attrs.record_variant(record), value);
            }
        }
    }

    fn gauge(&self, gauge: LifecycleGauge, delta: i64) {
        for slot in self.gauges.iter().filter(|s| s.field == gauge) {
            slot.record(0, tokenmeter::conventions::Value::Delta(delta));
        }
    }
}
