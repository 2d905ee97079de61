//! The metric conventions every exporter publishes, in one place: instrument names with their
//! units and descriptions, attribute keys, and default bucket layouts.
//!
//! The names are the OpenTelemetry GenAI semantic conventions (`gen_ai.*`, status:
//! development) and, for what semconv does not name, `tokenmeter.*`; the layouts are the
//! semconv bucket advice. `docs/metrics.md` lists each item with its source. The OpenTelemetry
//! exporter uses these names as they are; the Prometheus exporter publishes their
//! OTel→Prometheus translation ([`Instrument::prometheus_name`]: dots become underscores, the
//! unit becomes a suffix, counters end in `_total`), so both paths land on the same series.
//! Names that only one exporter publishes (vLLM's, in the Prometheus exporter) stay there.
//!
//! - [`names`]: every [`Instrument`].
//! - [`attr`]: attribute keys.
//! - [`HISTOGRAMS`]: the default edges of every histogram (`TTFT_EDGES`, …) and the [`Metric`]
//!   whose settings it follows; [`Buckets`] replaces or extends them per [`Metric`].
//!
//! # Examples
//!
//! ```
//! use tokenmeter::conventions::{self, Buckets, InstrumentKind, Metric, names};
//!
//! let ttft = names::SERVER_TIME_TO_FIRST_TOKEN;
//! assert_eq!((ttft.name, ttft.unit), ("gen_ai.server.time_to_first_token", "s"));
//! assert_eq!(ttft.kind, InstrumentKind::Histogram);
//! assert_eq!(ttft.prometheus_name(), "gen_ai_server_time_to_first_token_seconds");
//! assert_eq!(names::REQUESTS.prometheus_name(), "tokenmeter_requests_total");
//!
//! let histogram = conventions::histogram(ttft.name).unwrap();
//! assert_eq!((histogram.metrics, histogram.edges), (&[Metric::Ttft][..], conventions::TTFT_EDGES));
//!
//! let mut buckets = Buckets::new();
//! buckets.add_edges(Metric::Ttft, &[0.35])?; // an SLO threshold becomes an edge
//! assert!(buckets.edges(ttft.name).unwrap().contains(&0.35));
//! # Ok::<(), conventions::BucketError>(())
//! ```

pub mod attr;
mod buckets;
mod instrument;
mod metric;
pub mod names;
mod settings;
mod translate;

pub use buckets::{
    BATCH_SIZE_EDGES, DURATION_EDGES, HISTOGRAMS, Histogram, STEP_DURATION_EDGES, TOKEN_EDGES,
    TPOT_EDGES, TTFT_EDGES, histogram,
};
pub use instrument::{Instrument, InstrumentKind};
pub use metric::Metric;
pub use settings::{BucketError, Buckets};
