//! [`Builder`]: buckets, profile, and the listener's address and limits; finishes the way `metrics-exporter-prometheus`'s
//! builder does (`build_recorder`, `install_recorder`, `install`), plus `build_for` a recorder
//! of your own.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

use metrics::Recorder;
use metrics_exporter_prometheus::PrometheusBuilder;

use tokenmeter::conventions::Conventions;

use crate::buckets::{Buckets, Metric};
use crate::error::Error;
use crate::handle::Handle;
pub(crate) use crate::handle::Upkeep;
use crate::listener::{self, limits::ListenerLimits};
use crate::profile::Profile;
use crate::sink::{PrometheusSink, RecorderTarget};

/// Where [`Builder::install`] listens unless told otherwise: loopback only, port 9464 (the
/// OpenTelemetry Prometheus exporter's default).
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9464));

/// How often the upkeep folds recorded samples into buckets unless told otherwise.
pub const DEFAULT_UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The buckets of histograms that are not tokenmeter's (your own `metrics::histogram!`s in the
/// same recorder), so none is rendered as a summary: 0.01 s doubling to 81.92 s.
const OTHER_HISTOGRAMS: &[f64] = &[
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// Configures the exporter: [`Profile`], [`Buckets`], upkeep interval, and the listen address
/// and limits of [`install`](Builder::install)'s `/metrics` listener.
///
/// Four ways to finish, as many as `metrics-exporter-prometheus`'s `PrometheusBuilder` has,
/// and named after its:
///
/// | Method | Like the exporter's | Recorder | `/metrics` | Upkeep |
/// |---|---|---|---|---|
/// | [`build_recorder`](Builder::build_recorder) | `build_recorder` | its own (no global state) | you serve [`Handle::render`] | a background thread |
/// | [`install_recorder`](Builder::install_recorder) | `install_recorder` | global | you serve [`Handle::render`] | a background thread |
/// | [`install`](Builder::install) | `install` | global | an HTTP listener on [`DEFAULT_LISTEN`], with timeouts and a connection cap | a background thread |
/// | [`build_for`](Builder::build_for) | `build` (you run the rest) | any `metrics` recorder you give | the recorder's business | the recorder's business |
///
/// # Examples
///
/// ```
/// use tokenmeter::{Labels, Meter};
/// use tokenmeter_prometheus::{Builder, Metric, Profile};
///
/// let (sink, handle) = Builder::new(Profile::Semconv)
///     .add_edges(Metric::Ttft, &[0.35])? // an SLO threshold becomes a bucket edge
///     .build_recorder()?;
/// let meter = Meter::builder().sink(sink).build();
/// let mut request = meter.series(&Labels::server("chat").request_model("m")).start();
/// request.record_tokens(1);
/// request.succeed();
/// assert!(handle.render().contains("gen_ai_server_time_to_first_token_seconds_bucket{gen_ai_operation_name=\"chat\",gen_ai_request_model=\"m\",le=\"0.35\"} 1"));
/// # Ok::<(), tokenmeter_prometheus::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    profile: Profile,
    buckets: Buckets,
    table: Conventions,
    listen: SocketAddr,
    upkeep: Duration,
    limits: ListenerLimits,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new(Profile::default())
    }
}

impl Builder {
    /// Defaults: the given profile, the buckets of `docs/src/reference/metrics.md` §4, [`DEFAULT_LISTEN`],
    /// [`DEFAULT_UPKEEP_INTERVAL`], and the listener's [`DEFAULT_HEADER_TIMEOUT`],
    /// [`DEFAULT_IDLE_TIMEOUT`], [`DEFAULT_SEND_TIMEOUT`] and [`DEFAULT_MAX_CONNECTIONS`].
    ///
    /// [`DEFAULT_HEADER_TIMEOUT`]: crate::DEFAULT_HEADER_TIMEOUT
    /// [`DEFAULT_IDLE_TIMEOUT`]: crate::DEFAULT_IDLE_TIMEOUT
    /// [`DEFAULT_SEND_TIMEOUT`]: crate::DEFAULT_SEND_TIMEOUT
    /// [`DEFAULT_MAX_CONNECTIONS`]: crate::DEFAULT_MAX_CONNECTIONS
    pub fn new(profile: Profile) -> Self {
        Self {
            profile,
            buckets: Buckets::new(),
            table: Conventions::default(),
            listen: DEFAULT_LISTEN,
            upkeep: DEFAULT_UPKEEP_INTERVAL,
            limits: ListenerLimits::default(),
        }
    }

