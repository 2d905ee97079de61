//! [`Instrument`]: one metric's OpenTelemetry name, unit, kind and description, and its
//! OTel→Prometheus translation (`docs/src/reference/metrics.md` §3).

use std::fmt;

use super::kind::InstrumentKind;
use super::translate;

/// One instrument: its OpenTelemetry name, UCUM unit, kind and description.
///
/// The constants in [`names`](super::names) are the built-in instruments; an exporter publishes
/// them as they are (OpenTelemetry) or translated ([`Instrument::prometheus_name`], with the
/// `# TYPE` of [`InstrumentKind::prometheus_type`]). An exporter's own names are instruments
/// too: the Prometheus exporter's vLLM profile renames rows ([`Row::renamed`](super::Row::renamed))
/// to instruments named as vLLM names its metrics.
///
/// # Examples
///
/// ```
/// use tokenmeter::conventions::{InstrumentKind, names};
///
/// let usage = names::CLIENT_TOKEN_USAGE;
/// assert_eq!((usage.name, usage.unit), ("gen_ai.client.token.usage", "{token}"));
/// assert_eq!(usage.kind, InstrumentKind::Histogram);
/// assert_eq!(usage.prometheus_name(), "gen_ai_client_token_usage");
/// assert!(usage.is_prometheus_name("gen_ai_client_token_usage"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Instrument {
    /// The instrument name (`gen_ai.server.time_to_first_token`).
    pub name: &'static str,
    /// The UCUM unit: `s`, `1`, or an annotation such as `{token}`, `{request}`, `{series}`,
    /// `{preemption}` or `{sequence}`.
    pub unit: &'static str,
    /// The instrument kind.
    pub kind: InstrumentKind,
    /// The description (the Prometheus `# HELP` text, up to the spelling of attribute keys).
    pub description: &'static str,
}

impl Instrument {
    /// An instrument. The built-in ones are the constants of [`names`](super::names); one of
    /// your own goes into a [`Row`](super::Row) of a [`Conventions`](super::Conventions).
    pub const fn new(
        name: &'static str,
        unit: &'static str,
        kind: InstrumentKind,
        description: &'static str,
    ) -> Self {
        Self {
            name,
            unit,
            kind,
            description,
        }
    }

    /// What the OTel→Prometheus translation appends to the name: `_seconds` for the unit `s`,
    /// `_ratio` for a gauge of unit `1`, nothing for an annotation such as `{token}`, then
    /// `_total` for a counter.
    pub const fn prometheus_suffix(&self) -> &'static str {
        let counter = matches!(self.kind, InstrumentKind::Counter);
        let gauge = matches!(self.kind, InstrumentKind::Gauge);
        match (self.unit.as_bytes(), counter) {
            (b"s", true) => "_seconds_total",
            (b"s", false) => "_seconds",
            (b"1", false) if gauge => "_ratio",
            (_, true) => "_total",
            _ => "",
        }
    }

    /// The name a Prometheus backend shows for this instrument: dots (and dashes) become
    /// underscores, then [`Instrument::prometheus_suffix`].
    pub fn prometheus_name(&self) -> String {
        let mut out: String = self
            .name
            .bytes()
            .map(|b| char::from(translate::prometheus_byte(b)))
            .collect();
        out.push_str(self.prometheus_suffix());
        out
    }

    /// Whether `candidate` is [`Instrument::prometheus_name`]. A `const fn`, so that an
    /// exporter that spells its Prometheus names out can check them when it compiles.
    pub const fn is_prometheus_name(&self, candidate: &str) -> bool {
        translate::translates(self.name, self.prometheus_suffix(), candidate)
    }
}

impl fmt::Display for Instrument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conventions::names;

    #[test]
    fn suffixes_follow_unit_and_kind() {
        let cases = [
            (names::QUEUE_TIME, "tokenmeter_request_queue_time_seconds"),
            (names::REQUESTS, "tokenmeter_requests_total"),
            (names::REQUESTS_WAITING, "tokenmeter_requests_waiting"),
            (names::KV_CACHE_USAGE, "tokenmeter_kv_cache_usage_ratio"),
            (names::ENGINE_BATCH_SIZE, "tokenmeter_engine_batch_size"),
            (
                names::ENGINE_STEP_TOKENS,
                "tokenmeter_engine_step_tokens_total",
            ),
        ];
        for (instrument, expected) in cases {
            assert_eq!(instrument.prometheus_name(), expected);
            assert!(instrument.is_prometheus_name(expected), "{expected}");
        }
        let seconds_counter = Instrument::new("a.b-c", "s", InstrumentKind::Counter, "x");
        assert_eq!(seconds_counter.prometheus_name(), "a_b_c_seconds_total");
    }

    #[test]
    fn a_near_miss_is_not_the_prometheus_name() {
        let ttft = names::SERVER_TIME_TO_FIRST_TOKEN;
        for wrong in [
            "gen_ai_server_time_to_first_token",
            "gen_ai.server.time_to_first_token_seconds",
            "gen_ai_server_time_to_first_token_seconds_total",
            "gen_ai_server_time_to_first_tokenXseconds",
            "",
        ] {
            assert!(!ttft.is_prometheus_name(wrong), "{wrong}");
        }
    }
}
