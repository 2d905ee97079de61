//! [`SloMonitor`]: a sink that judges every request, publishes the verdict counters and keeps
//! the in-process windows.

mod publish;
mod saturation;

pub use saturation::{SaturationLevel, SaturationSignal};

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokenmeter::sink::{EngineSink, Gauge, SeriesSink, Sink};
use tokenmeter::{Clock, Labels, RequestRecord, Role};

use crate::run::RunStatus;
use crate::spec::SloSpec;
use crate::spec::{Placement, Unclassified};
use crate::status::{SloStatus, UnclassifiedCounts};
use crate::verdict::Verdict;
use crate::window::Windows;
use publish::{Counters, PublishTarget, UnclassifiedCounters};
use saturation::Saturation;

/// Judges every request against the spec, counts verdicts (through the `metrics` facade when
/// asked), and answers goodput, attainment, percentiles, burn rates, alerts, saturation and
/// diagnosis for in-process windows.
///
/// Add it to a [`Meter`](tokenmeter::Meter) like any sink. Clones share the same state.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::{Clock, Labels, ManualClock, Meter};
/// use tokenmeter_slo::{LatencyMetric, Objective, SloMonitor, SloSpec};
///
/// let spec = SloSpec::builder()
///     .objective(Objective::latency(LatencyMetric::Ttft, 95.0, Duration::from_millis(200)))
///     .build()
///     .unwrap();
/// let time = ManualClock::new();
/// let clock = Clock::manual(&time);
/// let monitor = SloMonitor::new(spec, clock.clone());
/// let meter = Meter::builder().clock(clock).sink(monitor.clone()).build();
/// let series = meter.series(&Labels::server("chat"));
/// for ttft_ms in [100, 150, 300] {
///     let mut request = series.start();
///     time.advance(Duration::from_millis(ttft_ms));
///     request.record_tokens(1);
///     request.succeed();
/// }
/// let status = monitor.status();
/// let five_minutes = &status.classes[0].windows[0];
/// assert_eq!((five_minutes.requests, five_minutes.good), (3, 2));
/// ```
#[derive(Clone)]
pub struct SloMonitor {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) spec: SloSpec,
    pub(crate) clock: Clock,
    pub(crate) started: Duration,
    pub(crate) classes: Vec<Mutex<Windows>>,
    pub(crate) saturation: Saturation,
    /// Requests with objective headers no class took, per [`Unclassified::ALL`].
    unclassified: [AtomicU64; 2],
    target: PublishTarget,
}

