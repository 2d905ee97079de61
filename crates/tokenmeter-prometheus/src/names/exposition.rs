//! An [`Instrument`] as the exposition shows it: its name ([`exposition_name`]) and its
//! `# HELP` text ([`help`]). Every metric this crate publishes, in either profile, goes through
//! these two functions; its `# TYPE` is [`InstrumentKind::prometheus_type`] of its kind.
//!
//! [`InstrumentKind::prometheus_type`]: tokenmeter::conventions::InstrumentKind::prometheus_type

use std::borrow::Cow;

use tokenmeter::conventions::{Instrument, attr};

/// The name of `instrument` in the exposition.
///
/// An instrument whose name is already a Prometheus name is published as it is named: one
/// whose name contains `:`, which no OpenTelemetry instrument name may contain (vLLM's names,
/// [`vllm`](super::vllm), such as the histogram `vllm:iteration_tokens_total`, whose `_total`
/// no translation would give). Any other instrument is published under its OTel→Prometheus
/// translation, [`Instrument::prometheus_name`] (so the OTLP path lands on the same series).
///
/// # Examples
///
/// ```
/// use tokenmeter::conventions::names as otel;
/// use tokenmeter_prometheus::names::{exposition_name, vllm};
///
/// assert_eq!(exposition_name(&otel::REQUESTS), "tokenmeter_requests_total");
/// assert_eq!(exposition_name(&vllm::PROMPT_TOKENS), "vllm:prompt_tokens_total");
/// assert_eq!(exposition_name(&vllm::ITERATION_TOKENS), "vllm:iteration_tokens_total");
/// ```
pub fn exposition_name(instrument: &Instrument) -> Cow<'static, str> {
    if is_prometheus_named(instrument) {
        Cow::Borrowed(instrument.name)
    } else {
        Cow::Owned(instrument.prometheus_name())
    }
}

/// Whether `instrument` is named with a Prometheus name already (its name contains `:`).
const fn is_prometheus_named(instrument: &Instrument) -> bool {
    let name = instrument.name.as_bytes();
    let mut i = 0;
    while i < name.len() {
        if name[i] == b':' {
            return true;
        }
        i += 1;
    }
    false
}

/// The `# HELP` text of `instrument`: its description, with the attribute keys of
/// [`attr`] spelled as the labels they are here (`gen_ai.token.type` becomes
/// `gen_ai_token_type`).
///
/// # Examples
///
/// ```
/// use tokenmeter::conventions::names as otel;
/// use tokenmeter_prometheus::names::help;
///
/// assert!(otel::CLIENT_TOKEN_USAGE.description.contains("gen_ai.token.type"));
/// assert_eq!(
///     help(&otel::CLIENT_TOKEN_USAGE),
///     "Input and output tokens per request, by gen_ai_token_type."
/// );
/// assert_eq!(help(&otel::QUEUE_TIME), otel::QUEUE_TIME.description);
/// ```
pub fn help(instrument: &Instrument) -> Cow<'static, str> {
    let mut text = Cow::Borrowed(instrument.description);
    for key in attr::ALL {
        if key.contains('.') && text.contains(key) {
            text = Cow::Owned(text.replace(key, &key.replace('.', "_")));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use tokenmeter::conventions::{InstrumentKind, names as otel};

    use super::*;

    #[test]
    fn only_a_name_with_a_colon_is_published_as_it_is() {
        let own = |name| Instrument::new(name, "s", InstrumentKind::Histogram, "x");
        assert_eq!(exposition_name(&own("a:b_seconds")), "a:b_seconds");
        assert_eq!(exposition_name(&own("a.b")), "a_b_seconds");
        assert_eq!(exposition_name(&own("a_b")), "a_b_seconds");
        for instrument in otel::ALL {
            assert_eq!(exposition_name(instrument), instrument.prometheus_name());
        }
    }

    #[test]
    fn help_spells_every_dotted_attribute_key_as_a_label() {
        let described = |description| Instrument::new("x", "1", InstrumentKind::Gauge, description);
        let all = attr::ALL.join(", ");
        let text = help(&described(Box::leak(all.into_boxed_str())));
        assert!(!text.contains('.'), "{text}");
        assert!(matches!(
            help(&described("No keys.")),
            Cow::Borrowed("No keys.")
        ));
    }
}
