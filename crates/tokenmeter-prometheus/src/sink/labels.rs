//! Turning a series' [`Labels`] into `metrics` labels, per profile.

use metrics::Label;
use tokenmeter::{Labels, Role};

use crate::names::label;
use crate::profile::Profile;

/// The labels every metric of a series carries in `profile`. Empty values are left out.
pub(crate) fn base(profile: Profile, labels: &Labels<'_>) -> Vec<Label> {
    match profile {
        Profile::Semconv => semconv(labels, true),
        Profile::Vllm => vllm(labels),
    }
}

/// The semconv attributes; `operation` is left out for engine-wide gauges.
pub(crate) fn semconv(labels: &Labels<'_>, operation: bool) -> Vec<Label> {
    let mut out = Vec::with_capacity(8);
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

/// vLLM's single `model_name` label.
pub(crate) fn vllm(labels: &Labels<'_>) -> Vec<Label> {
    let model = labels.response_model_or_request();
    if model.is_empty() {
        Vec::new()
    } else {
        vec![Label::new(label::MODEL_NAME.prometheus, model.to_owned())]
    }
}

/// `base` plus one more label.
pub(crate) fn with(base: &[Label], key: &'static str, value: &'static str) -> Vec<Label> {
    let mut out = base.to_vec();
    out.push(Label::from_static_parts(key, value));
    out
}

/// `base` plus `role` (on `tokenmeter_` metrics in the semconv profile).
pub(crate) fn with_role(base: &[Label], profile: Profile, role: Role) -> Vec<Label> {
    match profile {
        Profile::Semconv => with(base, label::ROLE.prometheus, role.as_str()),
        Profile::Vllm => base.to_vec(),
    }
}