    /// Replaces the bucket settings.
    pub fn buckets(mut self, buckets: Buckets) -> Self {
        self.buckets = buckets;
        self
    }

    /// Adds bucket edges (SLO thresholds) to every histogram of `metric`.
    pub fn add_edges(mut self, metric: Metric, edges: &[f64]) -> Result<Self, Error> {
        self.buckets.add_edges(metric, edges)?;
        Ok(self)
    }

    /// Replaces the bucket layout of every histogram of `metric`.
    pub fn set_buckets(mut self, metric: Metric, edges: &[f64]) -> Result<Self, Error> {
        self.buckets.set(metric, edges)?;
        Ok(self)
    }

    /// Replaces the conventions table (default: the built-in rows): every row is published
    /// under this profile's names, with its buckets, and fed by its event.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::conventions::{
    ///     AttrSet, Conventions, Feed, Instrument, InstrumentKind, RecordField, Roles, Row,
    /// };
    /// use tokenmeter::{Labels, Meter};
    /// use tokenmeter_prometheus::{Builder, Profile};
    ///
    /// let frames = Instrument::new("example.frames", "{frame}", InstrumentKind::Counter, "Frames.");
    /// let mut table = Conventions::default();
    /// table.push(Row::new(frames, Feed::End(RecordField::Frames), Roles::Both, AttrSet::Own))?;
    /// let (sink, handle) = Builder::new(Profile::Semconv).conventions(table).build_recorder()?;
    /// let meter = Meter::builder().sink(sink).build();
    /// let mut request = meter.series(&Labels::server("chat")).start();
    /// request.record_tokens(1);
    /// request.succeed();
    /// assert!(handle.render().contains(r#"example_frames_total{gen_ai_operation_name="chat",role="server"} 1"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn conventions(mut self, table: Conventions) -> Self {
        self.table = table;
        self
    }

    /// The address [`Builder::install`] listens on (default [`DEFAULT_LISTEN`], loopback).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// How long [`Builder::install`]'s listener gives a request's line and headers, from their
    /// first byte (default [`DEFAULT_HEADER_TIMEOUT`](crate::DEFAULT_HEADER_TIMEOUT), 10 s); past it the connection is closed
    /// and counted in [`ListenerStats::header_timeouts`]. Bytes that keep trickling in do not
    /// extend it. At least 1 ms.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter_prometheus::{Builder, Profile};
    ///
    /// // A listener for a few scrapers on a busy host: short timeouts, a small cap.
    /// let builder = Builder::new(Profile::Semconv)
    ///     .header_timeout(Duration::from_secs(2))
    ///     .idle_timeout(Duration::from_secs(20))
    ///     .send_timeout(Duration::from_secs(30))
    ///     .max_connections(8);
    /// // `builder.install()?` then serves `/metrics` on 127.0.0.1:9464 under these limits.
    /// # drop(builder);
    /// ```
    ///
    /// [`ListenerStats::header_timeouts`]: crate::ListenerStats::header_timeouts
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long [`Builder::install`]'s listener keeps a connection that has no request: from
    /// its accept, or from the end of its last response (default [`DEFAULT_IDLE_TIMEOUT`](crate::DEFAULT_IDLE_TIMEOUT),
    /// 5 s); past it the connection is closed and counted in
    /// [`ListenerStats::idle_timeouts`]. A scraper reconnects at its next scrape. At least 1 ms.
    ///
    /// [`ListenerStats::idle_timeouts`]: crate::ListenerStats::idle_timeouts
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long [`Builder::install`]'s listener waits for a client that reads nothing while a
    /// response has bytes to write, from the last byte written (default
    /// [`DEFAULT_SEND_TIMEOUT`](crate::DEFAULT_SEND_TIMEOUT), 60 s); past it the connection is closed and counted in
    /// [`ListenerStats::send_timeouts`]. At least 1 ms.
    ///
    /// [`ListenerStats::send_timeouts`]: crate::ListenerStats::send_timeouts
    pub fn send_timeout(mut self, timeout: Duration) -> Self {
        self.limits.send_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The most connections [`Builder::install`]'s listener holds open at once (default
    /// [`DEFAULT_MAX_CONNECTIONS`](crate::DEFAULT_MAX_CONNECTIONS), 64; at least 1). At the cap, a new connection makes the
    /// least recently active idle connection (one with no response under way) close, counted
    /// in [`ListenerStats::evicted`]; when every connection is answering a scrape, the new one
    /// is answered `503 Service Unavailable` and counted in [`ListenerStats::refused`]. Keep
    /// it well under the process's file limit (`ulimit -n`).
    ///
    /// [`ListenerStats::evicted`]: crate::ListenerStats::evicted
    /// [`ListenerStats::refused`]: crate::ListenerStats::refused
    pub fn max_connections(mut self, cap: usize) -> Self {
        self.limits.max_connections = cap.max(1);
        self
    }

    /// How often recorded samples are folded into buckets when nobody scrapes (default
    /// [`DEFAULT_UPKEEP_INTERVAL`]). Memory held between passes grows with the sample rate
    /// times this interval.
    pub fn upkeep_interval(mut self, every: Duration) -> Self {
        self.upkeep = every.max(Duration::from_millis(1));
        self
    }

    /// The profile.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The bucket settings.
    pub fn bucket_settings(&self) -> &Buckets {
        &self.buckets
    }

    /// A `metrics-exporter-prometheus` builder with every histogram's buckets set and the
    /// upkeep interval, for callers who want to add to it (global labels, allow-lists) and
    /// build it themselves; give what they build to [`Builder::build_for`].
    pub fn prometheus_builder(&self) -> PrometheusBuilder {
        let builder = PrometheusBuilder::new()
            .upkeep_timeout(self.upkeep)
            .set_buckets(OTHER_HISTOGRAMS)
            .unwrap_or_else(|_| PrometheusBuilder::new());
        self.profile.apply(&self.buckets, &self.table, builder)
    }

    /// A sink and a handle on a recorder of their own: no global state, no listener. Serve
    /// [`Handle::render`] from your `/metrics` route. A background thread runs the upkeep
    /// until the sink and every handle are dropped. Like the exporter's `build_recorder`, it
    /// installs nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::{Labels, Meter};
    /// use tokenmeter_prometheus::{Builder, Profile};
    ///
    /// let (sink, handle) = Builder::new(Profile::Vllm).build_recorder()?;
    /// let meter = Meter::builder().sink(sink).build();
    /// drop(meter.series(&Labels::server("chat").request_model("m")).start());
    /// assert!(handle.render().contains(r#"vllm:request_success_total{model_name="m",engine="0",finished_reason="abort"} 1"#));
    /// # Ok::<(), tokenmeter_prometheus::Error>(())
    /// ```
    pub fn build_recorder(self) -> Result<(PrometheusSink, Handle), Error> {
        let recorder = self.prometheus_builder().build_recorder();
        let prometheus = recorder.handle();
        let upkeep = Upkeep::spawn(prometheus.clone(), self.upkeep)?;
        let target = RecorderTarget::Local(Arc::new(recorder));
        let sink =
            PrometheusSink::from_target(self.profile, target, Some(upkeep.clone()), &self.table);
        Ok((sink, Handle::new(prometheus, self.profile, Some(upkeep))))
    }

    /// A sink and a handle on a recorder of their own.
    #[deprecated(since = "0.2.0", note = "use `build_recorder`; removed in 0.3.0")]
    pub fn build_local(self) -> Result<(PrometheusSink, Handle), Error> {
        self.build_recorder()
    }

    /// A sink that registers with `recorder` only, with this builder's profile and table, and
    /// describes their metrics to it now. Bring your own recorder: a `metrics-exporter-prometheus`
    /// one built from [`prometheus_builder`](Self::prometheus_builder) (which carries the
    /// buckets; this sink does not set them), another exporter's, or one you installed
    /// globally as an `Arc` and kept a clone of. You render, serve and upkeep it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tokenmeter::{Labels, Meter};
    /// use tokenmeter_prometheus::{Builder, Profile};
    ///
    /// let builder = Builder::new(Profile::Semconv);
    /// let recorder = Arc::new(builder.prometheus_builder().build_recorder());
    /// let handle = recorder.handle();
    /// let sink = builder.build_for(recorder);
    ///
    /// let meter = Meter::builder().sink(sink).build();
    /// let mut request = meter.series(&Labels::server("chat").request_model("m")).start();
    /// request.record_tokens(1);
    /// request.succeed();
    /// assert!(handle.render().contains("gen_ai_server_request_duration_seconds_count{gen_ai_operation_name=\"chat\",gen_ai_request_model=\"m\"} 1"));
    /// ```
    pub fn build_for<R>(self, recorder: Arc<R>) -> PrometheusSink
    where
        R: Recorder + Send + Sync + 'static,
    {
        PrometheusSink::from_target(
            self.profile,
            RecorderTarget::Local(recorder),
            None,
            &self.table,
        )
    }

    /// Installs the recorder globally, so `metrics::histogram!` and friends elsewhere in the
    /// process land in the same exposition, without a listener: serve [`Handle::render`]
    /// yourself. A background thread runs the upkeep.
    pub fn install_recorder(self) -> Result<(PrometheusSink, Handle), Error> {
        let recorder = self.prometheus_builder().build_recorder();
        let prometheus = recorder.handle();
        metrics::set_global_recorder(recorder).map_err(|_| Error::AlreadyInstalled)?;
        let upkeep = Upkeep::spawn(prometheus.clone(), self.upkeep)?;
        let sink = PrometheusSink::from_target(
            self.profile,
            RecorderTarget::Global,
            Some(upkeep.clone()),
            &self.table,
        );
        Ok((sink, Handle::new(prometheus, self.profile, Some(upkeep))))
    }

    /// Installs the recorder globally and serves `/metrics` (any path, in fact: `GET` and
    /// `HEAD`) over HTTP/1.1 on [`Builder::listen`]'s address, with a background thread
    /// running the upkeep.
    ///
    /// The listener runs on a thread with a tokio runtime of its own, whether or not the caller
    /// is inside a runtime, and renders on that runtime's blocking pool, one render at a time
    /// shared by the scrapes waiting for it. It is safe to expose by default: a request's
    /// headers must arrive within [`header_timeout`](Self::header_timeout), a connection with no
    /// request is closed after [`idle_timeout`](Self::idle_timeout), a client that reads
    /// nothing is cut after [`send_timeout`](Self::send_timeout), and at most
    /// [`max_connections`](Self::max_connections) are open at once: a new connection at the cap
    /// evicts the least recently active idle one, or is answered 503 when every connection is
    /// answering. [`Handle::listener_stats`] counts each of these.
    ///
    /// The address is bound before anything is installed: a busy address returns
    /// [`Error::Listen`] and leaves the process as it was.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use tokenmeter::Meter;
    /// use tokenmeter_prometheus::{Builder, Profile};
    ///
    /// let (sink, _handle) = Builder::new(Profile::Vllm).install()?; // 127.0.0.1:9464
    /// let meter = Meter::builder().sink(sink).build();
    /// # Ok::<(), tokenmeter_prometheus::Error>(())
    /// ```
    pub fn install(self) -> Result<(PrometheusSink, Handle), Error> {
        let bound = listener::bind(self.listen)?;
        let recorder = self.prometheus_builder().build_recorder();
        let prometheus = recorder.handle();
        metrics::set_global_recorder(recorder).map_err(|_| Error::AlreadyInstalled)?;
        let upkeep = Upkeep::spawn(prometheus.clone(), self.upkeep)?;
        let handle = Handle::new(prometheus, self.profile, Some(upkeep.clone()));
        let counters = bound.serve(handle.clone(), self.limits)?;
        let sink = PrometheusSink::from_target(
            self.profile,
            RecorderTarget::Global,
            Some(upkeep),
            &self.table,
        );
        Ok((sink, handle.with_listener(counters)))
    }
}
