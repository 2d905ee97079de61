//! The default profile: OpenTelemetry GenAI semantic-convention names, and `tokenmeter_` names
//! for what semconv does not define.
//!
//! Source: open-telemetry/semantic-conventions `docs/gen-ai/gen-ai-metrics.md` (moved to
//! open-telemetry/semantic-conventions-genai in v1.42.0).

use super::{Kind, MetricName};

/// `gen_ai.server.time_to_first_token`: first token − arrival, recorded when the first token
/// arrives.
pub const SERVER_TIME_TO_FIRST_TOKEN: MetricName = MetricName::new(
    "gen_ai.server.time_to_first_token",
    "gen_ai_server_time_to_first_token_seconds",
    "s",
    Kind::Histogram,
    "Time to generate the first token: first token minus request arrival.",
);

/// `gen_ai.server.time_per_output_token`: decode / (output tokens − 1), per request.
pub const SERVER_TIME_PER_OUTPUT_TOKEN: MetricName = MetricName::new(
    "gen_ai.server.time_per_output_token",
    "gen_ai_server_time_per_output_token_seconds",
    "s",
    Kind::Histogram,
    "Time per output token after the first: decode time / (output tokens - 1), per request.",
);

/// `gen_ai.server.request.duration`: end − arrival, for every request.
pub const SERVER_REQUEST_DURATION: MetricName = MetricName::new(
    "gen_ai.server.request.duration",
    "gen_ai_server_request_duration_seconds",
    "s",
    Kind::Histogram,
    "Request duration from arrival to the end of the stream, error or cancellation.",
);

/// `gen_ai.client.operation.duration`: end − send, for every request.
pub const CLIENT_OPERATION_DURATION: MetricName = MetricName::new(
    "gen_ai.client.operation.duration",
    "gen_ai_client_operation_duration_seconds",
    "s",
    Kind::Histogram,
    "GenAI operation duration from send to the end of the stream, error or cancellation.",
);

/// `gen_ai.client.operation.time_to_first_chunk`: first token-bearing chunk − send.
pub const CLIENT_TIME_TO_FIRST_CHUNK: MetricName = MetricName::new(
    "gen_ai.client.operation.time_to_first_chunk",
    "gen_ai_client_operation_time_to_first_chunk_seconds",
    "s",
    Kind::Histogram,
    "Time to receive the first chunk that carries a token, from the send.",
);

/// `gen_ai.client.operation.time_per_output_chunk`: one sample per chunk after the first.
pub const CLIENT_TIME_PER_OUTPUT_CHUNK: MetricName = MetricName::new(
    "gen_ai.client.operation.time_per_output_chunk",
    "gen_ai_client_operation_time_per_output_chunk_seconds",
    "s",
    Kind::Histogram,
    "Time between consecutive token-bearing chunks, one sample per chunk after the first.",
);

/// `gen_ai.client.token.usage` with `gen_ai.token.type` = `input` or `output`. The token
/// metrics are being reworked upstream (per-direction histograms): this is the one place to
/// follow them.
pub const CLIENT_TOKEN_USAGE: MetricName = MetricName::new(
    "gen_ai.client.token.usage",
    "gen_ai_client_token_usage",
    "{token}",
    Kind::Histogram,
    "Input and output tokens per request, by gen_ai_token_type.",
);

/// `tokenmeter.inter_token_latency` (server): gap between consecutive token-bearing items,
/// one sample per item after the first. The client side uses
/// [`CLIENT_TIME_PER_OUTPUT_CHUNK`].
pub const INTER_TOKEN_LATENCY: MetricName = MetricName::new(
    "tokenmeter.inter_token_latency",
    "tokenmeter_inter_token_latency_seconds",
    "s",
    Kind::Histogram,
    "Inter-token latency: gap between consecutive token-bearing items, one sample per item after the first.",
);

/// `tokenmeter.time_per_output_token` (client): decode / (output tokens − 1) per request, as
/// `vllm bench serve` computes TPOT. The server side uses [`SERVER_TIME_PER_OUTPUT_TOKEN`].
pub const TIME_PER_OUTPUT_TOKEN: MetricName = MetricName::new(
    "tokenmeter.time_per_output_token",
    "tokenmeter_time_per_output_token_seconds",
    "s",
    Kind::Histogram,
    "Time per output token seen by the client: decode time / (output tokens - 1), per request.",
);

/// `tokenmeter.request.queue_time`: scheduled − arrival, when the server marks `scheduled`.
pub const QUEUE_TIME: MetricName = MetricName::new(
    "tokenmeter.request.queue_time",
    "tokenmeter_request_queue_time_seconds",
    "s",
    Kind::Histogram,
    "Time in the queue: scheduled minus arrival.",
);

/// `tokenmeter.request.prefill_time`: first token − scheduled.
pub const PREFILL_TIME: MetricName = MetricName::new(
    "tokenmeter.request.prefill_time",
    "tokenmeter_request_prefill_time_seconds",
    "s",
    Kind::Histogram,
    "Prefill time: first token minus scheduled.",
);

/// `tokenmeter.request.decode_time`: last token − first token.
pub const DECODE_TIME: MetricName = MetricName::new(
    "tokenmeter.request.decode_time",
    "tokenmeter_request_decode_time_seconds",
    "s",
    Kind::Histogram,
    "Decode time: last token minus first token.",
);

/// `tokenmeter.request.inference_time`: last token − scheduled.
pub const INFERENCE_TIME: MetricName = MetricName::new(
    "tokenmeter.request.inference_time",
    "tokenmeter_request_inference_time_seconds",
    "s",
    Kind::Histogram,
    "Inference time: last token minus scheduled.",
);

