//! Every metric and label name this crate publishes, in one place.
//!
//! Names follow upstream: the OpenTelemetry GenAI semantic conventions (status: development) and
//! vLLM's `/metrics`. When upstream renames something, this module is the one place to change.
//!
//! Each [`MetricName`] carries both spellings of a metric: the OpenTelemetry instrument name
//! with its UCUM unit, and the Prometheus name as it appears in the exposition, which is the
//! OTel→Prometheus translation of the former (dots become underscores, the unit becomes a
//! suffix — `s` → `_seconds`, `1` → `_ratio`, annotations like `{token}` are dropped — and
//! counters end in `_total`). An OpenTelemetry exporter that creates instruments with
//! [`MetricName::otel`] and [`MetricName::unit`] therefore lands on the same Prometheus series as
//! this crate.
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

    /// The OTel→Prometheus translation, as the OpenTelemetry Prometheus exporter does it.
    fn translate(metric: &MetricName) -> String {
        let mut name = metric.otel.replace('.', "_");
        let suffix = match metric.unit {
            "s" => Some("seconds"),
            "1" if metric.kind == Kind::Gauge => Some("ratio"),
            _ => None,
        };
        if let Some(suffix) = suffix {
            name.push('_');
            name.push_str(suffix);
        }
        if metric.kind == Kind::Counter {
            name.push_str("_total");
        }
        name
    }

    #[test]
    fn prometheus_names_are_the_translation_of_the_otel_names() {
        for metric in semconv::ALL {
            assert_eq!(translate(metric), metric.prometheus, "{metric:?}");
        }
    }

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
