//! Every instrument and attribute name this crate publishes, in one place.
//!
//! The GenAI semantic-convention names (`gen_ai.*`, status: development) and, for what semconv
//! does not define, `tokenmeter.*` names: the same metrics as the Prometheus exporter's
//! `semconv` profile, so that a user who switches between the OTLP path and the Prometheus path
//! lands on the same series names. [`MetricName::prometheus_name`] is the OTel→Prometheus
//! translation (dots become underscores, `s` becomes `_seconds`, annotations such as `{token}`
//! are dropped, counters end in `_total`).
//!
//! # Examples
//!
//! ```
//! use tokenmeter_otel::names;
//!
//! let queue = names::QUEUE_TIME;
//! assert_eq!((queue.name, queue.unit), ("tokenmeter.request.queue_time", "s"));
//! assert_eq!(queue.prometheus_name(), "tokenmeter_request_queue_time_seconds");
//! assert_eq!(names::REQUESTS.prometheus_name(), "tokenmeter_requests_total");
//! ```

use std::fmt;

/// The kind of instrument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// A histogram (`f64` seconds, or `u64` tokens).
    Histogram,
    /// A monotonic counter.
    Counter,
    /// An up-down counter: a value that goes up and down by deltas (a Prometheus gauge).
    UpDownCounter,
    /// A gauge: a value that is set (a Prometheus gauge).
    Gauge,
}

/// One instrument: its name, UCUM unit, kind and description.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct MetricName {
    /// The instrument name.
    pub name: &'static str,
    /// The UCUM unit: `s`, `1`, `{token}`, `{request}`, `{series}`, `{preemption}` or
    /// `{sequence}`.
    pub unit: &'static str,
    /// The instrument kind.
    pub kind: Kind,
    /// The description.
    pub description: &'static str,
}

impl MetricName {
    const fn new(
        name: &'static str,
        unit: &'static str,
        kind: Kind,
        description: &'static str,
    ) -> Self {
        Self {
            name,
            unit,
            kind,
            description,
        }
    }

    /// The name a Prometheus backend shows for this instrument (OTel→Prometheus translation).
    pub fn prometheus_name(&self) -> String {
        let mut out = self.name.replace(['.', '-'], "_");
        match (self.unit, self.kind) {
            ("s", _) => out.push_str("_seconds"),
            ("1", Kind::Gauge) => out.push_str("_ratio"),
            _ => {}
        }
        if self.kind == Kind::Counter {
            out.push_str("_total");
        }
        out
    }
}

impl fmt::Display for MetricName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

const fn h(name: &'static str, unit: &'static str, description: &'static str) -> MetricName {
    MetricName::new(name, unit, Kind::Histogram, description)
}

