//! Series: one bounded label set, resolved once, holding every sink's pre-built handles.
//!
//! A [`Series`] is what the hot path uses. Resolve it with [`Meter::series`](crate::Meter::series)
//! once (per model, per route) and keep it: starting a request on it is a reference-count
//! increment, and each token touches only the handles it already holds.
//!
//! The number of series a [`Meter`](crate::Meter) creates is capped (default
//! [`DEFAULT_MAX_SERIES`]); label sets past the cap fold into one series per role whose labels are
//! all `_OTHER`, and [`Meter::folded_count`](crate::Meter::folded_count) counts how many
//! resolutions were folded.
//!
//! Tenant attributes ([`Labels::tenant`], [`TenantKey`]) are labels like the others: each
//! distinct set of them is one series under the same cap, so a million tenants cost no more
//! than the cap's series and one `_OTHER`.

mod labels;
mod registry;
mod tenant;

pub use labels::{Labels, MAX_LABEL_LEN, OTHER, Role, sanitize};
pub(crate) use registry::{Registry, Resolved};
pub use tenant::{MAX_TENANT_KEY_LEN, MAX_TENANTS, TenantKey, TenantKeyError};

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use crate::Clock;
use crate::request::Request;
use crate::sink::{Gauge, SeriesSink, guarded};

/// Default cap on the number of series one meter creates.
pub const DEFAULT_MAX_SERIES: usize = 1_000;

/// A resolved series: its labels, the clock, each sink's handles and the lifecycle gauges.
///
/// Cheap to clone (one reference count).
///
/// # Examples
///
/// ```
/// use tokenmeter::{Labels, Meter};
///
/// let meter = Meter::builder().build();
/// let series = meter.series(&Labels::server("chat").request_model("m"));
/// let request = series.start();
/// assert_eq!(series.waiting(), 1);
/// drop(request); // cancelled
/// assert_eq!(series.waiting(), 0);
/// ```
#[derive(Clone)]
pub struct Series {
    inner: Arc<SeriesInner>,
}

struct SeriesInner {
    labels: Labels<'static>,
    clock: Clock,
    sink: Box<dyn SeriesSink>,
    batch: usize,
    item_times: bool,
    waiting: AtomicI64,
    running: AtomicI64,
}

impl Series {
    pub(crate) fn new(
        labels: Labels<'static>,
        clock: Clock,
        sink: Box<dyn SeriesSink>,
        batch: usize,
    ) -> Self {
        let item_times = sink.keeps_item_times();
        Self {
            inner: Arc::new(SeriesInner {
                labels,
                clock,
                sink,
                batch,
                item_times,
                waiting: AtomicI64::new(0),
                running: AtomicI64::new(0),
            }),
        }
    }

    /// The series' labels (sanitised).
    pub fn labels(&self) -> &Labels<'static> {
        &self.inner.labels
    }

    /// The clock every request on this series reads.
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// Starts a request now: the arrival on a server, the send on a client.
    pub fn start(&self) -> Request {
        Request::new(self.clone(), self.inner.clock.now())
    }

    /// Starts a request whose arrival was read from [`Series::clock`] earlier, for servers that
    /// take the arrival time before they know the series.
    pub fn start_at(&self, arrival: Duration) -> Request {
        Request::new(self.clone(), arrival)
    }

    /// Requests started and not yet scheduled (nor past their first token).
    pub fn waiting(&self) -> i64 {
        self.inner.waiting.load(Ordering::Relaxed)
    }

    /// Requests scheduled (or past their first token) and not yet ended.
    pub fn running(&self) -> i64 {
        self.inner.running.load(Ordering::Relaxed)
    }

    /// Items a request on this series holds before it hands them to the sink, as the meter was
    /// given it (the request's batch takes it into range).
    pub(crate) fn batch(&self) -> usize {
        self.inner.batch
    }

    #[inline]
    /// True when a sink asked for the time of every token-bearing item
    /// ([`SeriesSink::keeps_item_times`]).
    pub(crate) fn keeps_item_times(&self) -> bool {
        self.inner.item_times
    }

    pub(crate) fn sink(&self) -> &dyn SeriesSink {
        &*self.inner.sink
    }

    pub(crate) fn gauge(&self, gauge: Gauge, delta: i64) {
        let cell = match gauge {
            Gauge::Waiting => &self.inner.waiting,
            Gauge::Running => &self.inner.running,
        };
        cell.fetch_add(delta, Ordering::Relaxed);
        guarded(|| self.inner.sink.gauge(gauge, delta));
    }

    /// True when both handles point to the same series.
    pub fn same(&self, other: &Series) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for Series {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Series")
            .field("labels", &self.inner.labels)
            .field("waiting", &self.waiting())
            .field("running", &self.running())
            .finish()
    }
}
