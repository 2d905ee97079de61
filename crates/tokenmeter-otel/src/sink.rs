//! [`OtelSink`]: the tokenmeter sink that records into OpenTelemetry instruments.

use std::fmt;
use std::sync::Arc;

use opentelemetry::KeyValue;
use opentelemetry::metrics::Meter;
use tokenmeter::conventions::{Conventions, Feed, Value};
use tokenmeter::sink::{EngineSink, SeriesSink, Sink};
use tokenmeter::{Labels, Role};

use crate::Buckets;
use crate::attrs;
use crate::instruments::{Instrument, Instruments};
use crate::series::OtelSeries;
use crate::steps::engine_rows;

/// A [`Sink`] that records every measurement into OpenTelemetry instruments named by the GenAI
/// semantic conventions (see [`names`](crate::names)).
///
/// The sink publishes the rows of a [`Conventions`] table ([`Conventions::current`] unless
/// [`OtelSinkBuilder::conventions`] gives another): one instrument per name, created once from
/// the [`Meter`] given to [`OtelSinkBuilder::build`]; the attribute sets of each row a series
/// records are built once, when the series is resolved. Per token-bearing item the sink records
/// one histogram value with a pre-built attribute slice: no allocation.
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
/// request.record_tokens(1);
/// request.record_tokens(1);
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
    instruments: Instruments,
    /// Per [`Feed::Folded`] row, its instrument and the server's and client's set.
    folded: Box<[(Instrument, [[KeyValue; 1]; 2])]>,
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
}

impl Sink for OtelSink {
    fn series(&self, labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(OtelSeries::new(
            &self.inner.instruments,
            labels,
            self.inner.bound,
        ))
    }

    fn series_folded(&self, role: Role) {
        let index = usize::from(role == Role::Client);
        for (instrument, sets) in self.inner.folded.iter() {
            instrument.record(Value::Count(1), &sets[index]);
        }
    }

    /// The engine instruments (`tokenmeter.engine.*`, KV-cache usage, preemptions) with
    /// `labels`' engine attributes (without `gen_ai.operation.name`, plus `kind` on steps),
    /// prepared once per engine.
    fn engine(&self, labels: &Labels<'_>) -> Option<Box<dyn EngineSink>> {
        Some(Box::new(engine_rows(&self.inner.instruments, labels)))
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
#[derive(Clone, Debug)]
pub struct OtelSinkBuilder {
    buckets: Buckets,
    table: Conventions,
    bound: bool,
}

impl Default for OtelSinkBuilder {
    /// The semconv bucket advice, [`Conventions::current`] (no superseded names) and the
    /// portable recording path.
    fn default() -> Self {
        Self {
            buckets: Buckets::default(),
            table: Conventions::current(),
            bound: false,
        }
    }
}

impl OtelSinkBuilder {
    /// The bucket layouts (default: the semconv advice).
    pub fn buckets(mut self, buckets: Buckets) -> Self {
        self.buckets = buckets;
        self
    }

    /// Replaces the conventions table: every row becomes an instrument (one per name), fed by
    /// its event.
    ///
    /// The default is [`Conventions::current`]: the built-in rows without the instruments the
    /// GenAI conventions v0.1.0 replaced ([`names::SUPERSEDED`](crate::names::SUPERSEDED):
    /// `gen_ai.client.operation.duration`, `…time_to_first_chunk`, `…time_per_output_chunk` and
    /// `gen_ai.client.token.usage`), so a client series records each gap once, under
    /// `gen_ai.client.inference.time_per_output_chunk`. Dashboards that still read the older
    /// names ask for them with the whole built-in table, [`Conventions::default`]: every
    /// superseded instrument is then recorded beside its successor, with the same samples (a
    /// second histogram record per token-bearing item on a client series).
    ///
    /// ```
    /// use opentelemetry::metrics::MeterProvider as _;
    /// use opentelemetry_sdk::metrics::SdkMeterProvider;
    /// use tokenmeter::conventions::Conventions;
    /// use tokenmeter_otel::OtelSink;
    ///
    /// let provider = SdkMeterProvider::builder().build();
    /// // the v0.1.0 names and, for older dashboards, the superseded ones too
    /// let sink = OtelSink::builder()
    ///     .conventions(Conventions::default())
    ///     .build(&provider.meter("tokenmeter"));
    /// # drop(sink);
    /// ```
    ///
    /// A table of your own:
    ///
    /// ```
    /// use opentelemetry::metrics::MeterProvider as _;
    /// use opentelemetry_sdk::metrics::SdkMeterProvider;
    /// use tokenmeter::conventions::{
    ///     AttrSet, Conventions, Feed, Instrument, InstrumentKind, RecordField, Roles, Row,
    /// };
    /// use tokenmeter_otel::OtelSink;
    ///
    /// let frames = Instrument::new("example.frames", "{frame}", InstrumentKind::Counter, "Frames.");
    /// let mut table = Conventions::current();
    /// table.push(Row::new(frames, Feed::End(RecordField::Frames), Roles::Both, AttrSet::Own))?;
    /// let provider = SdkMeterProvider::builder().build();
    /// let sink = OtelSink::builder().conventions(table).build(&provider.meter("tokenmeter"));
    /// # drop(sink);
    /// # Ok::<(), tokenmeter::conventions::RowError>(())
    /// ```
    pub fn conventions(mut self, table: Conventions) -> Self {
        self.table = table;
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
        let instruments = Instruments::new(meter, &self.buckets, &self.table);
        let folded = instruments
            .rows
            .iter()
            .filter(|(row, _)| row.feed == Feed::Folded)
            .map(|(_, instrument)| {
                let sets = [Role::Server, Role::Client].map(|role| [attrs::role_value(role)]);
                (instrument.clone(), sets)
            })
            .collect();
        OtelSink {
            inner: Arc::new(Shared {
                instruments,
                folded,
                bound: self.bound,
            }),
        }
    }
}