/// `gen_ai.server.time_to_first_token`: first token − arrival.
pub const SERVER_TIME_TO_FIRST_TOKEN: MetricName = h(
    "gen_ai.server.time_to_first_token",
    "s",
    "Time to generate the first token: first token minus request arrival.",
);
/// `gen_ai.server.time_per_output_token`: decode / (output tokens − 1), per request.
pub const SERVER_TIME_PER_OUTPUT_TOKEN: MetricName = h(
    "gen_ai.server.time_per_output_token",
    "s",
    "Time per output token after the first: decode time / (output tokens - 1), per request.",
);
/// `gen_ai.server.request.duration`: end − arrival, for every request.
pub const SERVER_REQUEST_DURATION: MetricName = h(
    "gen_ai.server.request.duration",
    "s",
    "Request duration from arrival to the end of the stream, error or cancellation.",
);
/// `gen_ai.client.operation.duration`: end − send, for every request.
pub const CLIENT_OPERATION_DURATION: MetricName = h(
    "gen_ai.client.operation.duration",
    "s",
    "GenAI operation duration from send to the end of the stream, error or cancellation.",
);
/// `gen_ai.client.operation.time_to_first_chunk`: first token-bearing chunk − send.
pub const CLIENT_TIME_TO_FIRST_CHUNK: MetricName = h(
    "gen_ai.client.operation.time_to_first_chunk",
    "s",
    "Time to receive the first chunk that carries a token, from the send.",
);
/// `gen_ai.client.operation.time_per_output_chunk`: one sample per chunk after the first.
pub const CLIENT_TIME_PER_OUTPUT_CHUNK: MetricName = h(
    "gen_ai.client.operation.time_per_output_chunk",
    "s",
    "Time between consecutive token-bearing chunks, one sample per chunk after the first.",
);
/// `gen_ai.client.token.usage`, with `gen_ai.token.type` = `input` or `output`. The token
/// metrics are being reworked upstream: this is the one place to follow them.
pub const CLIENT_TOKEN_USAGE: MetricName = h(
    "gen_ai.client.token.usage",
    "{token}",
    "Input and output tokens per request, by gen_ai.token.type.",
);
/// `tokenmeter.inter_token_latency` (server): one sample per token-bearing item after the
/// first. The client side uses [`CLIENT_TIME_PER_OUTPUT_CHUNK`].
pub const INTER_TOKEN_LATENCY: MetricName = h(
    "tokenmeter.inter_token_latency",
    "s",
    "Inter-token latency: gap between consecutive token-bearing items, one sample per item after the first.",
);
/// `tokenmeter.time_per_output_token` (client): decode / (output tokens − 1), per request.
/// The server side uses [`SERVER_TIME_PER_OUTPUT_TOKEN`].
pub const TIME_PER_OUTPUT_TOKEN: MetricName = h(
    "tokenmeter.time_per_output_token",
    "s",
    "Time per output token seen by the client: decode time / (output tokens - 1), per request.",
);
/// `tokenmeter.request.queue_time`: scheduled − arrival.
pub const QUEUE_TIME: MetricName = h(
    "tokenmeter.request.queue_time",
    "s",
    "Time in the queue: scheduled minus arrival.",
);
/// `tokenmeter.request.prefill_time`: first token − scheduled.
pub const PREFILL_TIME: MetricName = h(
    "tokenmeter.request.prefill_time",
    "s",
    "Prefill time: first token minus scheduled.",
);
/// `tokenmeter.request.decode_time`: last token − first token.
pub const DECODE_TIME: MetricName = h(
    "tokenmeter.request.decode_time",
    "s",
    "Decode time: last token minus first token.",
);
/// `tokenmeter.request.inference_time`: last token − scheduled.
pub const INFERENCE_TIME: MetricName = h(
    "tokenmeter.request.inference_time",
    "s",
    "Inference time: last token minus scheduled.",
);
/// `tokenmeter.requests`: requests ended, by `outcome` and `error.type`.
pub const REQUESTS: MetricName = MetricName::new(
    "tokenmeter.requests",
    "{request}",
    Kind::Counter,
    "Requests ended, by outcome (success, error, cancelled, degraded) and error.type.",
);
/// `tokenmeter.input_tokens`: input tokens of ended requests, where known.
pub const INPUT_TOKENS: MetricName = MetricName::new(
    "tokenmeter.input_tokens",
    "{token}",
    Kind::Counter,
    "Input (prompt) tokens of ended requests, where known.",
);
/// `tokenmeter.output_tokens`: output tokens of ended requests.
pub const OUTPUT_TOKENS: MetricName = MetricName::new(
    "tokenmeter.output_tokens",
    "{token}",
    Kind::Counter,
    "Output (generated) tokens of ended requests.",
);
/// `tokenmeter.requests.waiting`: started and not yet scheduled nor past the first token.
pub const REQUESTS_WAITING: MetricName = MetricName::new(
    "tokenmeter.requests.waiting",
    "{request}",
    Kind::UpDownCounter,
    "Requests waiting: started and not yet scheduled nor past their first token.",
);
/// `tokenmeter.requests.running`: scheduled or past the first token, not yet ended.
pub const REQUESTS_RUNNING: MetricName = MetricName::new(
    "tokenmeter.requests.running",
    "{request}",
    Kind::UpDownCounter,
    "Requests running: scheduled or past their first token, not yet ended.",
);
/// `tokenmeter.series.folded`: label sets folded into `_OTHER` past the series cap.
pub const SERIES_FOLDED: MetricName = MetricName::new(
    "tokenmeter.series.folded",
    "{series}",
    Kind::Counter,
    "Label sets folded into the _OTHER series because the series cap was reached.",
);

