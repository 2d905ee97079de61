//! [`Meter`]: the clock, the sinks and the capped series registry.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::series::{DEFAULT_MAX_SERIES, Labels, Registry, Resolved, Series};
use crate::sink::{EngineRecorder, FanOut, InMemorySink, Items, NoopSink, Sink};
use crate::{Clock, ManualClock};

/// The entry point: resolves [`Series`] from [`Labels`], with a clock and the sinks every
/// series reports to.
///
/// Cheap to clone; clones share the registry.
///
/// # Examples
///
/// ```
/// use tokenmeter::{Labels, Meter, sink::InMemorySink};
///
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().sink(memory.clone()).max_series(2).build();
/// let a = meter.series(&Labels::server("chat").request_model("a"));
/// let again = meter.series(&Labels::server("chat").request_model("a"));
/// assert!(a.same(&again)); // resolved once
///
/// meter.series(&Labels::server("chat").request_model("b"));
/// let c = meter.series(&Labels::server("chat").request_model("c")); // past the cap
/// assert!(c.labels().is_folded());
/// assert_eq!((meter.series_count(), meter.folded_count()), (2, 1));
/// ```
#[derive(Clone)]
pub struct Meter {
    shared: Arc<Shared>,
}

struct Shared {
    clock: Clock,
    sink: Arc<dyn Sink>,
    registry: Mutex<Registry>,
    folded: AtomicU64,
}

impl Meter {
    /// A builder with the monotonic clock, no sink, and the default cap.
    pub fn builder() -> MeterBuilder {
        MeterBuilder::default()
    }

    /// The series for `labels`: found if it exists (without allocating when the values are
    /// already clean), created while under the cap, else the `_OTHER` series of the same role.
    ///
    /// Takes a lock: call it once per label set and keep the [`Series`], not once per token.
    pub fn series(&self, labels: &Labels<'_>) -> Series {
        let clean = labels.sanitized();
        let resolved = self
            .shared
            .registry
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .resolve(&clean, &self.shared.clock, &*self.shared.sink);
        match resolved {
            Resolved::Found(series) => series,
            Resolved::Folded(series) => {
                self.shared.folded.fetch_add(1, Ordering::Relaxed);
                self.shared.sink.series_folded(labels.role());
                series
            }
        }
    }

    /// The recorder of one engine's signals: its steps (batch size, tokens, duration), its
    /// KV-cache usage and its preemptions, labelled by `labels`' model and provider, to every
    /// sink. Build it once per engine; a step or a gauge update then allocates nothing.
    pub fn engine(&self, labels: &Labels<'_>) -> EngineRecorder {
        EngineRecorder::new(&*self.shared.sink, &labels.sanitized())
    }

    /// Series created (the `_OTHER` series not included).
    pub fn series_count(&self) -> usize {
        self.shared
            .registry
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Resolutions folded into `_OTHER` because the cap was reached.
    pub fn folded_count(&self) -> u64 {
        self.shared.folded.load(Ordering::Relaxed)
    }

    /// The clock.
    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    /// A meter for tests: time moves only when `time` is told, and every record is kept in the
    /// returned [`InMemorySink`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter::{Labels, ManualClock, Meter};
    ///
    /// let time = ManualClock::new();
    /// let (meter, memory) = Meter::manual(&time);
    /// let mut request = meter.series(&Labels::client("chat")).start();
    /// time.advance(Duration::from_millis(40));
    /// request.record_tokens(1);
    /// request.succeed();
    /// assert_eq!(memory.records()[0].ttft, Some(Duration::from_millis(40)));
    /// ```
    pub fn manual(time: &ManualClock) -> (Meter, InMemorySink) {
        let memory = InMemorySink::new();
        let meter = Meter::builder()
            .clock(Clock::manual(time))
            .sink(memory.clone())
            .build();
        (meter, memory)
    }
}

impl Default for Meter {
    fn default() -> Self {
        Self::builder().build()
    }
}

impl fmt::Debug for Meter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Meter")
            .field("clock", &self.shared.clock)
            .field("series", &self.series_count())
            .field("folded", &self.folded_count())
            .finish()
    }
}

/// Builds a [`Meter`].
#[derive(Default)]
pub struct MeterBuilder {
    clock: Option<Clock>,
    sinks: FanOut,
    max_series: Option<usize>,
    item_batch: Option<usize>,
}

impl MeterBuilder {
    /// The clock every series reads (default: [`Clock::monotonic`]).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Adds a sink. Several sinks are fanned out in the order they were added.
    pub fn sink(mut self, sink: impl Sink) -> Self {
        self.sinks.push(Arc::new(sink));
        self
    }

    /// Adds a shared sink.
    pub fn shared_sink(mut self, sink: Arc<dyn Sink>) -> Self {
        self.sinks.push(sink);
        self
    }

    /// The cap on the number of series (default [`DEFAULT_MAX_SERIES`]); label sets past it
    /// fold into `_OTHER`.
    pub fn max_series(mut self, max: usize) -> Self {
        self.max_series = Some(max);
        self
    }

    /// How many items after the first token a request holds before it hands them to the sinks
    /// in one call: 1 to [`Items::CAPACITY`] (the default); a value outside that range is
    /// taken as the nearest end of it. 1 hands every item on as it arrives, for a sink that
    /// must see each at once (a live display, a test that waits on items); the default saves a
    /// sink call per item. [`Items`] says when else a batch goes.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::{Labels, Meter, sink::InMemorySink};
    ///
    /// let memory = InMemorySink::new();
    /// let meter = Meter::builder().sink(memory.clone()).item_batch(1).build();
    /// let mut request = meter.series(&Labels::server("chat")).start();
    /// request.record_tokens(1);
    /// request.record_tokens(1);
    /// assert_eq!(memory.gaps().len(), 1, "handed on at once");
    /// request.succeed();
    /// ```
    pub fn item_batch(mut self, items: usize) -> Self {
        self.item_batch = Some(items); // the request's batch takes it into range
        self
    }

    /// The meter.
    pub fn build(self) -> Meter {
        let mut sinks = self.sinks.into_sinks();
        let sink: Arc<dyn Sink> = match sinks.len() {
            0 => Arc::new(NoopSink),
            1 => sinks.remove(0),
            _ => Arc::new(FanOut::from_sinks(sinks)),
        };
        Meter {
            shared: Arc::new(Shared {
                clock: self.clock.unwrap_or_default(),
                sink,
                registry: Mutex::new(Registry::new(
                    self.max_series.unwrap_or(DEFAULT_MAX_SERIES),
                    self.item_batch.unwrap_or(Items::CAPACITY),
                )),
                folded: AtomicU64::new(0),
            }),
        }
    }
}

impl fmt::Debug for MeterBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MeterBuilder")
            .field("clock", &self.clock)
            .field("sinks", &self.sinks.len())
            .field("max_series", &self.max_series)
            .field("item_batch", &self.item_batch)
            .finish()
    }
}