impl Shared {
    fn count_unclassified(&self, reason: Unclassified) {
        let index = Unclassified::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or_default();
        self.unclassified[index].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts since the start, for a spec with header classes.
    pub(crate) fn unclassified(&self) -> Option<UnclassifiedCounts> {
        let read = |i: usize| self.unclassified[i].load(Ordering::Relaxed);
        self.spec.has_header_classes().then(|| UnclassifiedCounts {
            malformed: read(0),
            no_class: read(1),
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SloMonitor {
    /// A monitor for `spec`, reading time from `clock` (use the meter's clock). Publishes no
    /// counters; see [`SloMonitor::publish_global`] and [`SloMonitor::publish_to`].
    pub fn new(spec: SloSpec, clock: Clock) -> Self {
        Self::with_target(spec, clock, PublishTarget::None)
    }

    /// The same, publishing the verdict counters (see [`names`](crate::names)) to the global
    /// `metrics` recorder installed at the time each series is created.
    pub fn publish_global(spec: SloSpec, clock: Clock) -> Self {
        Self::with_target(spec, clock, PublishTarget::Global)
    }

    /// The same, publishing the verdict counters to `recorder` (for example the Prometheus
    /// recorder serving `/metrics`, or a test's local recorder).
    pub fn publish_to(
        spec: SloSpec,
        clock: Clock,
        recorder: Arc<dyn metrics::Recorder + Send + Sync>,
    ) -> Self {
        Self::with_target(spec, clock, PublishTarget::Recorder(recorder))
    }

    /// The same, publishing the verdict counters as OpenTelemetry counters on `meter`
    /// (`tokenmeter.slo.requests_good`, … — see [`names::otel`](crate::names::otel)), which an
    /// OTLP pipeline exports next to the tokenmeter-otel histograms. Feature `otel`.
    #[cfg(feature = "otel")]
    pub fn publish_otel(spec: SloSpec, clock: Clock, meter: opentelemetry::metrics::Meter) -> Self {
        Self::with_target(spec, clock, PublishTarget::Otel(meter))
    }

    fn with_target(spec: SloSpec, clock: Clock, target: PublishTarget) -> Self {
        let classes = spec
            .classes
            .iter()
            .map(|c| Mutex::new(Windows::new(c.objectives.len(), spec.period)))
            .collect();
        let saturation = Saturation::new(spec.saturation);
        Self {
            shared: Arc::new(Shared {
                started: clock.now(),
                spec,
                clock,
                classes,
                saturation,
                unclassified: Default::default(),
                target,
            }),
        }
    }

    /// The spec.
    pub fn spec(&self) -> &SloSpec {
        &self.shared.spec
    }

    /// Sets the KV-cache usage (0–1) for the saturation warning. A monitor added to a meter
    /// also receives it from the engine's
    /// [`EngineRecorder::set_kv_cache_usage`](tokenmeter::sink::EngineRecorder::set_kv_cache_usage)
    /// ([`Meter::engine`](tokenmeter::Meter::engine)), like every other sink.
    pub fn set_kv_usage(&self, usage: f64) {
        self.shared
            .saturation
            .set_kv(self.shared.clock.now(), usage);
    }

    /// Everything the monitor knows, now.
    pub fn status(&self) -> SloStatus {
        let now = self.shared.clock.now();
        SloStatus::compute(&self.shared, now, |class| lock(&self.shared.classes[class]))
    }

    /// What the monitor saw since it started, for a bounded run such as a benchmark: the
    /// whole run and only the windows it covered, the run's bad fraction against the allowed
    /// one, alerts of covered windows only, saturation only where observed (see
    /// [`RunStatus`]). [`status`](Self::status) is for a long-running process.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter::{Clock, Labels, ManualClock, Meter};
    /// use tokenmeter_slo::{LatencyMetric, Objective, SloMonitor, SloSpec};
    ///
    /// let spec = SloSpec::builder()
    ///     .objective(Objective::latency(LatencyMetric::Ttft, 90.0, Duration::from_millis(200)))
    ///     .build()
    ///     .unwrap();
    /// let time = ManualClock::new();
    /// let clock = Clock::manual(&time);
    /// let monitor = SloMonitor::new(spec, clock.clone());
    /// let meter = Meter::builder().clock(clock).sink(monitor.clone()).build();
    /// let series = meter.series(&Labels::client("chat"));
    /// for ttft_ms in [100, 150, 300, 120] {
    ///     let mut request = series.start();
    ///     time.advance(Duration::from_millis(ttft_ms));
    ///     request.record_tokens(1);
    ///     request.succeed();
    /// }
    /// time.advance(Duration::from_secs(70));
    /// let run = monitor.run_status();
    /// assert!(run.not_covered.contains(&"5m".to_owned()), "a 70 s run covers no window");
    /// let ttft = &run.classes[0].objectives[0];
    /// assert_eq!((ttft.events, ttft.good), (4, 3));
    /// // One bad request in four against the 10% allowed: 2.5 times the allowed rate.
    /// assert!((ttft.burn_rate.unwrap() - 2.5).abs() < 1e-9);
    /// assert!(ttft.windows.is_empty());
    /// ```
    pub fn run_status(&self) -> RunStatus {
        let now = self.shared.clock.now();
        RunStatus::compute(&self.shared, now, |class| lock(&self.shared.classes[class]))
    }

    /// Records a finished request directly (without a meter), against the class of its series
    /// or, when it carries objective headers, its header class ([`SloSpec::place`]).
    pub fn record(&self, record: &RequestRecord) {
        match self.place(record) {
            Placement::Class(class) => {
                self.judge(class, record);
            }
            Placement::Unclassified(reason) => self.shared.count_unclassified(reason),
            Placement::None => {}
        }
    }

    fn place(&self, record: &RequestRecord) -> Placement {
        self.shared
            .spec
            .place(record.series.labels(), record.slo_targets.as_ref())
    }

    fn judge(&self, class: usize, record: &RequestRecord) -> Verdict {
        let spec_class = &self.shared.spec.classes[class];
        let verdict = Verdict::of(spec_class, record);
        let contribution = verdict.contribution(spec_class, record);
        lock(&self.shared.classes[class]).record(record.end(), &contribution);
        verdict
    }
}

impl fmt::Debug for SloMonitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SloMonitor")
            .field("classes", &self.shared.spec.classes.len())
            .field("target", &self.shared.target)
            .finish()
    }
}

struct MonitorSeries {
    monitor: SloMonitor,
    /// Per class of the spec: this series' counters, for its own class and the header classes
    /// matching it (resolved once, here).
    counters: Vec<Option<Counters>>,
    /// Requests with objective headers counted under no class; only for a spec with header
    /// classes.
    unclassified: Option<UnclassifiedCounters>,
    /// A server's series: its `waiting` gauge is a queue. A client's counts requests awaiting
    /// their first token, which is no queue and feeds no saturation warning.
    queue: bool,
}

impl Sink for SloMonitor {
    fn series(&self, labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        let spec = &self.shared.spec;
        let own = spec.class_of(labels);
        let counters = spec
            .classes
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let reachable = Some(i) == own || (c.from_headers && c.selector.matches(labels));
                reachable
                    .then(|| Counters::new(&self.shared.target, c))
                    .flatten()
            })
            .collect();
        let unclassified = spec
            .has_header_classes()
            .then(|| UnclassifiedCounters::new(&self.shared.target))
            .flatten();
        Box::new(MonitorSeries {
            monitor: self.clone(),
            counters,
            unclassified,
            queue: labels.role() == Role::Server,
        })
    }

    /// The engine's KV-cache usage, for the saturation warning.
    fn engine(&self, _labels: &Labels<'_>) -> Option<Box<dyn EngineSink>> {
        Some(Box::new(MonitorEngine(self.clone())))
    }
}

/// The monitor's handle for an engine: its KV-cache usage feeds the saturation warning.
struct MonitorEngine(SloMonitor);

impl EngineSink for MonitorEngine {
    fn kv_cache_usage(&self, fraction: f64) {
        self.0.set_kv_usage(fraction);
    }
}

impl SeriesSink for MonitorSeries {
    fn end(&self, record: &RequestRecord) {
        match self.monitor.place(record) {
            Placement::Class(class) => {
                let verdict = self.monitor.judge(class, record);
                if let Some(Some(counters)) = self.counters.get(class) {
                    counters.publish(&verdict, record.output_tokens);
                }
            }
            Placement::Unclassified(reason) => {
                self.monitor.shared.count_unclassified(reason);
                if let Some(counters) = &self.unclassified {
                    counters.publish(reason);
                }
            }
            Placement::None => {}
        }
    }

    fn gauge(&self, gauge: Gauge, delta: i64) {
        if gauge == Gauge::Waiting && self.queue {
            let shared = &self.monitor.shared;
            shared.saturation.add_waiting(shared.clock.now(), delta);
        }
    }
}
