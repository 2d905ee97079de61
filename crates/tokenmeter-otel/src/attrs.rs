//! The attribute sets of one series, prepared once in a fixed order so that recording passes a
//! pre-built `&[KeyValue]` and allocates nothing.

use std::sync::Arc;

use opentelemetry::{KeyValue, StringValue, Value};
use tokenmeter::sink::StepKind;
use tokenmeter::{ErrorClass, Labels, Outcome, Role};

use crate::names::attr;

/// An attribute set, allocated once.
pub(crate) type Set = Box<[KeyValue]>;

/// Every attribute set a series records with.
#[derive(Debug)]
pub(crate) struct SeriesAttributes {
    /// The semconv attributes (`gen_ai.*`, `server.*`): on `gen_ai.*` instruments.
    pub(crate) semconv: Set,
    /// `semconv` + `error.type`, one per [`ErrorClass::ALL`] entry.
    pub(crate) semconv_error: Box<[Set]>,
    /// `semconv` + `gen_ai.token.type` = `input`.
    pub(crate) input: Set,
    /// `semconv` + `gen_ai.token.type` = `output`.
    pub(crate) output: Set,
    /// `semconv` + `role`: on `tokenmeter.*` instruments.
    pub(crate) own: Set,
    /// `own` + `outcome` (+ `error.type`): success, cancelled, degraded, then one per error class.
    pub(crate) outcome: Box<[Set]>,
}

impl SeriesAttributes {
    pub(crate) fn new(labels: &Labels<'_>) -> Self {
        let semconv = semconv(labels);
        let with = |base: &[KeyValue], extra: &[KeyValue]| -> Set {
            base.iter().chain(extra).cloned().collect()
        };
        let own = with(&semconv, &[role(labels.role())]);
        let error = |class: ErrorClass| KeyValue::new(attr::ERROR_TYPE, class.as_str());
        let outcome = |o: &'static str| KeyValue::new(attr::OUTCOME, o);
        let mut outcomes: Vec<Set> = ["success", "cancelled", "degraded"]
            .into_iter()
            .map(|o| with(&own, &[outcome(o)]))
            .collect();
        outcomes.extend(
            ErrorClass::ALL
                .into_iter()
                .map(|class| with(&own, &[outcome("error"), error(class)])),
        );
        Self {
            semconv_error: ErrorClass::ALL
                .into_iter()
                .map(|class| with(&semconv, &[error(class)]))
                .collect(),
            input: with(&semconv, &[KeyValue::new(attr::TOKEN_TYPE, "input")]),
            output: with(&semconv, &[KeyValue::new(attr::TOKEN_TYPE, "output")]),
            own,
            outcome: outcomes.into_boxed_slice(),
            semconv: semconv.into_boxed_slice(),
        }
    }

    /// The set for `gen_ai.*` duration instruments: with `error.type` for errors.
    pub(crate) fn semconv_for(&self, outcome: Outcome) -> &[KeyValue] {
        match outcome.error_class() {
            Some(class) => &self.semconv_error[class_index(class)],
            None => &self.semconv,
        }
    }

    /// The set for `tokenmeter.requests`.
    pub(crate) fn outcome_for(&self, outcome: Outcome) -> &[KeyValue] {
        let index = match outcome {
            Outcome::Error(class) => 3 + class_index(class),
            Outcome::Cancelled => 1,
            Outcome::Degraded(_) => 2,
            Outcome::Success => 0,
            _ => 3 + class_index(ErrorClass::Other),
        };
        &self.outcome[index]
    }
}

/// The semconv attributes without `gen_ai.operation.name`: on engine-wide instruments. (An
/// engine's labels often have no operation: filter by key, never drop the first.)
pub(crate) fn engine(labels: &Labels<'_>) -> Set {
    semconv(labels)
        .into_iter()
        .filter(|kv| kv.key.as_str() != attr::OPERATION)
        .collect()
}

/// The engine attributes plus `kind`, one set per step kind in `kinds` order: on the
/// engine-step instruments.
pub(crate) fn steps<const N: usize>(labels: &Labels<'_>, kinds: [StepKind; N]) -> [Set; N] {
    let engine = engine(labels);
    kinds.map(|kind| {
        engine
            .iter()
            .cloned()
            .chain([KeyValue::new(attr::KIND, kind.as_str())])
            .collect()
    })
}

