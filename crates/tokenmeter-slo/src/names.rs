//! The counters the SLO monitor publishes, and their labels: instruments of the same kind as
//! the rows of [`tokenmeter::conventions`] (an OpenTelemetry name, unit, kind and description),
//! whose Prometheus names are their OTel→Prometheus translation, checked when this crate
//! compiles. Both paths (the `metrics` facade, OpenTelemetry) publish [`ALL`].
//!
//! Every counter carries `slo_class`; the per-objective ones also carry `objective`; the
//! unclassified one carries only `reason`. Fleet-wide
//! goodput is `sum(rate(tokenmeter_slo_requests_good_total[5m]))`, exact across replicas because
//! the joint predicate is evaluated once per request, at its end.

use tokenmeter::conventions::{Instrument, InstrumentKind};

/// One verdict counter: its instrument and its Prometheus name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SloCounter {
    /// The OpenTelemetry instrument (`tokenmeter.slo.requests_good`, `{request}`).
    pub instrument: Instrument,
    /// Its Prometheus name (`tokenmeter_slo_requests_good_total`).
    pub prometheus: &'static str,
}

const fn define(
    name: &'static str,
    unit: &'static str,
    description: &'static str,
    prometheus: &'static str,
) -> SloCounter {
    let instrument = Instrument::new(name, unit, InstrumentKind::Counter, description);
    assert!(
        instrument.is_prometheus_name(prometheus),
        "an SLO counter's Prometheus name is not the OTel->Prometheus translation of its instrument"
    );
    SloCounter {
        instrument,
        prometheus,
    }
}

const C_REQUESTS: SloCounter = define(
    "tokenmeter.slo.requests",
    "{request}",
    "Requests evaluated against their SLO class.",
    "tokenmeter_slo_requests_total",
);
const C_REQUESTS_GOOD: SloCounter = define(
    "tokenmeter.slo.requests_good",
    "{request}",
    "Requests that succeeded and met every latency objective of their class.",
    "tokenmeter_slo_requests_good_total",
);
const C_OUTPUT_TOKENS: SloCounter = define(
    "tokenmeter.slo.output_tokens",
    "{token}",
    "Output tokens of every evaluated request.",
    "tokenmeter_slo_output_tokens_total",
);
const C_OUTPUT_TOKENS_GOOD: SloCounter = define(
    "tokenmeter.slo.output_tokens_good",
    "{token}",
    "Output tokens of good requests: token goodput.",
    "tokenmeter_slo_output_tokens_good_total",
);
const C_OBJECTIVE_EVENTS: SloCounter = define(
    "tokenmeter.slo.objective_events",
    "{event}",
    "Valid events per objective (the SLI's denominator).",
    "tokenmeter_slo_objective_events_total",
);
const C_OBJECTIVE_GOOD: SloCounter = define(
    "tokenmeter.slo.objective_good",
    "{event}",
    "Good events per objective (the SLI's numerator).",
    "tokenmeter_slo_objective_good_total",
);
const C_REQUESTS_UNCLASSIFIED: SloCounter = define(
    "tokenmeter.slo.requests_unclassified",
    "{request}",
    "Requests whose objective headers were malformed or held by no declared class, by reason.",
    "tokenmeter_slo_requests_unclassified_total",
);

/// Every verdict counter, in the order above.
pub const ALL: [SloCounter; 7] = [
    C_REQUESTS,
    C_REQUESTS_GOOD,
    C_OUTPUT_TOKENS,
    C_OUTPUT_TOKENS_GOOD,
    C_OBJECTIVE_EVENTS,
    C_OBJECTIVE_GOOD,
    C_REQUESTS_UNCLASSIFIED,
];

/// Requests evaluated against their class.
pub const REQUESTS: &str = C_REQUESTS.prometheus;
/// Requests that succeeded and met every latency objective.
pub const REQUESTS_GOOD: &str = C_REQUESTS_GOOD.prometheus;
/// Output tokens of every evaluated request.
pub const OUTPUT_TOKENS: &str = C_OUTPUT_TOKENS.prometheus;
/// Output tokens of good requests: token goodput.
pub const OUTPUT_TOKENS_GOOD: &str = C_OUTPUT_TOKENS_GOOD.prometheus;
/// Valid events per objective (the SLI's denominator).
pub const OBJECTIVE_EVENTS: &str = C_OBJECTIVE_EVENTS.prometheus;
/// Good events per objective (the SLI's numerator).
pub const OBJECTIVE_GOOD: &str = C_OBJECTIVE_GOOD.prometheus;
/// Requests with objective headers counted under no class, by [`REASON`]
/// ([`Unclassified`](crate::spec::Unclassified)): published only when the spec declares a
/// header class.
pub const REQUESTS_UNCLASSIFIED: &str = C_REQUESTS_UNCLASSIFIED.prometheus;

/// Label: the class name.
pub const SLO_CLASS: &str = "slo_class";
/// Label: the objective name.
pub const OBJECTIVE: &str = "objective";
/// Label of [`REQUESTS_UNCLASSIFIED`]: `malformed` or `no_class`.
pub const REASON: &str = "reason";

/// The counter of [`ALL`] whose Prometheus name is `prometheus`.
///
/// # Examples
///
/// ```
/// use tokenmeter_slo::names;
/// let good = names::counter(names::REQUESTS_GOOD).unwrap().instrument;
/// assert_eq!((good.name, good.unit), ("tokenmeter.slo.requests_good", "{request}"));
/// assert_eq!(good.prometheus_name(), names::REQUESTS_GOOD);
/// ```
pub fn counter(prometheus: &str) -> Option<&'static SloCounter> {
    ALL.iter().find(|c| c.prometheus == prometheus)
}

/// The OpenTelemetry instrument name and unit of a counter above: the name whose
/// OTel→Prometheus translation (dots to underscores, `_total` for counters) is the Prometheus
/// name, so both paths land on the same series. An unknown name gives the objective-good
/// counter's.
///
/// # Examples
///
/// ```
/// use tokenmeter_slo::names;
/// assert_eq!(names::otel(names::REQUESTS_GOOD), ("tokenmeter.slo.requests_good", "{request}"));
/// ```
pub fn otel(prometheus: &str) -> (&'static str, &'static str) {
    let instrument = counter(prometheus).unwrap_or(&C_OBJECTIVE_GOOD).instrument;
    (instrument.name, instrument.unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_names_are_the_translation_of_the_instruments() {
        for c in ALL {
            assert_eq!(c.instrument.prometheus_name(), c.prometheus);
            assert_eq!(counter(c.prometheus), Some(&c));
        }
        assert_eq!(otel("nope").0, "tokenmeter.slo.objective_good");
    }
}
