//! Several sinks as one.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::step::EngineFanOut;
use super::{EngineSink, FirstToken, Gauge, Items, SeriesSink, Sink, guarded};
use crate::record::RequestRecord;
use crate::series::{Labels, Role};

/// Sends every event to each of its sinks, in the order they were added.
///
/// [`MeterBuilder::sink`](crate::MeterBuilder::sink) builds one for you when it is called more
/// than once.
///
/// # Examples
///
/// ```
/// use tokenmeter::sink::{FanOut, InMemorySink, NoopSink};
/// use tokenmeter::{Labels, Meter};
///
/// let memory = InMemorySink::new();
/// let both = FanOut::new().with(NoopSink).with(memory.clone());
/// let meter = Meter::builder().sink(both).build();
/// meter.series(&Labels::server("chat")).start().succeed();
/// assert_eq!(memory.records().len(), 1);
/// ```
#[derive(Clone, Default)]
pub struct FanOut {
    sinks: Vec<Arc<dyn Sink>>,
}

impl FanOut {
    /// An empty fan-out.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a sink.
    pub fn with(mut self, sink: impl Sink) -> Self {
        self.sinks.push(Arc::new(sink));
        self
    }

    /// Adds a shared sink.
    pub fn push(&mut self, sink: Arc<dyn Sink>) {
        self.sinks.push(sink);
    }

    pub(crate) fn into_sinks(self) -> Vec<Arc<dyn Sink>> {
        self.sinks
    }

    pub(crate) fn from_sinks(sinks: Vec<Arc<dyn Sink>>) -> Self {
        Self { sinks }
    }

    /// How many sinks.
    pub fn len(&self) -> usize {
        self.sinks.len()
    }

    /// True with no sinks.
    pub fn is_empty(&self) -> bool {
        self.sinks.is_empty()
    }
}

impl fmt::Debug for FanOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FanOut")
            .field("sinks", &self.sinks.len())
            .finish()
    }
}

struct FanOutSeries {
    handles: Box<[Box<dyn SeriesSink>]>,
}

impl Sink for FanOut {
    fn series(&self, labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(FanOutSeries {
            handles: self.sinks.iter().map(|s| s.series(labels)).collect(),
        })
    }

    fn series_folded(&self, role: Role) {
        for sink in &self.sinks {
            sink.series_folded(role);
        }
    }

    fn engine(&self, labels: &Labels<'_>) -> Option<Box<dyn EngineSink>> {
        let handles: Box<[Box<dyn EngineSink>]> =
            self.sinks.iter().filter_map(|s| s.engine(labels)).collect();
        match handles.len() {
            0 => None,
            _ => Some(Box::new(EngineFanOut(handles))),
        }
    }
}

/// Each handle is called on its own, so a panicking sink cannot keep the others from an event.
impl SeriesSink for FanOutSeries {
    fn start(&self, id: u64) {
        for h in self.handles.iter() {
            guarded(|| h.start(id));
        }
    }

    fn first_token(&self, event: &FirstToken) {
        for h in self.handles.iter() {
            guarded(|| h.first_token(event));
        }
    }

    fn item(&self, gap: Duration, tokens: u32) {
        for h in self.handles.iter() {
            guarded(|| h.item(gap, tokens));
        }
    }

    #[inline]
    fn items(&self, items: Items<'_>) {
        for h in self.handles.iter() {
            guarded(|| h.items(items));
        }
    }

    fn end(&self, record: &RequestRecord) {
        for h in self.handles.iter() {
            guarded(|| h.end(record));
        }
    }

    fn gauge(&self, gauge: Gauge, delta: i64) {
        for h in self.handles.iter() {
            guarded(|| h.gauge(gauge, delta));
        }
    }
    fn keeps_item_times(&self) -> bool {
        self.handles.iter().any(|h| h.keeps_item_times())
    }
}
