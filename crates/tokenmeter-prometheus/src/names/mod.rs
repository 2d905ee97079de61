//! Every metric and label name this crate publishes, in one place.
//!
//! Names follow upstream: the OpenTelemetry GenAI semantic conventions (status: development) and
//! vLLM's `/metrics`. A metric is an [`Instrument`] of [`tokenmeter::conventions`], the one
//! vocabulary of both exporters: its name, unit, [`InstrumentKind`] and description. The semconv
//! instruments are the conventions' own ([`semconv`]); vLLM's are instruments of this crate
//! ([`vllm`]), which the vLLM profile renames the conventions' rows to.
//!
//! How an instrument appears in the exposition is decided in one place:
//!
//! - its name, [`exposition_name`]: the OTel→Prometheus translation of its name
//!   ([`Instrument::prometheus_name`]: dots become underscores, the unit becomes a suffix —
//!   `s` → `_seconds`, `1` → `_ratio`, annotations like `{token}` are dropped — and counters end
//!   in `_total`), or its name as it is when that is already a Prometheus name (vLLM's, with
//!   `:`). An OpenTelemetry exporter that creates the semconv instruments therefore lands on
//!   the same Prometheus series as this crate.
//! - its `# HELP` text, [`help`]: the description, attribute keys spelled as labels.
//! - its `# TYPE`: [`InstrumentKind::prometheus_type`] (up-down counters and gauges are gauges).
//!
//! The modules:
//!
//! - [`semconv`]: the default profile — `gen_ai.*` names, plus what semconv does not name under
//!   the `tokenmeter_` prefix; the Prometheus names spelled out and checked when this crate
//!   compiles.
//! - [`vllm`]: vLLM's names, so existing vLLM dashboards work unchanged.
//! - [`label`]: label (attribute) names.
//!
//! # Examples
//!
//! ```
//! use tokenmeter::conventions::InstrumentKind;
//! use tokenmeter_prometheus::names::{self, exposition_name};
//!
//! let ttft = names::semconv::SERVER_TIME_TO_FIRST_TOKEN;
//! assert_eq!(ttft.name, "gen_ai.server.time_to_first_token");
//! assert_eq!(exposition_name(&ttft), "gen_ai_server_time_to_first_token_seconds");
//! assert_eq!((ttft.unit, ttft.kind), ("s", InstrumentKind::Histogram));
//! assert_eq!(ttft.kind.prometheus_type(), "histogram");
//! assert_eq!(exposition_name(&names::vllm::TIME_TO_FIRST_TOKEN), "vllm:time_to_first_token_seconds");
//! assert_eq!(names::label::REQUEST_MODEL.prometheus, "gen_ai_request_model");
//! ```

mod exposition;
pub mod label;
pub mod semconv;
pub mod vllm;

pub use exposition::{exposition_name, help};
pub use label::LabelName;

use tokenmeter::conventions::{Instrument, InstrumentKind};

/// The old type of the constants of [`semconv`] and [`vllm`], which are now [`Instrument`]s:
/// `otel` is [`Instrument::name`], `prometheus` is [`exposition_name`], `help` is [`help`].
#[deprecated(
    since = "0.2.0",
    note = "use `Instrument` of `tokenmeter::conventions` (`exposition_name` gives its Prometheus name, `help` its help text); removed in 0.3.0"
)]
pub type MetricName = Instrument;

/// The old Prometheus kind of a metric, now [`InstrumentKind`] of [`tokenmeter::conventions`]:
/// its [`prometheus_type`](InstrumentKind::prometheus_type) is the `# TYPE`.
#[deprecated(
    since = "0.2.0",
    note = "use `InstrumentKind` of `tokenmeter::conventions` (`prometheus_type()` is the `# TYPE`); removed in 0.3.0"
)]
pub type Kind = InstrumentKind;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_a_valid_prometheus_name_and_unique() {
        let vllm_all: Vec<Instrument> = [vllm::ALL, vllm::legacy::ALL].concat();
        for list in [semconv::ALL, &vllm_all] {
            let mut seen = std::collections::HashSet::new();
            for metric in list {
                let name = exposition_name(metric);
                assert!(
                    name.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
                    "{name}"
                );
                assert!(seen.insert(name.clone()), "duplicate {name}");
                assert!(!help(metric).is_empty());
                // vLLM's one exception: a histogram named `_total`.
                let counter_like =
                    metric.kind == InstrumentKind::Counter || *metric == vllm::ITERATION_TOKENS;
                assert_eq!(name.ends_with("_total"), counter_like, "{name}");
            }
        }
    }

    #[test]
    fn vllm_names_are_published_as_they_are() {
        for metric in [vllm::ALL, vllm::legacy::ALL].concat() {
            assert!(metric.name.starts_with("vllm:"), "{}", metric.name);
            assert_eq!(exposition_name(&metric), metric.name);
        }
        assert_eq!(
            exposition_name(&vllm::ITERATION_TOKENS),
            "vllm:iteration_tokens_total"
        );
    }
}
