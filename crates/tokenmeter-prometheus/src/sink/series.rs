//! One series' handles: a slot per row of the table that the series' role records, registered
//! once when the series is resolved, then only indexed.

use std::time::Duration;

use metrics::Histogram;
use tokenmeter::conventions::{Feed, FirstTokenField, ItemField, RecordField};
use tokenmeter::sink::{FirstToken, Gauge as LifecycleGauge, Items, SeriesSink};
use tokenmeter::{Labels, RequestRecord};

use super::handle::{Handle, Slot};
use super::labels;
use super::target::RecorderTarget;
use crate::profile::Profile;
use crate::rows::PromRow;

/// Every handle one series needs, grouped by the event that feeds it.
///
/// The per-item rows are resolved when the series is: a gap row on a histogram (the ITL of
/// every profile) becomes its bare histogram in `gaps`, any other per-item row its field and
/// its one handle in `items` (per-item rows have one variant). The per-token path then only
/// walks those slices: no match over rows, no variant index, no `Option`.
pub(crate) struct SeriesHandles {
    first_token: Box<[Slot<FirstTokenField>]>,
    gaps: Box<[Histogram]>,
    items: Box<[(ItemField, Handle)]>,
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
        let (mut first_token, mut gaps, mut items, mut end, mut gauges) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for row in rows.iter().filter(|r| r.row.roles.includes(role)) {
            let attrs = row.row.attrs;
            let labels = |variant| labels::of(profile, attrs, series, role, variant);
            match row.row.feed {
                Feed::FirstToken(field) => first_token.push(Slot::new(target, row, field, labels)),
                Feed::Item(field) => {
                    let slot = Slot::new(target, row, field, labels);
                    match (field, slot.into_first()) {
                        (ItemField::Gap, Some(Handle::Histogram(histogram))) => {
                            gaps.push(histogram)
                        }
                        (field, Some(handle)) => items.push((field, handle)),
                        (_, None) => {}
                    }
                }
                Feed::End(field) => end.push(Slot::new(target, row, field, labels)),
                Feed::Gauge(gauge) => gauges.push(Slot::new(target, row, gauge, labels)),
                _ => {}
            }
        }
        Self {
            first_token: first_token.into(),
            gaps: gaps.into(),
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
        for histogram in self.gaps.iter() {
            histogram.record(gap.as_secs_f64());
        }
        for (field, handle) in self.items.iter() {
            handle.record(field.read(gap, tokens));
        }
    }

    /// One epoch pin for the whole batch: `metrics-exporter-prometheus` keeps a histogram's
    /// samples in a `metrics-util` `AtomicBucket`, which pins crossbeam's default epoch
    /// collector on every push. Pinned already, each push's pin is a counter increment instead
    /// of a full fence (measured: `cargo bench -p tokenmeter-benches --bench prometheus`,
    /// `record_batch` against `record_batch_pinned`). With another recorder the pin is a few
    /// nanoseconds per batch spent for nothing.
    ///
    /// A gap row on a histogram (the ITL of every profile) records the gaps straight into the
    /// histogram it resolved with the series; any other per-item row reads its field from each
    /// item.
    #[inline]
    fn items(&self, items: Items<'_>) {
        let _pinned = crossbeam_epoch::pin();
        for histogram in self.gaps.iter() {
            for seconds in items.gap_seconds() {
                histogram.record(seconds);
            }
        }
        for (field, handle) in self.items.iter() {
            for item in items.iter() {
                handle.record(field.read(item.gap, item.tokens));
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
