//! Attribute keys: the OpenTelemetry spelling. An exporter to Prometheus writes them with dots
//! as underscores ([`is_prometheus_label`]).
//!
//! Sources: `docs/src/reference/metrics.md` §3 (the semconv attributes; `gen_ai.system` was renamed
//! `gen_ai.provider.name` in semconv v1.37.0); `role`, `outcome` and `kind` are tokenmeter's.
//!
//! # Examples
//!
//! ```
//! use tokenmeter::conventions::attr;
//!
//! assert_eq!(attr::REQUEST_MODEL, "gen_ai.request.model");
//! assert!(attr::is_prometheus_label(attr::REQUEST_MODEL, "gen_ai_request_model"));
//! ```

use super::translate;

/// `gen_ai.operation.name`: `chat`, `text_completion`, `embeddings`, … `docs/src/reference/metrics.md` §3.
pub const OPERATION: &str = "gen_ai.operation.name";
/// `gen_ai.provider.name` (was `gen_ai.system` before semconv v1.37.0). `docs/src/reference/metrics.md` §3.
pub const PROVIDER: &str = "gen_ai.provider.name";
/// `gen_ai.request.model`. `docs/src/reference/metrics.md` §3.
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
/// `gen_ai.response.model`. `docs/src/reference/metrics.md` §3.
pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
/// `server.address`. `docs/src/reference/metrics.md` §3.
pub const SERVER_ADDRESS: &str = "server.address";
/// `server.port` (an integer). `docs/src/reference/metrics.md` §3.
pub const SERVER_PORT: &str = "server.port";
/// `error.type`: one of the fixed [`ErrorClass`](crate::ErrorClass) values, only on requests
/// that ended in an error. `docs/src/reference/metrics.md` §2 and §3.
pub const ERROR_TYPE: &str = "error.type";
/// `gen_ai.token.type`: `input` or `output`, on
/// [`CLIENT_TOKEN_USAGE`](super::names::CLIENT_TOKEN_USAGE). `docs/src/reference/metrics.md` §3.
pub const TOKEN_TYPE: &str = "gen_ai.token.type";
/// `gen_ai.token.modality`: `text`, `image`, `audio` or `unknown`, required on the
/// `gen_ai.client.inference.usage.*` counters (GenAI conventions v0.1.0). Tokenmeter's rows say
/// `text`. `docs/src/reference/metrics.md` §3.
pub const TOKEN_MODALITY: &str = "gen_ai.token.modality";
/// `role`: `server` or `client`, on every `tokenmeter.*` instrument, so that a process that is
/// both a server and a client of another provider keeps the two apart.
pub const ROLE: &str = "role";
/// `outcome`: `success`, `error`, `cancelled` or `degraded` (`docs/src/reference/metrics.md` §2), on
/// [`REQUESTS`](super::names::REQUESTS).
pub const OUTCOME: &str = "outcome";
/// `kind`: `prefill`, `decode` or `mixed` ([`StepKind`](crate::sink::StepKind)), on the
/// engine-step instruments.
pub const KIND: &str = "kind";

/// `finished_reason`: vLLM's `stop`, `length`, `abort` or `error`, on vLLM's
/// `request_success_total` (the Prometheus exporter's vLLM profile).
pub const FINISHED_REASON: &str = "finished_reason";

/// `source`: where a request's input tokens came from: `local_compute` (prefilled by the
/// engine), `local_cache_hit` (its own prefix cache) or `external_kv_transfer` (a KV connector),
/// on [`INPUT_TOKENS_BY_SOURCE`](super::names::INPUT_TOKENS_BY_SOURCE), as vLLM labels them.
pub const SOURCE: &str = "source";

/// `reason`: why requests wait (`capacity`, `deferred`) or were refused (`queue_full`,
/// `too_large`), on [`ENGINE_WAITING_BY_REASON`](super::names::ENGINE_WAITING_BY_REASON) and
/// [`ENGINE_ADMISSION_REJECTIONS`](super::names::ENGINE_ADMISSION_REJECTIONS).
pub const REASON: &str = "reason";

/// Every attribute key above.
pub const ALL: [&str; 15] = [
    OPERATION,
    PROVIDER,
    REQUEST_MODEL,
    RESPONSE_MODEL,
    SERVER_ADDRESS,
    SERVER_PORT,
    ERROR_TYPE,
    TOKEN_TYPE,
    ROLE,
    OUTCOME,
    KIND,
    FINISHED_REASON,
    SOURCE,
    TOKEN_MODALITY,
    REASON,
];

/// Whether `label` is the Prometheus label name of the attribute `key`: the key with dots
/// (and dashes) as underscores. A `const fn`, so that an exporter can check the label names it
/// spells out when it compiles.
pub const fn is_prometheus_label(key: &str, label: &str) -> bool {
    translate::translates(key, "", label)
}
