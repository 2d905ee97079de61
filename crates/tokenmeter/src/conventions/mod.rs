//! The metric conventions every exporter publishes, in one place: instrument names with their
//! units and descriptions, attribute keys, and default bucket layouts.
//!
//! The names are the OpenTelemetry GenAI semantic conventions (`gen_ai.*`, status:
//! development) and, for what semconv does not name, `tokenmeter.*`; the layouts are the
//! semconv bucket advice. `docs/src/reference/metrics.md` lists each item with its source. The OpenTelemetry
//! exporter uses these names as they are; the Prometheus exporter publishes their
//! OTel→Prometheus translation ([`Instrument::prometheus_name`]: dots become underscores, the
//! unit becomes a suffix, counters end in `_total`), so both paths land on the same series.
//! Names that only one exporter publishes (vLLM's, in the Prometheus exporter) stay there, as
//! [`Instrument`]s of that exporter that rows are renamed to ([`Row::renamed`]).
//!
//! - [`names`]: every built-in [`Instrument`]; its [`InstrumentKind`] gives the Prometheus
//!   `# TYPE` ([`InstrumentKind::prometheus_type`]).
//! - [`attr`]: attribute keys.
//! - [`ROWS`]: the table. Each [`Row`] is an instrument, the [`Feed`] that records into it
//!   (the event and the field it reads), the [`Roles`] whose series record it, its
//!   [`AttrSet`], and for a histogram its default edges (`TTFT_EDGES`, …) and the [`Metric`]s
//!   whose settings it follows. [`Conventions`] is the table an exporter publishes (the rows,
//!   plus any of your own); both exporters loop over it.
//! - [`Buckets`] replaces or extends the default edges per [`Metric`], for both exporters.
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
//! let table = conventions::Conventions::default();
//! let (metrics, edges) = table.histogram(ttft.name).unwrap();
//! assert_eq!((metrics, edges), (vec![Metric::Ttft], conventions::TTFT_EDGES));
//!
//! let mut buckets = Buckets::new();
//! buckets.add_edges(Metric::Ttft, &[0.35])?; // an SLO threshold becomes an edge
//! assert!(buckets.edges(ttft.name).unwrap().contains(&0.35));
//! # Ok::<(), conventions::BucketError>(())
//! ```

pub mod attr;
mod attr_set;
mod buckets;
mod feed;
mod instrument;
mod kind;
mod metric;
pub mod names;
mod row;
mod settings;
mod table;
mod translate;

pub use attr_set::{AttrSet, Base, FINISHED_REASONS};
pub use buckets::{
    BATCH_SIZE_EDGES, CHOICE_EDGES, DURATION_EDGES, STEP_DURATION_EDGES, TOKEN_EDGES, TPOT_EDGES,
    TTFT_EDGES,
};
pub use feed::{EngineSignal, Feed, FirstTokenField, ItemField, RecordField, StepField, Value};
pub use instrument::Instrument;
pub use kind::InstrumentKind;
pub use metric::Metric;
pub use row::{Roles, Row};
pub use settings::{BucketError, Buckets, DEFAULT_CONTEXT_LENGTH};
pub use table::{Conventions, ROWS, RowError};
