//! [`OtelSink`]: the tokenmeter sink that records into OpenTelemetry instruments.

use std::fmt;
use std::sync::Arc;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Gauge, Meter};
use tokenmeter::sink::{EngineSink, SeriesSink, Sink};
use tokenmeter::{Labels, Role};

use crate::Buckets;
use crate::attrs::{self, Set};
use crate::instruments::Instruments;
use crate::series::OtelSeries;
use crate::steps::OtelSteps;

/// A [`Sink`] that records every measurement into OpenTelemetry instruments named by the GenAI
/// semantic conventions (see [`names`](crate::names)).
///
/// The instruments are created once, from the [`Meter`] given to
/// [`OtelSinkBuilder::build`]; the attribute sets of a series are built once, when the series
/// is resolved. Per token-bearing item the sink records one histogram value with a pre-built
/// attribute slice: no allocation.
///
/// Cheap to clone; clones share the instruments.
///
/// # Examples
///
/// ```
/// use opentelemetry::metrics::MeterProvider as _;
/// use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
/// use tokenmeter::{Labels, Meter};
/// use tokenmeter_otel::OtelSink;
///
/// let exporter = InMemoryMetricExporter::default();
/// let provider = SdkMeterProvider::builder()
///     .with_reader(PeriodicReader::builder(exporter.clone()).build())
///     .build();
/// let sink = OtelSink::new(&provider.meter("tokenmeter"));
///
/// let meter = Meter::builder().sink(sink).build();
/// let mut request = meter.series(&Labels::server("chat").request_model("llama")).start();
/// request.tokens(1);
/// request.tokens(1);
/// request.succeed();
///
/// provider.force_flush()?;
/// let exported = exporter.get_finished_metrics()?;
/// let names: Vec<String> = exported[0]
///     .scope_metrics()
///     .flat_map(|scope| scope.metrics().map(|m| m.name().to_owned()))
///     .collect();
/// assert!(names.iter().any(|n| n == "gen_ai.server.time_to_first_token"));
/// assert!(names.iter().any(|n| n == "tokenmeter.inter_token_latency"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct OtelSink {
    inner: Arc<Shared>,
}

struct Shared {
    instruments: Arc<Instruments>,
    folded: [[KeyValue; 1]; 2],
    bound: bool,
}

impl OtelSink {
    /// A sink with the default buckets, on instruments from `meter`.
    pub fn new(meter: &Meter) -> Self {
        OtelSinkBuilder::default().build(meter)
    }

    /// A builder, to change the buckets.
    pub fn builder() -> OtelSinkBuilder {
        OtelSinkBuilder::default()
    }

    /// Setters for engine-wide metrics (KV-cache usage, preemptions) with the semconv
    /// attributes of `labels` (without `gen_ai.operation.name`). Get it once and keep it.
    pub fn engine(&self, labels: &Labels<'_>) -> EngineGauges {
        EngineGauges {
            kv_cache_usage: self.inner.instruments.kv_cache_usage.clone(),
            preemptions: self.inner.instruments.preemptions.clone(),
            attrs: attrs::engine(&labels.sanitized()),
        }
    }
}

impl Sink for OtelSink {
    fn series(&self, labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        let instruments = self.inner.instruments.clone();
        Box::new(OtelSeries::new(instruments, labels, self.inner.bound))
    }

    fn series_folded(&self, role: Role) {
        let index = usize::from(role == Role::Client);
        self.inner
            .instruments
            .folded
            .add(1, &self.inner.folded[index]);
    }

    /// The engine-step instruments (`tokenmeter.engine.*`) with `labels`' engine attributes
    /// (without `gen_ai.operation.name`) plus `kind`, prepared once per engine.
    fn steps(&self, labels: &Labels<'_>) -> Option<Box<dyn EngineSink>> {
        let instruments = self.inner.instruments.clone();
        Some(Box::new(OtelSteps::new(instruments, labels)))
    }
}

impl fmt::Debug for OtelSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelSink")
            .field("bound_instruments", &self.inner.bound)
            .finish_non_exhaustive()
    }
}

/// Builds an [`OtelSink`]: bucket layouts, and (feature `bound-instruments`) whether to record
/// through the SDK's bound instruments.
///
/// # Examples
///
/// ```
/// use opentelemetry::metrics::MeterProvider as _;
/// use opentelemetry_sdk::metrics::SdkMeterProvider;
/// use tokenmeter_otel::{Buckets, Metric, OtelSink};
///
/// let mut buckets = Buckets::new();
/// buckets.add_edges(Metric::Ttft, &[0.35])?; // an SLO threshold becomes a bucket edge
/// let provider = SdkMeterProvider::builder().build();
/// let sink = OtelSink::builder().buckets(buckets).build(&provider.meter("tokenmeter"));
/// # drop(sink);
/// # Ok::<(), tokenmeter_otel::BucketError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct OtelSinkBuilder {
    buckets: Buckets,
    bound: bool,
}

impl OtelSinkBuilder {
    /// The bucket layouts (default: the semconv advice).
    pub fn buckets(mut self, buckets: Buckets) -> Self {
        self.buckets = buckets;
        self
    }

    /// Records the per-token histogram through an SDK bound instrument: the attribute lookup
    /// is done once per series instead of once per item. Off by default (the portable path),
    /// even with the feature enabled, so that enabling the feature elsewhere in a build changes
    /// nothing until asked for.
    #[cfg(feature = "bound-instruments")]
    #[cfg_attr(docsrs, doc(cfg(feature = "bound-instruments")))]
    pub fn bound_instruments(mut self, on: bool) -> Self {
        self.bound = on;
        self
    }

    /// The sink, with its instruments created from `meter`.
    pub fn build(&self, meter: &Meter) -> OtelSink {
        OtelSink {
            inner: Arc::new(Shared {
                instruments: Arc::new(Instruments::new(meter, &self.buckets)),
                folded: [Role::Server, Role::Client].map(|role| [attrs::role(role)]),
                bound: self.bound,
            }),
        }
    }
}

/// Setters for engine-level metrics: `tokenmeter.kv_cache.usage` and `tokenmeter.preemptions`.
/// Get one with [`OtelSink::engine`] and keep it.
///
/// # Examples
///
/// ```
/// use opentelemetry::metrics::MeterProvider as _;
/// use opentelemetry_sdk::metrics::SdkMeterProvider;
/// use tokenmeter::Labels;
/// use tokenmeter_otel::OtelSink;
///
/// let provider = SdkMeterProvider::builder().build();
/// let sink = OtelSink::new(&provider.meter("tokenmeter"));
/// let engine = sink.engine(&Labels::server("chat").request_model("llama"));
/// engine.set_kv_cache_usage(0.42);
/// engine.add_preemptions(1);
/// ```
#[derive(Clone)]
pub struct EngineGauges {
    kv_cache_usage: Gauge<f64>,
    preemptions: Counter<u64>,
    attrs: Set,
}

impl EngineGauges {
    /// Sets the KV-cache usage, a fraction from 0 (empty) to 1 (full). Values outside are
    /// clamped; NaN is ignored.
    pub fn set_kv_cache_usage(&self, fraction: f64) {
        if !fraction.is_nan() {
            self.kv_cache_usage
                .record(fraction.clamp(0.0, 1.0), &self.attrs);
        }
    }

    /// Counts `count` more preempted requests.
    pub fn add_preemptions(&self, count: u64) {
        self.preemptions.add(count, &self.attrs);
    }
}

impl fmt::Debug for EngineGauges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineGauges")
            .field("attributes", &self.attrs)
            .finish_non_exhaustive()
    }
}
