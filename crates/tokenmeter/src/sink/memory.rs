//! A sink that keeps exact values, for tests and reports.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use super::{Items, SeriesSink, Sink};
use crate::record::RequestRecord;
use crate::report::Report;
use crate::series::{Labels, Role};

/// Keeps every [`RequestRecord`] and every inter-token gap, exactly, and turns them into a
/// [`Report`].
///
/// Memory grows with every request and token: use it for tests, benchmarks and short runs, not
/// as a production exporter. Recording a batch of items takes a mutex and extends a vector.
/// Clones share the same store; once every clone is dropped the store is freed, and what the
/// meter's series record after that goes nowhere.
///
/// # Examples
///
/// ```
/// use tokenmeter::{Labels, Meter, sink::InMemorySink};
///
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().sink(memory.clone()).build();
/// let mut request = meter.series(&Labels::server("chat")).start();
/// request.record_tokens(1);
/// request.succeed();
/// let report = memory.report();
/// assert_eq!(report.requests, 1);
/// assert_eq!(report.outcomes.success, 1);
/// ```
#[derive(Clone, Default)]
pub struct InMemorySink {
    store: Arc<Mutex<Store>>,
    item_times: bool,
}

#[derive(Default)]
struct Store {
    records: Vec<RequestRecord>,
    gaps: Vec<(Duration, u32)>,
    folded: u64,
}

/// A series' handle on the store. Weak: records hold their series, so a strong handle would
/// make a cycle (store → record → series → handle → store) that keeps a dropped sink alive.
struct MemorySeries {
    store: Weak<Mutex<Store>>,
    item_times: bool,
}

fn lock(store: &Mutex<Store>) -> MutexGuard<'_, Store> {
    // A panic elsewhere while holding the lock leaves the data consistent (pushes only).
    store.lock().unwrap_or_else(PoisonError::into_inner)
}

impl InMemorySink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty sink whose records carry the time of every token-bearing item
    /// ([`RequestRecord::item_times`]), for series created after this.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter::{Labels, ManualClock, Meter, sink::InMemorySink, Clock};
    ///
    /// let clock = ManualClock::new();
    /// let memory = InMemorySink::with_item_times();
    /// let meter = Meter::builder().clock(Clock::manual(&clock)).sink(memory.clone()).build();
    /// let mut request = meter.series(&Labels::client("chat")).start();
    /// clock.advance(Duration::from_millis(10));
    /// request.record_tokens(2);
    /// request.succeed();
    /// let times = memory.records()[0].item_times.clone().unwrap_or_default();
    /// assert_eq!((times[0].offset, times[0].tokens), (Duration::from_millis(10), 2));
    /// ```
    pub fn with_item_times() -> Self {
        Self {
            item_times: true,
            ..Self::default()
        }
    }

    /// A copy of every record, in the order the requests ended.
    pub fn records(&self) -> Vec<RequestRecord> {
        lock(&self.store).records.clone()
    }

    /// Every inter-token gap with the tokens of the item that closed it. Each request's are in
    /// their order; requests' batches interleave in the order they reached the sink (a request
    /// hands its items on in batches, always before it ends: see [`Items`]).
    pub fn gaps(&self) -> Vec<(Duration, u32)> {
        lock(&self.store).gaps.clone()
    }

    /// Requests ended so far.
    pub fn len(&self) -> usize {
        lock(&self.store).records.len()
    }

    /// True before any request ended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Label sets folded into `_OTHER` so far.
    pub fn folded(&self) -> u64 {
        lock(&self.store).folded
    }

    /// Forgets everything recorded so far.
    pub fn clear(&self) {
        let mut store = lock(&self.store);
        store.records.clear();
        store.gaps.clear();
        store.folded = 0;
    }

    /// The report over everything recorded so far.
    pub fn report(&self) -> Report {
        let store = lock(&self.store);
        Report::new(&store.records, &store.gaps)
    }
}

impl fmt::Debug for InMemorySink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let store = lock(&self.store);
        f.debug_struct("InMemorySink")
            .field("records", &store.records.len())
            .field("gaps", &store.gaps.len())
            .finish()
    }
}

impl Sink for InMemorySink {
    fn series(&self, _labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(MemorySeries {
            store: Arc::downgrade(&self.store),
            item_times: self.item_times,
        })
    }

    fn series_folded(&self, _role: Role) {
        lock(&self.store).folded += 1;
    }
}

impl SeriesSink for MemorySeries {
    fn keeps_item_times(&self) -> bool {
        self.item_times
    }

    fn item(&self, gap: Duration, tokens: u32) {
        if let Some(store) = self.store.upgrade() {
            lock(&store).gaps.push((gap, tokens));
        }
    }

    fn items(&self, items: Items<'_>) {
        if let Some(store) = self.store.upgrade() {
            let gaps = items.iter().map(|item| (item.gap, item.tokens));
            lock(&store).gaps.extend(gaps);
        }
    }

    fn end(&self, record: &RequestRecord) {
        if let Some(store) = self.store.upgrade() {
            lock(&store).records.push(record.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{Labels, Meter};

    /// Found by the `sse_chunks` and `metered_script` fuzz targets (out of memory after about
    /// 2 million inputs): records hold their series, the series held the store, and the store
    /// holds the records, so a dropped sink was never freed.
    #[test]
    fn a_dropped_sink_frees_what_it_recorded() {
        let memory = InMemorySink::new();
        let store = Arc::downgrade(&memory.store);
        let meter = Meter::builder().sink(memory.clone()).build();
        let series = meter.series(&Labels::server("chat"));
        let mut request = series.start();
        request.record_tokens(1);
        request.record_tokens(1);
        request.succeed();
        series.start().cancel();
        assert_eq!(memory.len(), 2);
        drop((meter, series, memory));
        assert!(
            store.upgrade().is_none(),
            "the store outlived the sink, the meter and the series"
        );
    }
}
