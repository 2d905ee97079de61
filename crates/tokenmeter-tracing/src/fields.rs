//! The span fields this crate records, in OpenTelemetry GenAI names where one exists.
//!
//! The numeric fields are a view of the conventions table's record fields ([`MEASURED`]): each
//! is a [`RecordField`] of the request's record, read as the metrics exporters read it.
//!
//! Declare them on a span with [`request_span!`](crate::request_span) (or by hand, each as
//! `tracing::field::Empty`): `tracing` records only fields a span declared when it was created.

use tokenmeter::conventions::RecordField;

/// Time to first token-bearing chunk, in seconds (`f64`): the same value as the
/// `gen_ai.*.time_to_first_*` histograms observe. GenAI semconv (experimental).
pub const TIME_TO_FIRST_CHUNK: &str = "gen_ai.response.time_to_first_chunk";
/// Input (prompt) tokens, when known (`u64`). GenAI semconv.
pub const INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// Output tokens (`u64`): the server's `usage` when given, else the tokens counted. GenAI semconv.
pub const OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// The finish reason (`stop`, `length`, …), when given. GenAI semconv names this attribute
/// for a list; a single-choice response records its one reason.
pub const FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// The error class (`timeout`, `rate_limited`, …), for errors only. OTel semconv.
pub const ERROR_TYPE: &str = tokenmeter::conventions::attr::ERROR_TYPE;
/// `success`, `error`, `cancelled` or `degraded`.
pub const OUTCOME: &str = "tokenmeter.outcome";
/// Time per output token after the first, in seconds (`f64`), when there were two or more.
pub const TIME_PER_OUTPUT_TOKEN: &str = "tokenmeter.time_per_output_token";
/// Arrival (or send) to end, in seconds (`f64`).
pub const DURATION: &str = "tokenmeter.request.duration";
/// The request's process-unique id ([`tokenmeter::Request::id`]).
pub const REQUEST_ID: &str = "tokenmeter.request.id";

/// The numeric fields and the record field each reads ([`RecordField::read`]): the same
/// values the metrics exporters record for the request. Seconds are recorded as `f64`, counts
/// as `u64`; a field whose value the request does not have is left empty.
pub const MEASURED: [(&str, RecordField); 5] = [
    (TIME_TO_FIRST_CHUNK, RecordField::Ttft),
    (INPUT_TOKENS, RecordField::InputTokens),
    (OUTPUT_TOKENS, RecordField::OutputCount),
    (TIME_PER_OUTPUT_TOKEN, RecordField::Tpot),
    (DURATION, RecordField::E2e),
];

/// Every field above, in the order [`request_span!`](crate::request_span) declares them.
pub const ALL: [&str; 9] = [
    TIME_TO_FIRST_CHUNK,
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    FINISH_REASONS,
    ERROR_TYPE,
    OUTCOME,
    TIME_PER_OUTPUT_TOKEN,
    DURATION,
    REQUEST_ID,
];
