//! The attribute sets of a row, prepared once per series (or engine) in a fixed order so that
//! recording passes a pre-built `&[KeyValue]` and allocates nothing.

use std::sync::Arc;

use opentelemetry::{KeyValue, StringValue, Value};
use tokenmeter::conventions::{AttrSet, Base};
use tokenmeter::{Labels, Role};

use crate::names::attr;

/// An attribute set, allocated once.
pub(crate) type Set = Box<[KeyValue]>;

/// Every variant of `attrs` for a series (or engine) of `labels` and `role`: the base
/// (semconv attributes, without the operation for an engine), then the tenant attributes
/// (request-level sets only), then `role` where the set has it, then the variant's extras.
pub(crate) fn sets(attrs: AttrSet, labels: &Labels<'_>, role: Role) -> Box<[Set]> {
    let mut base = match attrs.base() {
        Base::Series => semconv(labels).into_iter().chain(tenants(labels)).collect(),
        Base::Engine => engine(labels),
        _ => Vec::new(),
    };
    if attrs.has_role() {
        base.push(role_value(role));
    }
    (0..attrs.variants())
        .map(|variant| {
            base.iter()
                .cloned()
                .chain(
                    attrs
                        .extra(variant)
                        .into_iter()
                        .map(|(key, value)| KeyValue::new(key, value)),
                )
                .collect()
        })
        .collect()
}

/// The semconv attributes without `gen_ai.operation.name`: on engine-wide instruments. (An
/// engine's labels often have no operation: filter by key, never drop the first.)
fn engine(labels: &Labels<'_>) -> Vec<KeyValue> {
    semconv(labels)
        .into_iter()
        .filter(|kv| kv.key.as_str() != attr::OPERATION)
        .collect()
}

/// The tenant attributes ([`Labels::tenant`]), sorted by key.
fn tenants<'a>(labels: &'a Labels<'_>) -> impl Iterator<Item = KeyValue> + 'a {
    labels.tenants().map(|(key, value)| {
        let shared: Arc<str> = Arc::from(value);
        KeyValue::new(
            key.as_str().to_owned(),
            Value::String(StringValue::from(shared)),
        )
    })
}

/// `role` alone.
pub(crate) fn role_value(role: Role) -> KeyValue {
    KeyValue::new(attr::ROLE, role.as_str())
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
    use tokenmeter::{Degradation, ErrorClass, Outcome};

    fn keys(set: &[KeyValue]) -> Vec<&str> {
        set.iter().map(|kv| kv.key.as_str()).collect()
    }

    #[test]
    fn sets_are_in_a_fixed_order_without_empty_values() {
        let labels = Labels::client("chat")
            .provider("openai")
            .request_model("gpt-4o")
            .server_port(443);
        let semconv = sets(AttrSet::Semconv, &labels, Role::Client);
        assert_eq!(
            keys(&semconv[0]),
            [
                attr::OPERATION,
                attr::PROVIDER,
                attr::REQUEST_MODEL,
                attr::SERVER_PORT
            ]
        );
        let own = sets(AttrSet::Own, &labels, Role::Client);
        assert_eq!(keys(&own[0]).last(), Some(&attr::ROLE));
        assert_eq!(own[0].last().unwrap().value.as_str(), "client");
        let errors = sets(AttrSet::SemconvError, &labels, Role::Client);
        let timeout = AttrSet::SemconvError.outcome_variant(Outcome::Error(ErrorClass::Timeout));
        assert_eq!(errors[timeout].last().unwrap().value.as_str(), "timeout");
        assert_eq!(
            errors[AttrSet::SemconvError.outcome_variant(Outcome::Success)].len(),
            4
        );
    }

    #[test]
    fn engine_sets_drop_the_operation_and_keep_the_rest_whether_or_not_it_is_there() {
        let with = Labels::server("chat").provider("vllm").request_model("m");
        let without = Labels::server("").provider("vllm").request_model("m");
        for labels in [with, without] {
            let engine = sets(AttrSet::Engine, &labels, Role::Server);
            assert_eq!(keys(&engine[0]), [attr::PROVIDER, attr::REQUEST_MODEL]);
            let kinds = sets(AttrSet::EngineKind, &labels, Role::Server);
            assert_eq!(
                keys(&kinds[1]),
                [attr::PROVIDER, attr::REQUEST_MODEL, attr::KIND]
            );
            assert_eq!(kinds[0].last().unwrap().value.as_str(), "prefill");
            assert_eq!(kinds[1].last().unwrap().value.as_str(), "decode");
        }
    }

    #[test]
    fn tenants_are_on_request_sets_and_not_on_engine_ones() {
        let labels = Labels::server("chat")
            .request_model("m")
            .tenant(tokenmeter::TenantKey::USER_ID, "u1")
            .tenant(tokenmeter::TenantKey::TENANT_ID, "acme");
        let own = sets(AttrSet::Own, &labels, Role::Server);
        assert_eq!(
            keys(&own[0]),
            [
                attr::OPERATION,
                attr::REQUEST_MODEL,
                "tenant.id",
                "user.id",
                attr::ROLE
            ]
        );
        assert_eq!(own[0][2].value.as_str(), "acme");
        let engine = sets(AttrSet::EngineKind, &labels, Role::Server);
        assert_eq!(keys(&engine[0]), [attr::REQUEST_MODEL, attr::KIND]);
    }

    #[test]
    fn every_outcome_has_its_own_set() {
        let all = sets(AttrSet::Outcome, &Labels::server("chat"), Role::Server);
        let value = |o| {
            let set = &all[AttrSet::Outcome.outcome_variant(o)];
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