/// `role` alone: on `tokenmeter.series.folded`.
pub(crate) fn role(role: Role) -> KeyValue {
    KeyValue::new(attr::ROLE, role.as_str())
}

fn class_index(class: ErrorClass) -> usize {
    ErrorClass::ALL
        .iter()
        .position(|&c| c == class)
        .unwrap_or(ErrorClass::ALL.len() - 1)
}

/// The semconv attributes in a fixed order; empty values are left out.
fn semconv(labels: &Labels<'_>) -> Vec<KeyValue> {
    let mut out = Vec::with_capacity(6);
    let mut push = |key: &'static str, value: &str| {
        if !value.is_empty() {
            let shared: Arc<str> = Arc::from(value);
            out.push(KeyValue::new(key, Value::String(StringValue::from(shared))));
        }
    };
    push(attr::OPERATION, labels.operation());
    push(attr::PROVIDER, labels.provider_name());
    push(attr::REQUEST_MODEL, labels.request_model_name());
    push(attr::RESPONSE_MODEL, labels.response_model_name());
    push(attr::SERVER_ADDRESS, labels.server_address_value());
    if let Some(port) = labels.server_port_value() {
        out.push(KeyValue::new(attr::SERVER_PORT, i64::from(port)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenmeter::Degradation;

    fn keys(set: &[KeyValue]) -> Vec<&str> {
        set.iter().map(|kv| kv.key.as_str()).collect()
    }

    #[test]
    fn sets_are_in_a_fixed_order_without_empty_values() {
        let labels = Labels::client("chat")
            .provider("openai")
            .request_model("gpt-4o")
            .server_port(443);
        let a = SeriesAttributes::new(&labels);
        assert_eq!(
            keys(&a.semconv),
            [
                attr::OPERATION,
                attr::PROVIDER,
                attr::REQUEST_MODEL,
                attr::SERVER_PORT
            ]
        );
        assert_eq!(keys(&a.own).last(), Some(&attr::ROLE));
        assert_eq!(a.own.last().unwrap().value.as_str(), "client");
        let timeout = a.semconv_for(Outcome::Error(ErrorClass::Timeout));
        assert_eq!(timeout.last().unwrap().value.as_str(), "timeout");
        assert_eq!(a.semconv_for(Outcome::Success).len(), 4);
    }

    #[test]
    fn engine_sets_drop_the_operation_and_keep_the_rest_whether_or_not_it_is_there() {
        let with = Labels::server("chat").provider("vllm").request_model("m");
        let without = Labels::server("").provider("vllm").request_model("m");
        for labels in [with, without] {
            assert_eq!(
                keys(&engine(&labels)),
                [attr::PROVIDER, attr::REQUEST_MODEL]
            );
            let [prefill, decode] = steps(&labels, [StepKind::Prefill, StepKind::Decode]);
            assert_eq!(
                keys(&decode),
                [attr::PROVIDER, attr::REQUEST_MODEL, attr::KIND]
            );
            assert_eq!(prefill.last().unwrap().value.as_str(), "prefill");
            assert_eq!(decode.last().unwrap().value.as_str(), "decode");
        }
    }

    #[test]
    fn every_outcome_has_its_own_set() {
        let a = SeriesAttributes::new(&Labels::server("chat"));
        let value = |o| {
            let set = a.outcome_for(o);
            let find = |k: &str| {
                set.iter()
                    .find(|kv| kv.key.as_str() == k)
                    .map(|kv| kv.value.to_string())
            };
            (find(attr::OUTCOME), find(attr::ERROR_TYPE))
        };
        assert_eq!(value(Outcome::Success), (Some("success".into()), None));
        assert_eq!(value(Outcome::Cancelled), (Some("cancelled".into()), None));
        assert_eq!(
            value(Outcome::Degraded(Degradation::Cached)),
            (Some("degraded".into()), None)
        );
        for class in ErrorClass::ALL {
            assert_eq!(
                value(Outcome::Error(class)),
                (Some("error".into()), Some(class.as_str().into()))
            );
        }
    }
}
