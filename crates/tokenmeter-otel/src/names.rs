//! Every instrument and attribute name this crate publishes: those of
//! [`tokenmeter::conventions`], used as they are.
//!
//! The GenAI semantic-convention names (`gen_ai.*`, status: development) and, for what semconv
//! does not define, `tokenmeter.*` names: the same metrics as the Prometheus exporter's
//! `semconv` profile, so that a user who switches between the OTLP path and the Prometheus path
//! lands on the same series names. [`Instrument::prometheus_name`] is the OTel→Prometheus
//! translation (dots become underscores, `s` becomes `_seconds`, annotations such as `{token}`
//! are dropped, counters end in `_total`).
//!
//! # Examples
//!
//! ```
//! use tokenmeter_otel::names;
//!
//! let queue = names::QUEUE_TIME;
//! assert_eq!((queue.name, queue.unit), ("tokenmeter.request.queue_time", "s"));
//! assert_eq!(queue.prometheus_name(), "tokenmeter_request_queue_time_seconds");
//! assert_eq!(names::REQUESTS.prometheus_name(), "tokenmeter_requests_total");
//! assert_eq!(names::attr::REQUEST_MODEL, "gen_ai.request.model");
//! ```

pub use tokenmeter::conventions::attr;
pub use tokenmeter::conventions::names::*;
pub use tokenmeter::conventions::{Instrument, InstrumentKind};

/// The old name of [`Instrument`] here (the Prometheus exporter's `names::MetricName` is the
/// same deprecated alias).
#[deprecated(
    since = "0.2.0",
    note = "use `Instrument`, the one instrument type of `tokenmeter::conventions`; removed in 0.3.0"
)]
pub type MetricName = Instrument;

/// The old name of [`InstrumentKind`] here (the Prometheus exporter's `names::Kind` is the same
/// deprecated alias).
#[deprecated(since = "0.2.0", note = "use `InstrumentKind`; removed in 0.3.0")]
pub type Kind = InstrumentKind;