/// `tokenmeter.requests`: requests ended, by `outcome` and `error_type`. Cancelled requests
/// are counted.
pub const REQUESTS: MetricName = MetricName::new(
    "tokenmeter.requests",
    "tokenmeter_requests_total",
    "{request}",
    Kind::Counter,
    "Requests ended, by outcome (success, error, cancelled, degraded) and error_type.",
);

/// `tokenmeter.input_tokens`: input tokens of ended requests, where known.
pub const INPUT_TOKENS: MetricName = MetricName::new(
    "tokenmeter.input_tokens",
    "tokenmeter_input_tokens_total",
    "{token}",
    Kind::Counter,
    "Input (prompt) tokens of ended requests, where known.",
);

/// `tokenmeter.output_tokens`: output tokens of ended requests.
pub const OUTPUT_TOKENS: MetricName = MetricName::new(
    "tokenmeter.output_tokens",
    "tokenmeter_output_tokens_total",
    "{token}",
    Kind::Counter,
    "Output (generated) tokens of ended requests.",
);

/// `tokenmeter.requests.waiting`: requests started and not yet scheduled (nor past their
/// first token).
pub const REQUESTS_WAITING: MetricName = MetricName::new(
    "tokenmeter.requests.waiting",
    "tokenmeter_requests_waiting",
    "{request}",
    Kind::Gauge,
    "Requests waiting: started and not yet scheduled nor past their first token.",
);

/// `tokenmeter.requests.running`: requests scheduled (or past their first token) and not yet
/// ended.
pub const REQUESTS_RUNNING: MetricName = MetricName::new(
    "tokenmeter.requests.running",
    "tokenmeter_requests_running",
    "{request}",
    Kind::Gauge,
    "Requests running: scheduled or past their first token, not yet ended.",
);

/// `tokenmeter.series.folded`: label sets folded into `_OTHER` because the series cap was
/// reached.
pub const SERIES_FOLDED: MetricName = MetricName::new(
    "tokenmeter.series.folded",
    "tokenmeter_series_folded_total",
    "{series}",
    Kind::Counter,
    "Label sets folded into the _OTHER series because the series cap was reached.",
);

/// `tokenmeter.kv_cache.usage`: KV-cache usage as a fraction from 0 to 1, set by the engine.
pub const KV_CACHE_USAGE: MetricName = MetricName::new(
    "tokenmeter.kv_cache.usage",
    "tokenmeter_kv_cache_usage_ratio",
    "1",
    Kind::Gauge,
    "KV-cache usage as a fraction from 0 to 1, set by the engine.",
);

/// `tokenmeter.preemptions`: requests preempted by the engine (their KV cache was evicted).
pub const PREEMPTIONS: MetricName = MetricName::new(
    "tokenmeter.preemptions",
    "tokenmeter_preemptions_total",
    "{preemption}",
    Kind::Counter,
    "Requests preempted by the engine, reported by the engine.",
);

/// `tokenmeter.engine.step.duration`: how long one engine step (scheduler iteration) took, by
/// `kind` (`prefill`, `decode`, `mixed`). Recorded from [`Meter::steps`](tokenmeter::Meter::steps).
pub const ENGINE_STEP_DURATION: MetricName = MetricName::new(
    "tokenmeter.engine.step.duration",
    "tokenmeter_engine_step_duration_seconds",
    "s",
    Kind::Histogram,
    "Duration of one engine step (scheduler iteration), by kind (prefill, decode, mixed).",
);

/// `tokenmeter.engine.batch_size`: sequences in one engine step, by `kind`. Against
/// [`ENGINE_STEP_DURATION`] it shows the batch-size trade-off: a bigger batch makes each step
/// (each user's next token) slower and the engine's throughput higher.
pub const ENGINE_BATCH_SIZE: MetricName = MetricName::new(
    "tokenmeter.engine.batch_size",
    "tokenmeter_engine_batch_size",
    "{sequence}",
    Kind::Histogram,
    "Sequences in one engine step (the batch size), by kind (prefill, decode, mixed).",
);

/// `tokenmeter.engine.step.tokens`: tokens processed by engine steps, by `kind` (prompt tokens
/// for a prefill, one per sequence for a decode). `rate()` of the `decode` series is the
/// engine's output tokens per second: per GPU when one engine runs on one GPU.
pub const ENGINE_STEP_TOKENS: MetricName = MetricName::new(
    "tokenmeter.engine.step.tokens",
    "tokenmeter_engine_step_tokens_total",
    "{token}",
    Kind::Counter,
    "Tokens processed by engine steps, by kind; rate() of kind=decode is output tokens per second per engine.",
);

/// Every metric of the semconv profile.
pub const ALL: &[MetricName] = &[
    SERVER_TIME_TO_FIRST_TOKEN,
    SERVER_TIME_PER_OUTPUT_TOKEN,
    SERVER_REQUEST_DURATION,
    CLIENT_OPERATION_DURATION,
    CLIENT_TIME_TO_FIRST_CHUNK,
    CLIENT_TIME_PER_OUTPUT_CHUNK,
    CLIENT_TOKEN_USAGE,
    INTER_TOKEN_LATENCY,
    TIME_PER_OUTPUT_TOKEN,
    QUEUE_TIME,
    PREFILL_TIME,
    DECODE_TIME,
    INFERENCE_TIME,
    REQUESTS,
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    REQUESTS_WAITING,
    REQUESTS_RUNNING,
    SERIES_FOLDED,
    KV_CACHE_USAGE,
    PREEMPTIONS,
    ENGINE_STEP_DURATION,
    ENGINE_BATCH_SIZE,
    ENGINE_STEP_TOKENS,
];
