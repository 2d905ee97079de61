//! Label (attribute) names, in both spellings.

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
    const fn new(otel: &'static str, prometheus: &'static str) -> Self {
        Self { otel, prometheus }
    }
}

/// `gen_ai.operation.name`: `chat`, `text_completion`, `embeddings`, …
pub const OPERATION: LabelName = LabelName::new("gen_ai.operation.name", "gen_ai_operation_name");
/// `gen_ai.provider.name` (was `gen_ai.system` before semconv v1.37.0).
pub const PROVIDER: LabelName = LabelName::new("gen_ai.provider.name", "gen_ai_provider_name");
/// `gen_ai.request.model`.
pub const REQUEST_MODEL: LabelName = LabelName::new("gen_ai.request.model", "gen_ai_request_model");
/// `gen_ai.response.model`.
pub const RESPONSE_MODEL: LabelName =
    LabelName::new("gen_ai.response.model", "gen_ai_response_model");
/// `server.address`.
pub const SERVER_ADDRESS: LabelName = LabelName::new("server.address", "server_address");
/// `server.port`.
pub const SERVER_PORT: LabelName = LabelName::new("server.port", "server_port");
/// `error.type`: one of the fixed [`ErrorClass`](tokenmeter::ErrorClass) values; only on
/// requests that ended in an error.
pub const ERROR_TYPE: LabelName = LabelName::new("error.type", "error_type");
/// `gen_ai.token.type`: `input` or `output` (on `gen_ai.client.token.usage`).
pub const TOKEN_TYPE: LabelName = LabelName::new("gen_ai.token.type", "gen_ai_token_type");
/// `role`: `server` or `client`, on every `tokenmeter_` metric, so a process that is both a
/// server and a client of another provider keeps the two apart.
pub const ROLE: LabelName = LabelName::new("role", "role");
/// `outcome`: `success`, `error`, `cancelled` or `degraded` (on `tokenmeter_requests_total`).
pub const OUTCOME: LabelName = LabelName::new("outcome", "outcome");
/// `kind`: `prefill`, `decode` or `mixed` ([`StepKind`](tokenmeter::sink::StepKind)), on the
/// engine-step metrics.
pub const STEP_KIND: LabelName = LabelName::new("kind", "kind");
/// vLLM's `model_name`: the response model, or the request model when unknown.
pub const MODEL_NAME: LabelName = LabelName::new("model_name", "model_name");
/// vLLM's `finished_reason`: `stop`, `length`, `abort` or `error`.
pub const FINISHED_REASON: LabelName = LabelName::new("finished_reason", "finished_reason");

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
    /// Any error.
    pub const ERROR: &str = "error";
    /// All four, in this order.
    pub const ALL: [&str; 4] = [STOP, LENGTH, ABORT, ERROR];
}
