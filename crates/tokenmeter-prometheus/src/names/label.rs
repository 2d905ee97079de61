//! Label (attribute) names, in both spellings: the attribute keys of
//! [`tokenmeter::conventions::attr`] with dots as underscores, plus vLLM's own labels.

use tokenmeter::conventions::attr;

/// A label: its OpenTelemetry attribute key and its Prometheus label name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LabelName {
    /// The OpenTelemetry attribute key (`gen_ai.request.model`).
    pub otel: &'static str,
    /// The Prometheus label name (`gen_ai_request_model`).
    pub prometheus: &'static str,
}

impl LabelName {
    /// A label spelled the same in both (vLLM's labels, which exist only here).
    const fn same(name: &'static str) -> Self {
        Self {
            otel: name,
            prometheus: name,
        }
    }

    /// The attribute `key` of [`tokenmeter::conventions::attr`] as the label `prometheus`.
    ///
    /// # Panics
    ///
    /// At compile time (in a `const`) when `prometheus` is not `key` with dots as underscores.
    const fn semconv(key: &'static str, prometheus: &'static str) -> Self {
        assert!(
            attr::is_prometheus_label(key, prometheus),
            "a label name is not its attribute key with dots as underscores"
        );
        Self {
            otel: key,
            prometheus,
        }
    }
}

/// `gen_ai_operation_name`: [`attr::OPERATION`] (`chat`, `text_completion`, `embeddings`, …).
pub const OPERATION: LabelName = LabelName::semconv(attr::OPERATION, "gen_ai_operation_name");
/// `gen_ai_provider_name`: [`attr::PROVIDER`].
pub const PROVIDER: LabelName = LabelName::semconv(attr::PROVIDER, "gen_ai_provider_name");
/// `gen_ai_request_model`: [`attr::REQUEST_MODEL`].
pub const REQUEST_MODEL: LabelName =
    LabelName::semconv(attr::REQUEST_MODEL, "gen_ai_request_model");
/// `gen_ai_response_model`: [`attr::RESPONSE_MODEL`].
pub const RESPONSE_MODEL: LabelName =
    LabelName::semconv(attr::RESPONSE_MODEL, "gen_ai_response_model");
/// `server_address`: [`attr::SERVER_ADDRESS`].
pub const SERVER_ADDRESS: LabelName = LabelName::semconv(attr::SERVER_ADDRESS, "server_address");
/// `server_port`: [`attr::SERVER_PORT`].
pub const SERVER_PORT: LabelName = LabelName::semconv(attr::SERVER_PORT, "server_port");
/// `error_type`: [`attr::ERROR_TYPE`], one of the fixed [`ErrorClass`](tokenmeter::ErrorClass)
/// values; only on requests that ended in an error.
pub const ERROR_TYPE: LabelName = LabelName::semconv(attr::ERROR_TYPE, "error_type");
/// `gen_ai_token_type`: [`attr::TOKEN_TYPE`], `input` or `output` (on
/// `gen_ai_client_token_usage`).
pub const TOKEN_TYPE: LabelName = LabelName::semconv(attr::TOKEN_TYPE, "gen_ai_token_type");
/// `gen_ai_token_modality`: [`attr::TOKEN_MODALITY`], `text` (on the
/// `gen_ai_client_inference_usage_*_total` counters).
pub const TOKEN_MODALITY: LabelName =
    LabelName::semconv(attr::TOKEN_MODALITY, "gen_ai_token_modality");
/// `role`: [`attr::ROLE`], `server` or `client`, on every `tokenmeter_` metric.
pub const ROLE: LabelName = LabelName::semconv(attr::ROLE, "role");
/// `outcome`: [`attr::OUTCOME`], `success`, `error`, `cancelled` or `degraded` (on
/// `tokenmeter_requests_total`).
pub const OUTCOME: LabelName = LabelName::semconv(attr::OUTCOME, "outcome");
/// `kind`: [`attr::KIND`], `prefill`, `decode` or `mixed`
/// ([`StepKind`](tokenmeter::sink::StepKind)), on the engine-step metrics.
pub const STEP_KIND: LabelName = LabelName::semconv(attr::KIND, "kind");
/// vLLM's `model_name`: the response model, or the request model when unknown.
pub const MODEL_NAME: LabelName = LabelName::same("model_name");
/// vLLM's `engine`: the index of the engine core (`0` with one engine).
pub const ENGINE: LabelName = LabelName::same("engine");
/// vLLM's `finished_reason`: `stop`, `length`, `abort`, `error` or `repetition`.
pub const FINISHED_REASON: LabelName = LabelName::semconv(attr::FINISHED_REASON, "finished_reason");
/// `source`: where input tokens came from (`local_compute`, `local_cache_hit`,
/// `external_kv_transfer`), as vLLM's `prompt_tokens_by_source` labels them.
pub const SOURCE: LabelName = LabelName::semconv(attr::SOURCE, "source");
/// `reason`: why engine requests wait or were refused (both profiles).
pub const REASON: LabelName = LabelName::semconv(attr::REASON, "reason");

/// Values of [`TOKEN_TYPE`].
pub mod token_type {
    /// Input (prompt) tokens.
    pub const INPUT: &str = "input";
    /// Output (generated) tokens.
    pub const OUTPUT: &str = "output";
}

/// Values of [`FINISHED_REASON`], in the order vLLM lists them.
pub mod finished_reason {
    /// A stop sequence, end of sequence, tool calls, a content filter or no reason given.
    pub const STOP: &str = "stop";
    /// The token limit.
    pub const LENGTH: &str = "length";
    /// Cancelled: the client went away before the end.
    pub const ABORT: &str = "abort";
    /// Any error, and a generation the engine ended with finish reason `error`.
    pub const ERROR: &str = "error";
    /// The engine stopped a repetitive token pattern (vLLM 0.33's finish reason `repetition`).
    pub const REPETITION: &str = "repetition";
    /// All five, in this order.
    pub const ALL: [&str; 5] = [STOP, LENGTH, ABORT, ERROR, REPETITION];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attribute_key_of_the_conventions_has_a_label() {
        let pairs = [
            (attr::OPERATION, OPERATION),
            (attr::PROVIDER, PROVIDER),
            (attr::REQUEST_MODEL, REQUEST_MODEL),
            (attr::RESPONSE_MODEL, RESPONSE_MODEL),
            (attr::SERVER_ADDRESS, SERVER_ADDRESS),
            (attr::SERVER_PORT, SERVER_PORT),
            (attr::ERROR_TYPE, ERROR_TYPE),
            (attr::TOKEN_TYPE, TOKEN_TYPE),
            (attr::ROLE, ROLE),
            (attr::OUTCOME, OUTCOME),
            (attr::KIND, STEP_KIND),
            (attr::FINISHED_REASON, FINISHED_REASON),
            (attr::SOURCE, SOURCE),
            (attr::TOKEN_MODALITY, TOKEN_MODALITY),
            (attr::REASON, REASON),
        ];
        for (key, label) in pairs {
            assert_eq!(key, label.otel);
        }
        assert_eq!(pairs.map(|(key, _)| key), attr::ALL);
    }
}
