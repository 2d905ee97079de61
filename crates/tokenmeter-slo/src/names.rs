//! The counters the SLO monitor publishes, and their labels.
//!
//! Every counter carries `slo_class`; the per-objective ones also carry `objective`. Fleet-wide
//! goodput is `sum(rate(tokenmeter_slo_requests_good_total[5m]))`, exact across replicas because
//! the joint predicate is evaluated once per request, at its end.

/// Requests evaluated against their class.
pub const REQUESTS: &str = "tokenmeter_slo_requests_total";
/// Requests that succeeded and met every latency objective.
pub const REQUESTS_GOOD: &str = "tokenmeter_slo_requests_good_total";
/// Output tokens of every evaluated request.
pub const OUTPUT_TOKENS: &str = "tokenmeter_slo_output_tokens_total";
/// Output tokens of good requests: token goodput.
pub const OUTPUT_TOKENS_GOOD: &str = "tokenmeter_slo_output_tokens_good_total";
/// Valid events per objective (the SLI's denominator).
pub const OBJECTIVE_EVENTS: &str = "tokenmeter_slo_objective_events_total";
/// Good events per objective (the SLI's numerator).
pub const OBJECTIVE_GOOD: &str = "tokenmeter_slo_objective_good_total";

/// Label: the class name.
pub const SLO_CLASS: &str = "slo_class";
/// Label: the objective name.
pub const OBJECTIVE: &str = "objective";

/// The OpenTelemetry instrument name and unit of a counter above: the name whose
/// OTel→Prometheus translation (dots to underscores, `_total` for counters) is the Prometheus
/// name, so both paths land on the same series.
///
/// # Examples
///
/// ```
/// use tokenmeter_slo::names;
/// assert_eq!(names::otel(names::REQUESTS_GOOD), ("tokenmeter.slo.requests_good", "{request}"));
/// ```
pub fn otel(prometheus: &str) -> (&'static str, &'static str) {
    match prometheus {
        REQUESTS => ("tokenmeter.slo.requests", "{request}"),
        REQUESTS_GOOD => ("tokenmeter.slo.requests_good", "{request}"),
        OUTPUT_TOKENS => ("tokenmeter.slo.output_tokens", "{token}"),
        OUTPUT_TOKENS_GOOD => ("tokenmeter.slo.output_tokens_good", "{token}"),
        OBJECTIVE_EVENTS => ("tokenmeter.slo.objective_events", "{event}"),
        _ => ("tokenmeter.slo.objective_good", "{event}"),
    }
}