/// `tokenmeter.kv_cache.usage`: KV-cache usage as a fraction from 0 to 1, set by the engine
/// through [`EngineGauges`](crate::EngineGauges).
pub const KV_CACHE_USAGE: MetricName = MetricName::new(
    "tokenmeter.kv_cache.usage",
    "1",
    Kind::Gauge,
    "KV-cache usage as a fraction from 0 to 1, set by the engine.",
);
/// `tokenmeter.preemptions`: requests preempted by the engine, through
/// [`EngineGauges`](crate::EngineGauges).
pub const PREEMPTIONS: MetricName = MetricName::new(
    "tokenmeter.preemptions",
    "{preemption}",
    Kind::Counter,
    "Requests preempted by the engine, reported by the engine.",
);

/// `tokenmeter.engine.step.duration`: how long one engine step (scheduler iteration) took, by
/// `kind` (`prefill`, `decode`, `mixed`). Recorded from [`Meter::steps`](tokenmeter::Meter::steps).
pub const ENGINE_STEP_DURATION: MetricName = h(
    "tokenmeter.engine.step.duration",
    "s",
    "Duration of one engine step (scheduler iteration), by kind (prefill, decode, mixed).",
);
/// `tokenmeter.engine.batch_size`: sequences in one engine step, by `kind`. Against
/// [`ENGINE_STEP_DURATION`] it shows the batch-size trade-off.
pub const ENGINE_BATCH_SIZE: MetricName = h(
    "tokenmeter.engine.batch_size",
    "{sequence}",
    "Sequences in one engine step (the batch size), by kind (prefill, decode, mixed).",
);
/// `tokenmeter.engine.step.tokens`: tokens processed by engine steps, by `kind` (prompt tokens
/// for a prefill, one per sequence for a decode). Its rate for `kind` = `decode` is the
/// engine's output tokens per second: per GPU when one engine runs on one GPU.
pub const ENGINE_STEP_TOKENS: MetricName = MetricName::new(
    "tokenmeter.engine.step.tokens",
    "{token}",
    Kind::Counter,
    "Tokens processed by engine steps, by kind; rate() of kind=decode is output tokens per second per engine.",
);

/// Every instrument this crate creates.
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

/// Attribute keys.
pub mod attr {
    /// `gen_ai.operation.name`.
    pub const OPERATION: &str = "gen_ai.operation.name";
    /// `gen_ai.provider.name`.
    pub const PROVIDER: &str = "gen_ai.provider.name";
    /// `gen_ai.request.model`.
    pub const REQUEST_MODEL: &str = "gen_ai.request.model";
    /// `gen_ai.response.model`.
    pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
    /// `server.address`.
    pub const SERVER_ADDRESS: &str = "server.address";
    /// `server.port` (an integer).
    pub const SERVER_PORT: &str = "server.port";
    /// `error.type`: one of the fixed [`ErrorClass`](tokenmeter::ErrorClass) values, only on
    /// requests that ended in an error.
    pub const ERROR_TYPE: &str = "error.type";
    /// `gen_ai.token.type`: `input` or `output`.
    pub const TOKEN_TYPE: &str = "gen_ai.token.type";
    /// `role`: `server` or `client`, on every `tokenmeter.*` instrument.
    pub const ROLE: &str = "role";
    /// `outcome`: `success`, `error`, `cancelled` or `degraded`, on [`REQUESTS`](super::REQUESTS).
    pub const OUTCOME: &str = "outcome";
    /// `kind`: `prefill`, `decode` or `mixed` ([`StepKind`](tokenmeter::sink::StepKind)), on
    /// the engine-step instruments.
    pub const KIND: &str = "kind";
}
