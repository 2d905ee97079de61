//! Views: base-2 exponential histograms instead of explicit buckets, and the cardinality limit.

use opentelemetry_sdk::metrics::{Aggregation, Instrument, InstrumentKind, Stream};

use crate::names::{self, InstrumentKind as Kind};

/// The SDK's cap on attribute sets per instrument that the pipeline sets for this crate's
/// instruments. A series records up to 10 sets on `tokenmeter.requests` (one per outcome and
/// error class); raise it with [`OtlpConfig::cardinality_limit`](crate::OtlpConfig::cardinality_limit)
/// when a meter keeps more than about 400 series. Past it the SDK folds new sets into one
/// `otel.metric.overflow` set.
pub const DEFAULT_CARDINALITY_LIMIT: usize = 4096;

/// How histograms aggregate.
///
/// # Examples
///
/// ```
/// use tokenmeter_otel::HistogramAggregation;
///
/// let exponential = HistogramAggregation::exponential();
/// assert!(matches!(exponential, HistogramAggregation::Exponential { max_size: 160, max_scale: 20 }));
/// assert_eq!(HistogramAggregation::default(), HistogramAggregation::Explicit);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HistogramAggregation {
    /// Explicit bucket boundaries: the semconv advice plus any extra edges (the default).
    /// Needed for exact SLO attainment at a threshold.
    #[default]
    Explicit,
    /// Base-2 exponential buckets: relative error bounded by the scale, no layout to choose.
    Exponential {
        /// Buckets per sign (the SDK default is 160).
        max_size: u32,
        /// The starting (highest) scale, reduced as values spread (the SDK default is 20).
        max_scale: i8,
    },
}

impl HistogramAggregation {
    /// Exponential with the SDK defaults: 160 buckets, scale 20.
    pub const fn exponential() -> Self {
        HistogramAggregation::Exponential {
            max_size: 160,
            max_scale: 20,
        }
    }
}

/// A view for a meter provider: this crate's histograms aggregated as `aggregation`, and the
/// cardinality limit (default [`DEFAULT_CARDINALITY_LIMIT`]) on every instrument of this
/// crate. [`OtlpConfig`](crate::OtlpConfig) adds it for you; add it yourself when you build the
/// provider.
///
/// # Examples
///
/// ```
/// use opentelemetry::metrics::MeterProvider as _;
/// use opentelemetry_sdk::metrics::SdkMeterProvider;
/// use tokenmeter_otel::{HistogramAggregation, OtelSink, views};
///
/// let provider = SdkMeterProvider::builder()
///     .with_view(views(HistogramAggregation::exponential(), None))
///     .build();
/// let sink = OtelSink::new(&provider.meter("tokenmeter"));
/// # drop(sink);
/// ```
pub fn views(
    aggregation: HistogramAggregation,
    cardinality_limit: Option<usize>,
) -> impl Fn(&Instrument) -> Option<Stream> + Send + Sync + 'static {
    let limit = cardinality_limit
        .filter(|&l| l > 0)
        .unwrap_or(DEFAULT_CARDINALITY_LIMIT);
    move |instrument: &Instrument| {
        let ours = names::ALL.iter().find(|m| m.name == instrument.name())?;
        let mut stream = Stream::builder().with_cardinality_limit(limit);
        let histogram =
            ours.kind == Kind::Histogram && instrument.kind() == InstrumentKind::Histogram;
        if let (
            HistogramAggregation::Exponential {
                max_size,
                max_scale,
            },
            true,
        ) = (&aggregation, histogram)
        {
            stream = stream.with_aggregation(Aggregation::Base2ExponentialHistogram {
                max_size: *max_size,
                max_scale: *max_scale,
                record_min_max: true,
            });
        }
        stream.build().ok()
    }
}
