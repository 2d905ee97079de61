//! [`Handle`]: renders the exposition, and the upkeep that keeps memory bounded.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusHandle;

use crate::error::Error;
use crate::listener::stats::{Counters, ListenerStats};
use crate::profile::Profile;

/// The `Content-Type` of [`Handle::render`]'s output (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Renders what the exporter holds as Prometheus text, for an application that serves
/// `/metrics` itself. Cheap to clone; clones share the recorder.
///
/// # Examples
///
/// ```
/// use tokenmeter_prometheus::{Builder, CONTENT_TYPE, Profile};
///
/// let (_sink, handle) = Builder::new(Profile::Vllm).build_recorder()?;
/// // In an axum handler: `([(header::CONTENT_TYPE, CONTENT_TYPE)], handle.render())`.
/// let body = handle.render();
/// assert!(body.contains("# TYPE tokenmeter_series_folded_total counter"));
/// assert!(CONTENT_TYPE.starts_with("text/plain"));
/// # Ok::<(), tokenmeter_prometheus::Error>(())
/// ```
#[derive(Clone)]
pub struct Handle {
    prometheus: PrometheusHandle,
    profile: Profile,
    upkeep: Option<Arc<Upkeep>>,
    listener: Option<Arc<Counters>>,
}

impl Handle {
    pub(crate) fn new(
        prometheus: PrometheusHandle,
        profile: Profile,
        upkeep: Option<Arc<Upkeep>>,
    ) -> Self {
        Self {
            prometheus,
            profile,
            upkeep,
            listener: None,
        }
    }

    /// This handle, with the counters of the listener that serves it.
    pub(crate) fn with_listener(mut self, counters: Arc<Counters>) -> Self {
        self.listener = Some(counters);
        self
    }

    /// What the `/metrics` listener of [`Builder::install`](crate::Builder::install) did with
    /// its connections so far: accepted, refused at the cap, evicted, closed at each timeout,
    /// open now. `None` for a handle with no listener.
    pub fn listener_stats(&self) -> Option<ListenerStats> {
        self.listener.as_deref().map(Counters::snapshot)
    }

    /// The exposition text: every metric, with `# HELP` and `# TYPE`, histograms with buckets.
    pub fn render(&self) -> String {
        self.prometheus.render()
    }

    /// Moves recorded histogram samples into their buckets now. The background upkeep does this
    /// every interval; a render does it too.
    pub fn run_upkeep(&self) {
        self.prometheus.run_upkeep();
    }

    /// Upkeep passes the background thread of this handle has run (0 for a handle from
    /// [`Builder::build_for`](crate::Builder::build_for)'s recorder, which has none).
    pub fn upkeep_passes(&self) -> u64 {
        self.upkeep
            .as_ref()
            .map_or(0, |u| u.passes.load(Ordering::Relaxed))
    }

    /// The naming profile.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The underlying `metrics-exporter-prometheus` handle.
    pub fn prometheus_handle(&self) -> &PrometheusHandle {
        &self.prometheus
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("profile", &self.profile)
            .field("upkeep_passes", &self.upkeep_passes())
            .finish()
    }
}

/// A background thread that runs the exporter's upkeep every interval, so histogram samples
/// are folded into buckets and memory stays bounded when nobody scrapes. It stops when the last
/// [`Handle`] and [`PrometheusSink`](crate::PrometheusSink) sharing it are dropped.
pub(crate) struct Upkeep {
    _stop: Sender<()>,
    passes: Arc<AtomicU64>,
}

impl Upkeep {
    pub(crate) fn spawn(handle: PrometheusHandle, every: Duration) -> Result<Arc<Self>, Error> {
        let (stop, stopped) = mpsc::channel::<()>();
        let passes = Arc::new(AtomicU64::new(0));
        let counter = passes.clone();
        let every = every.max(Duration::from_millis(1));
        std::thread::Builder::new()
            .name("tokenmeter-prometheus-upkeep".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    handle.run_upkeep();
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            })
            .map_err(|e| Error::Runtime(e.to_string()))?;
        Ok(Arc::new(Self {
            _stop: stop,
            passes,
        }))
    }
}
