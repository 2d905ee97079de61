//! Turning a series' [`Labels`] and a row's [`AttrSet`] into `metrics` labels, per profile.

use metrics::Label;
use tokenmeter::conventions::{AttrSet, Base};
use tokenmeter::{Labels, Role};

use crate::names::label;
use crate::profile::Profile;

/// The labels of variant `variant` of `attrs` for a series (or engine) of `labels`: the base
/// (semconv attributes, or vLLM's `model_name`), then the tenant attributes (request-level
/// rows only, in both profiles), then `role` (semconv profile, and the folded counter in
/// both), then the variant's extras. Empty values are left out.
pub(crate) fn of(
    profile: Profile,
    attrs: AttrSet,
    labels: &Labels<'_>,
    role: Role,
    variant: usize,
) -> Vec<Label> {
    let mut out = match (attrs.base(), profile) {
        (Base::Empty, _) => Vec::new(),
        (_, Profile::Vllm | Profile::VllmLegacy) => vllm(labels),
        (Base::Engine, Profile::Semconv) => semconv(labels, false),
        (_, Profile::Semconv) => semconv(labels, true),
    };
    if attrs.base() == Base::Series {
        out.extend(tenants(labels));
    }
    if attrs.has_role() && (profile == Profile::Semconv || attrs == AttrSet::Role) {
        out.push(Label::from_static_parts(
            label::ROLE.prometheus,
            role.as_str(),
        ));
    }
    for (key, value) in attrs.extra(variant) {
        out.push(Label::new(key.replace('.', "_"), value));
    }
    out
}

/// The semconv attributes; `operation` is left out for engine-wide metrics.
fn semconv(labels: &Labels<'_>, operation: bool) -> Vec<Label> {
    let mut out = Vec::with_capacity(10);
    let mut push = |key: &'static str, value: &str| {
        if !value.is_empty() {
            out.push(Label::new(key, value.to_owned()));
        }
    };
    if operation {
        push(label::OPERATION.prometheus, labels.operation());
    }
    push(label::PROVIDER.prometheus, labels.provider_name());
    push(label::REQUEST_MODEL.prometheus, labels.request_model_name());
    push(
        label::RESPONSE_MODEL.prometheus,
        labels.response_model_name(),
    );
    push(
        label::SERVER_ADDRESS.prometheus,
        labels.server_address_value(),
    );
    if let Some(port) = labels.server_port_value() {
        out.push(Label::new(label::SERVER_PORT.prometheus, port.to_string()));
    }
    out
}

/// The tenant attributes ([`Labels::tenant`]), keys with dots as underscores. vLLM has none;
/// they are opt-in, so the vLLM profile carries them too.
fn tenants<'a>(labels: &'a Labels<'_>) -> impl Iterator<Item = Label> + 'a {
    labels
        .tenants()
        .map(|(key, value)| Label::new(key.prometheus_name(), value.to_owned()))
}

/// vLLM's `model_name` and `engine` labels. vLLM's V1 engine labels every series with the
/// index of its engine core (`engine="0"` for a single engine); tokenmeter meters one engine per
/// exporter, so it is always `0`.
fn vllm(labels: &Labels<'_>) -> Vec<Label> {
    let model = labels.response_model_or_request();
    let mut out = Vec::with_capacity(2);
    if !model.is_empty() {
        out.push(Label::new(label::MODEL_NAME.prometheus, model.to_owned()));
    }
    out.push(Label::from_static_parts(label::ENGINE.prometheus, "0"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenmeter::TenantKey;

    fn names(labels: &[Label]) -> Vec<&str> {
        labels.iter().map(Label::key).collect()
    }

    #[test]
    fn tenants_are_on_request_rows_in_both_profiles_and_never_on_engine_rows() {
        let labels = Labels::server("chat")
            .request_model("m")
            .tenant(TenantKey::USER_ID, "u-1")
            .tenant(TenantKey::custom("acme.team").unwrap(), "blue");
        let semconv = of(Profile::Semconv, AttrSet::Own, &labels, Role::Server, 0);
        assert_eq!(
            names(&semconv),
            [
                "gen_ai_operation_name",
                "gen_ai_request_model",
                "acme_team",
                "user_id",
                "role"
            ]
        );
        assert_eq!(semconv[3].value(), "u-1");
        let vllm = of(
            Profile::Vllm,
            AttrSet::FinishedReason,
            &labels,
            Role::Server,
            0,
        );
        assert_eq!(
            names(&vllm),
            [
                "model_name",
                "engine",
                "acme_team",
                "user_id",
                "finished_reason"
            ]
        );
        for profile in [Profile::Semconv, Profile::Vllm] {
            let engine = of(profile, AttrSet::EngineKind, &labels, Role::Server, 0);
            assert!(
                !names(&engine).contains(&"user_id"),
                "{profile:?}: {engine:?}"
            );
        }
        let folded = of(Profile::Semconv, AttrSet::Role, &labels, Role::Server, 0);
        assert_eq!(names(&folded), ["role"]);
    }
}
