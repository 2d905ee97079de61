//! Every metric and label name this crate publishes, in one place.
//!
//! Names follow upstream: the OpenTelemetry GenAI semantic conventions (status: development) and
//! vLLM's `/metrics`. The semconv names and their units, kinds and descriptions come from
//! [`tokenmeter::conventions`], the one table the OpenTelemetry exporter uses too; vLLM's names
//! exist only here.
//!
//! Each [`MetricName`] carries both spellings of a metric: the OpenTelemetry instrument name
//! with its UCUM unit, and the Prometheus name as it appears in the exposition, which is the
//! OTel→Prometheus translation of the former (dots become underscores, the unit becomes a
//! suffix — `s` → `_seconds`, `1` → `_ratio`, annotations like `{token}` are dropped — and
//! counters end in `_total`). The Prometheus names are spelled out, so that they can be found
//! by searching; the build fails if one is not the translation of its instrument. An
//! OpenTelemetry exporter that creates instruments with [`MetricName::otel`] and
//! [`MetricName::unit`] therefore lands on the same Prometheus series as this crate.
//!
//! - [`semconv`]: the default profile — `gen_ai.*` names, plus what semconv does not name under
//!   the `tokenmeter_` prefix.
//! - [`vllm`]: vLLM's names, so existing vLLM dashboards work unchanged.
//! - [`label`]: label (attribute) names.
//!
//! # Examples
//!
//! ```
//! use tokenmeter_prometheus::names::{self, Kind};
//!
//! let ttft = names::semconv::SERVER_TIME_TO_FIRST_TOKEN;
//! assert_eq!(ttft.otel, "gen_ai.server.time_to_first_token");
//! assert_eq!(ttft.prometheus, "gen_ai_server_time_to_first_token_seconds");
//! assert_eq!((ttft.unit, ttft.kind), ("s", Kind::Histogram));
//! assert_eq!(names::label::REQUEST_MODEL.prometheus, "gen_ai_request_model");
//! ```

pub mod label;
pub mod semconv;
pub mod vllm;

pub use label::LabelName;

use std::fmt;

use tokenmeter::conventions::{Instrument, InstrumentKind};

/// What kind of instrument a metric is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// A histogram with explicit buckets (never a summary).
    Histogram,
    /// A monotonic counter (`_total`).
    Counter,
    /// A value that goes up and down (an OTel up-down counter or gauge).
    Gauge,
}

impl Kind {
    /// The Prometheus kind of an OpenTelemetry instrument kind: up-down counters and gauges
    /// are both gauges.
    pub(crate) const fn of(kind: InstrumentKind) -> Self {
        match kind {
            InstrumentKind::Histogram => Kind::Histogram,
            InstrumentKind::Counter => Kind::Counter,
            InstrumentKind::UpDownCounter | InstrumentKind::Gauge => Kind::Gauge,
        }
    }

    /// `histogram`, `counter` or `gauge`: the Prometheus `# TYPE`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Histogram => "histogram",
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One metric: its OpenTelemetry name and unit, its Prometheus name, kind and help text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct MetricName {
    /// The OpenTelemetry instrument name (`gen_ai.server.time_to_first_token`). For vLLM
    /// metrics, which exist only in Prometheus, the same as [`MetricName::prometheus`].
    pub otel: &'static str,
    /// The name in the Prometheus exposition (`gen_ai_server_time_to_first_token_seconds`).
    pub prometheus: &'static str,
    /// The UCUM unit of the OTel instrument: `s`, `1`, or an annotation such as `{token}`,
    /// `{request}`, `{series}`, `{preemption}` or `{sequence}`.
    pub unit: &'static str,
    /// Histogram, counter or gauge.
    pub kind: Kind,
    /// The `# HELP` text.
    pub help: &'static str,
}

impl MetricName {
    pub(crate) const fn new(
        otel: &'static str,
        prometheus: &'static str,
        unit: &'static str,
        kind: Kind,
        help: &'static str,
    ) -> Self {
        Self {
            otel,
            prometheus,
            unit,
            kind,
            help,
        }
    }

    /// `instrument` of [`tokenmeter::conventions`] published as `prometheus`, with the
    /// instrument's description as help text.
    ///
    /// # Panics
    ///
    /// At compile time (in a `const`) when `prometheus` is not the OTel→Prometheus translation
    /// of the instrument's name.
    pub(crate) const fn semconv(instrument: Instrument, prometheus: &'static str) -> Self {
        assert!(
            instrument.is_prometheus_name(prometheus),
            "a semconv Prometheus name is not the OTel->Prometheus translation of its instrument"
        );
        Self::new(
            instrument.name,
            prometheus,
            instrument.unit,
            Kind::of(instrument.kind),
            instrument.description,
        )
    }

    /// The same metric with another help text: the description with attribute keys spelled as
    /// Prometheus labels.
    pub(crate) const fn with_help(self, help: &'static str) -> Self {
        Self { help, ..self }
    }

    /// The `metrics` unit for `describe_*`: seconds for `s`, a count for `{…}`, none for `1`.
    pub fn metrics_unit(&self) -> Option<metrics::Unit> {
        match self.unit {
            "s" => Some(metrics::Unit::Seconds),
            u if u.starts_with('{') => Some(metrics::Unit::Count),
            _ => None,
        }
    }
}

impl fmt::Display for MetricName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prometheus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_a_valid_prometheus_name_and_unique() {
        for list in [semconv::ALL, vllm::ALL] {
            let mut seen = std::collections::HashSet::new();
            for metric in list {
                let name = metric.prometheus;
                assert!(
                    name.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
                    "{name}"
                );
                assert!(seen.insert(name), "duplicate {name}");
                assert!(!metric.help.is_empty());
                // vLLM's one exception: a histogram named `_total`.
                let counter_like =
                    metric.kind == Kind::Counter || *metric == vllm::ITERATION_TOKENS;
                assert_eq!(name.ends_with("_total"), counter_like, "{name}");
            }
        }
    }
}
