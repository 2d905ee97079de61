//! Every instrument tokenmeter publishes: the OpenTelemetry GenAI semantic-convention names
//! (`gen_ai.*`, status: development) and, for what semconv does not name, `tokenmeter.*`.
//!
//! Sources, named on each constant: `docs/src/reference/metrics.md` §3 (the semconv table, from
//! open-telemetry/semantic-conventions `docs/gen-ai/gen-ai-metrics.md` up to v1.41.0, then
//! open-telemetry/semantic-conventions-genai v0.1.0: `docs/gen-ai/gen-ai-metrics.md`,
//! `docs/gen-ai/client-inference.md`, `docs/gen-ai/gen-ai-token-metrics.md`), §1 (the lifecycle intervals), §2 (outcomes) and
//! §6 (saturation). When upstream renames something, this module is the one place to change.
//!
//! # Examples
//!
//! ```
//! use tokenmeter::conventions::names;
//!
//! let queue = names::QUEUE_TIME;
//! assert_eq!((queue.name, queue.unit), ("tokenmeter.request.queue_time", "s"));
//! assert_eq!(queue.prometheus_name(), "tokenmeter_request_queue_time_seconds");
//! assert!(names::ALL.contains(&queue));
//! ```

use super::instrument::Instrument;
use super::kind::InstrumentKind;

const fn h(name: &'static str, unit: &'static str, description: &'static str) -> Instrument {
    Instrument::new(name, unit, InstrumentKind::Histogram, description)
}

const fn counter(name: &'static str, unit: &'static str, description: &'static str) -> Instrument {
    Instrument::new(name, unit, InstrumentKind::Counter, description)
}

/// `gen_ai.server.time_to_first_token`: first token − arrival, recorded at the first token.
/// `docs/src/reference/metrics.md` §3.
pub const SERVER_TIME_TO_FIRST_TOKEN: Instrument = h(
    "gen_ai.server.time_to_first_token",
    "s",
    "Time to generate the first token: first token minus request arrival.",
);
/// `gen_ai.server.time_per_output_token`: decode / (output tokens − 1), per request.
/// `docs/src/reference/metrics.md` §3 (the TPOT of §1).
pub const SERVER_TIME_PER_OUTPUT_TOKEN: Instrument = h(
    "gen_ai.server.time_per_output_token",
    "s",
    "Time per output token after the first: decode time / (output tokens - 1), per request.",
);
/// `gen_ai.server.request.duration`: end − arrival, for every request. `docs/src/reference/metrics.md` §3.
pub const SERVER_REQUEST_DURATION: Instrument = h(
    "gen_ai.server.request.duration",
    "s",
    "Request duration from arrival to the end of the stream, error or cancellation.",
);
/// `gen_ai.client.operation.duration`: end − send, for every request. `docs/src/reference/metrics.md` §3.
/// For inference, renamed [`CLIENT_INFERENCE_DURATION`] in the GenAI conventions v0.1.0; one of
/// [`SUPERSEDED`].
pub const CLIENT_OPERATION_DURATION: Instrument = h(
    "gen_ai.client.operation.duration",
    "s",
    "GenAI operation duration from send to the end of the stream, error or cancellation.",
);
/// `gen_ai.client.operation.time_to_first_chunk`: first token-bearing chunk − send.
/// `docs/src/reference/metrics.md` §3. Renamed [`CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK`] in v0.1.0; one of
/// [`SUPERSEDED`].
pub const CLIENT_TIME_TO_FIRST_CHUNK: Instrument = h(
    "gen_ai.client.operation.time_to_first_chunk",
    "s",
    "Time to receive the first chunk that carries a token, from the send.",
);
/// `gen_ai.client.operation.time_per_output_chunk`: one sample per chunk after the first.
/// `docs/src/reference/metrics.md` §3. Renamed [`CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK`] in v0.1.0; one of
/// [`SUPERSEDED`].
pub const CLIENT_TIME_PER_OUTPUT_CHUNK: Instrument = h(
    "gen_ai.client.operation.time_per_output_chunk",
    "s",
    "Time between consecutive token-bearing chunks, one sample per chunk after the first.",
);
/// `gen_ai.client.token.usage`, with `gen_ai.token.type` = `input` or `output`. `docs/src/reference/metrics.md`
/// §3. Removed from the GenAI conventions in v0.1.0 (replaced by [`CLIENT_USAGE_INPUT_TOKENS`],
/// [`CLIENT_OPERATION_INPUT_TOKENS`] and their output twins); one of [`SUPERSEDED`], in the
/// default table for existing dashboards (the Prometheus exporter's default) and left out of
/// [`Conventions::current`](crate::conventions::Conventions::current) (the OTel sink's).
pub const CLIENT_TOKEN_USAGE: Instrument = h(
    "gen_ai.client.token.usage",
    "{token}",
    "Input and output tokens per request, by gen_ai.token.type.",
);
/// `tokenmeter.inter_token_latency` (server): one sample per token-bearing item after the
/// first (the ITL of `docs/src/reference/metrics.md` §1). The client side uses [`CLIENT_TIME_PER_OUTPUT_CHUNK`].
pub const INTER_TOKEN_LATENCY: Instrument = h(
    "tokenmeter.inter_token_latency",
    "s",
    "Inter-token latency: gap between consecutive token-bearing items, one sample per item after the first.",
);
/// `tokenmeter.time_per_output_token` (client): decode / (output tokens − 1) per request, as
/// `vllm bench serve` computes TPOT (`docs/src/reference/metrics.md` §1 and §5). The server side uses
/// [`SERVER_TIME_PER_OUTPUT_TOKEN`].
pub const TIME_PER_OUTPUT_TOKEN: Instrument = h(
    "tokenmeter.time_per_output_token",
    "s",
    "Time per output token seen by the client: decode time / (output tokens - 1), per request.",
);
/// `tokenmeter.request.queue_time`: scheduled − arrival, when the server marks `scheduled`.
/// `docs/src/reference/metrics.md` §1.
pub const QUEUE_TIME: Instrument = h(
    "tokenmeter.request.queue_time",
    "s",
    "Time in the queue: scheduled minus arrival.",
);
/// `tokenmeter.request.prefill_time`: first token − scheduled. `docs/src/reference/metrics.md` §1.
pub const PREFILL_TIME: Instrument = h(
    "tokenmeter.request.prefill_time",
    "s",
    "Prefill time: first token minus scheduled.",
);
/// `tokenmeter.request.decode_time`: last token − first token. `docs/src/reference/metrics.md` §1.
pub const DECODE_TIME: Instrument = h(
    "tokenmeter.request.decode_time",
    "s",
    "Decode time: last token minus first token.",
);
/// `tokenmeter.request.inference_time`: last token − scheduled. `docs/src/reference/metrics.md` §1.
pub const INFERENCE_TIME: Instrument = h(
    "tokenmeter.request.inference_time",
    "s",
    "Inference time: last token minus scheduled.",
);
/// `tokenmeter.requests`: requests ended, by `outcome` and `error.type`; cancelled requests
/// are counted. `docs/src/reference/metrics.md` §2.
pub const REQUESTS: Instrument = counter(
    "tokenmeter.requests",
    "{request}",
    "Requests ended, by outcome (success, error, cancelled, degraded) and error.type.",
);
/// `tokenmeter.input_tokens`: input tokens of ended requests, where known. `docs/src/reference/metrics.md` §3
/// (vLLM's `prompt_tokens_total`).
pub const INPUT_TOKENS: Instrument = counter(
    "tokenmeter.input_tokens",
    "{token}",
    "Input (prompt) tokens of ended requests, where known.",
);
/// `tokenmeter.output_tokens`: output tokens of ended requests. `docs/src/reference/metrics.md` §3 (vLLM's
/// `generation_tokens_total`).
pub const OUTPUT_TOKENS: Instrument = counter(
    "tokenmeter.output_tokens",
    "{token}",
    "Output (generated) tokens of ended requests.",
);
/// `tokenmeter.requests.waiting`: started and not yet scheduled nor past the first token.
/// `docs/src/reference/metrics.md` §6 (queue depth leads latency).
pub const REQUESTS_WAITING: Instrument = Instrument::new(
    "tokenmeter.requests.waiting",
    "{request}",
    InstrumentKind::UpDownCounter,
    "Requests waiting: started and not yet scheduled nor past their first token.",
);
/// `tokenmeter.requests.running`: scheduled or past the first token, not yet ended.
/// `docs/src/reference/metrics.md` §3 (vLLM's `num_requests_running`).
pub const REQUESTS_RUNNING: Instrument = Instrument::new(
    "tokenmeter.requests.running",
    "{request}",
    InstrumentKind::UpDownCounter,
    "Requests running: scheduled or past their first token, not yet ended.",
);
/// `tokenmeter.series.folded`: label sets folded into `_OTHER` because the series cap was
/// reached (`docs/src/reference/metrics.md` §3, Cardinality).
pub const SERIES_FOLDED: Instrument = counter(
    "tokenmeter.series.folded",
    "{series}",
    "Label sets folded into the _OTHER series because the series cap was reached.",
);
/// `tokenmeter.kv_cache.usage`: KV-cache usage as a fraction from 0 to 1, set by the engine.
/// `docs/src/reference/metrics.md` §6 (saturation) and §3 (vLLM's `kv_cache_usage_perc`).
pub const KV_CACHE_USAGE: Instrument = Instrument::new(
    "tokenmeter.kv_cache.usage",
    "1",
    InstrumentKind::Gauge,
    "KV-cache usage as a fraction from 0 to 1, set by the engine.",
);
/// `tokenmeter.preemptions`: requests preempted by the engine (their KV cache was evicted),
/// as the engine reports them. Tokenmeter's own (`docs/src/reference/metrics.md` §3).
pub const PREEMPTIONS: Instrument = counter(
    "tokenmeter.preemptions",
    "{preemption}",
    "Requests preempted by the engine, reported by the engine.",
);
/// `tokenmeter.engine.step.duration`: how long one engine step (scheduler iteration) took, by
/// `kind` (`prefill`, `decode`, `mixed`), recorded from [`Meter::engine`](crate::Meter::engine).
/// Tokenmeter's own (`docs/src/reference/metrics.md` §3).
pub const ENGINE_STEP_DURATION: Instrument = h(
    "tokenmeter.engine.step.duration",
    "s",
    "Duration of one engine step (scheduler iteration), by kind (prefill, decode, mixed).",
);
/// `tokenmeter.engine.batch_size`: sequences in one engine step, by `kind`. Against
/// [`ENGINE_STEP_DURATION`] it shows the batch-size trade-off: a bigger batch makes each step
/// (each user's next token) slower and the engine's throughput higher. Tokenmeter's own
/// (`docs/src/reference/metrics.md` §3).
pub const ENGINE_BATCH_SIZE: Instrument = h(
    "tokenmeter.engine.batch_size",
    "{sequence}",
    "Sequences in one engine step (the batch size), by kind (prefill, decode, mixed).",
);
/// `tokenmeter.engine.step.tokens`: tokens processed by engine steps, by `kind` (prompt tokens
/// for a prefill, one per sequence for a decode). The rate of the `decode` series is the
/// engine's output tokens per second: per GPU when one engine runs on one GPU. Tokenmeter's
/// own (`docs/src/reference/metrics.md` §3).
pub const ENGINE_STEP_TOKENS: Instrument = counter(
    "tokenmeter.engine.step.tokens",
    "{token}",
    "Tokens processed by engine steps, by kind; rate() of kind=decode is output tokens per second per engine.",
);

/// `tokenmeter.request.time_to_first_output_token`: first *output* token − arrival, the first
/// answer token after any reasoning (`docs/src/reference/metrics.md` §1). Equal to the TTFT for a request
/// without reasoning.
pub const TIME_TO_FIRST_OUTPUT_TOKEN: Instrument = h(
    "tokenmeter.request.time_to_first_output_token",
    "s",
    "Time to first output token: the first answer token after any reasoning, minus arrival.",
);
/// `tokenmeter.request.time_to_second_token`: second token − arrival (`docs/src/reference/metrics.md` §1):
/// how soon the stream keeps going after its first token.
pub const TIME_TO_SECOND_TOKEN: Instrument = h(
    "tokenmeter.request.time_to_second_token",
    "s",
    "Time to second token: the second token minus arrival.",
);
/// `tokenmeter.request.normalized_time_per_output_token`: E2E ÷ output tokens, the whole wait
/// spread over every token (`docs/src/reference/metrics.md` §1; inference-perf's and llm-d's NTPOT).
pub const NORMALIZED_TIME_PER_OUTPUT_TOKEN: Instrument = h(
    "tokenmeter.request.normalized_time_per_output_token",
    "s",
    "Normalised time per output token: end-to-end latency divided by output tokens.",
);
/// `tokenmeter.request.computed_input_tokens`: input tokens the engine prefilled itself (input
/// − prefix-cache hits − external KV), per request (vLLM's `request_prefill_kv_computed_tokens`).
pub const COMPUTED_INPUT_TOKENS: Instrument = h(
    "tokenmeter.request.computed_input_tokens",
    "{token}",
    "Input tokens the engine computed for a request: input minus prefix-cache hits and external KV.",
);
/// `tokenmeter.input_tokens.by_source`: input tokens of ended requests by `source`
/// (`local_compute`, `local_cache_hit`, `external_kv_transfer`; vLLM's `prompt_tokens_by_source`).
pub const INPUT_TOKENS_BY_SOURCE: Instrument = counter(
    "tokenmeter.input_tokens.by_source",
    "{token}",
    "Input tokens of ended requests by source: local_compute, local_cache_hit, external_kv_transfer.",
);
/// `tokenmeter.request.max_tokens`: the `max_tokens` parameter of requests that set it (vLLM's
/// `request_params_max_tokens`).
pub const REQUEST_MAX_TOKENS: Instrument = h(
    "tokenmeter.request.max_tokens",
    "{token}",
    "The max_tokens parameter of requests that set it.",
);
/// `tokenmeter.request.choices`: the `n` parameter (choices asked for) of requests that set it
/// (vLLM's `request_params_n`).
pub const REQUEST_CHOICES: Instrument = h(
    "tokenmeter.request.choices",
    "{choice}",
    "The n parameter (choices asked for) of requests that set it.",
);
/// `tokenmeter.prefix_cache.queries`: prompt tokens the engine looked up in its prefix cache.
pub const PREFIX_CACHE_QUERIES: Instrument = counter(
    "tokenmeter.prefix_cache.queries",
    "{token}",
    "Prompt tokens looked up in the prefix cache, reported by the engine.",
);
/// `tokenmeter.prefix_cache.hits`: prompt tokens the prefix cache had; hits ÷ queries is the
/// hit rate.
pub const PREFIX_CACHE_HITS: Instrument = counter(
    "tokenmeter.prefix_cache.hits",
    "{token}",
    "Prompt tokens found in the prefix cache, reported by the engine.",
);
/// `tokenmeter.spec_decode.drafts`: speculative-decoding drafts proposed.
pub const SPEC_DECODE_DRAFTS: Instrument = counter(
    "tokenmeter.spec_decode.drafts",
    "{draft}",
    "Speculative-decoding drafts proposed, reported by the engine.",
);
/// `tokenmeter.spec_decode.draft_tokens`: draft tokens proposed.
pub const SPEC_DECODE_DRAFT_TOKENS: Instrument = counter(
    "tokenmeter.spec_decode.draft_tokens",
    "{token}",
    "Speculative-decoding draft tokens proposed, reported by the engine.",
);
/// `tokenmeter.spec_decode.accepted_tokens`: draft tokens the target model accepted; accepted ÷
/// draft tokens is the acceptance rate (never above 1).
pub const SPEC_DECODE_ACCEPTED_TOKENS: Instrument = counter(
    "tokenmeter.spec_decode.accepted_tokens",
    "{token}",
    "Speculative-decoding draft tokens accepted, reported by the engine.",
);

/// `tokenmeter.engine.cache_config.info`: an info gauge, always 1, whose attributes
/// `block_size` and `num_gpu_blocks` carry the engine's KV-cache configuration
/// ([`EngineRecorder::set_cache_config`](crate::sink::EngineRecorder::set_cache_config)): what
/// vLLM publishes as `vllm:cache_config_info` and the Gateway API Inference Extension's model-server
/// protocol reads (`docs/src/reference/gateways.md`).
pub const ENGINE_CACHE_CONFIG_INFO: Instrument = Instrument::new(
    "tokenmeter.engine.cache_config.info",
    "{info}",
    InstrumentKind::Gauge,
    "The engine's KV-cache configuration in the labels block_size and num_gpu_blocks; always 1.",
);
/// `tokenmeter.engine.lora_requests.info`: an info gauge whose attributes `max_lora`,
/// `running_lora_adapters` and `waiting_lora_adapters` (comma-separated, bounded) carry the
/// engine's LoRA adapters, and whose value is the Unix time in seconds when they last changed
/// ([`EngineRecorder::set_lora_adapters`](crate::sink::EngineRecorder::set_lora_adapters)):
/// vLLM's `vllm:lora_requests_info`.
pub const ENGINE_LORA_REQUESTS_INFO: Instrument = Instrument::new(
    "tokenmeter.engine.lora_requests.info",
    "{info}",
    InstrumentKind::Gauge,
    "LoRA adapters running and waiting in the labels max_lora, running_lora_adapters and waiting_lora_adapters; the value is the Unix time of their last change.",
);
/// `tokenmeter.engine.requests.waiting_by_reason`: requests waiting in the engine's queue, by
/// `reason` (`capacity`: no room in the batch or the KV cache; `deferred`: held back for
/// another cause), as vLLM's `vllm:num_requests_waiting_by_reason`.
pub const ENGINE_WAITING_BY_REASON: Instrument = Instrument::new(
    "tokenmeter.engine.requests.waiting_by_reason",
    "{request}",
    InstrumentKind::Gauge,
    "Requests waiting in the engine's queue, by reason (capacity, deferred), set by the engine.",
);
/// `tokenmeter.engine.admission_rejections`: requests the engine refused to admit, by `reason`
/// (`queue_full`: its waiting queue was at its limit; `too_large`: the request can never fit).
pub const ENGINE_ADMISSION_REJECTIONS: Instrument = counter(
    "tokenmeter.engine.admission_rejections",
    "{request}",
    "Requests the engine refused to admit, by reason (queue_full, too_large).",
);

/// `gen_ai.client.inference.duration`: end − send, for every request: the GenAI-conventions
/// v0.1.0 name of [`CLIENT_OPERATION_DURATION`] for inference (chat, completions), which
/// upstream now keeps for operations other than inference. `docs/src/reference/metrics.md` §3, Following the
/// GenAI conventions (open-telemetry/semantic-conventions-genai `docs/gen-ai/client-inference.md`).
pub const CLIENT_INFERENCE_DURATION: Instrument = h(
    "gen_ai.client.inference.duration",
    "s",
    "GenAI inference duration from send to the end of the stream, error or cancellation.",
);
/// `gen_ai.client.inference.time_to_first_chunk`: the v0.1.0 name of
/// [`CLIENT_TIME_TO_FIRST_CHUNK`], with the same samples. `docs/src/reference/metrics.md` §3.
pub const CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK: Instrument = h(
    "gen_ai.client.inference.time_to_first_chunk",
    "s",
    "Time to receive the first chunk of an inference that carries a token, from the send.",
);
/// `gen_ai.client.inference.time_per_output_chunk`: the v0.1.0 name of
/// [`CLIENT_TIME_PER_OUTPUT_CHUNK`], with the same samples. `docs/src/reference/metrics.md` §3.
pub const CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK: Instrument = h(
    "gen_ai.client.inference.time_per_output_chunk",
    "s",
    "Time between consecutive token-bearing chunks of an inference, one sample per chunk after the first.",
);
/// `gen_ai.client.inference.usage.input_tokens`: input tokens spent, a counter by
/// `gen_ai.token.modality` (the sum that [`CLIENT_TOKEN_USAGE`] gave per direction before
/// v0.1.0). `docs/src/reference/metrics.md` §3 (open-telemetry/semantic-conventions-genai
/// `docs/gen-ai/gen-ai-token-metrics.md`).
pub const CLIENT_USAGE_INPUT_TOKENS: Instrument = counter(
    "gen_ai.client.inference.usage.input_tokens",
    "{token}",
    "Input (prompt) tokens spent, cached ones included, by gen_ai.token.modality.",
);
/// `gen_ai.client.inference.usage.output_tokens`: output tokens spent, reasoning included, by
/// `gen_ai.token.modality`. `docs/src/reference/metrics.md` §3.
pub const CLIENT_USAGE_OUTPUT_TOKENS: Instrument = counter(
    "gen_ai.client.inference.usage.output_tokens",
    "{token}",
    "Output (completion) tokens spent, reasoning ones included, by gen_ai.token.modality.",
);
/// `gen_ai.client.inference.usage.cache_read.input_tokens`: the part of
/// [`CLIENT_USAGE_INPUT_TOKENS`] served from the provider's cache
/// ([`Request::set_cached_input_tokens`](crate::Request::set_cached_input_tokens)).
/// `docs/src/reference/metrics.md` §3.
pub const CLIENT_USAGE_CACHE_READ_INPUT_TOKENS: Instrument = counter(
    "gen_ai.client.inference.usage.cache_read.input_tokens",
    "{token}",
    "Input tokens served from the provider's cache, a part of the input tokens, by gen_ai.token.modality.",
);
/// `gen_ai.client.inference.usage.reasoning.output_tokens`: the part of
/// [`CLIENT_USAGE_OUTPUT_TOKENS`] recorded as reasoning
/// ([`Request::record_reasoning_tokens`](crate::Request::record_reasoning_tokens)).
/// `docs/src/reference/metrics.md` §3.
pub const CLIENT_USAGE_REASONING_OUTPUT_TOKENS: Instrument = counter(
    "gen_ai.client.inference.usage.reasoning.output_tokens",
    "{token}",
    "Output tokens spent on reasoning, a part of the output tokens, by gen_ai.token.modality.",
);
/// `gen_ai.client.inference.operation.input_tokens`: input tokens per request, a histogram for
/// percentiles (no modality). With [`CLIENT_OPERATION_OUTPUT_TOKENS`] it replaces
/// [`CLIENT_TOKEN_USAGE`] in v0.1.0. `docs/src/reference/metrics.md` §3.
pub const CLIENT_OPERATION_INPUT_TOKENS: Instrument = h(
    "gen_ai.client.inference.operation.input_tokens",
    "{token}",
    "Input (prompt) tokens per inference request.",
);
/// `gen_ai.client.inference.operation.output_tokens`: output tokens per request, 0 included
/// (a request that failed before its first token). `docs/src/reference/metrics.md` §3.
pub const CLIENT_OPERATION_OUTPUT_TOKENS: Instrument = h(
    "gen_ai.client.inference.operation.output_tokens",
    "{token}",
    "Output (completion) tokens per inference request, 0 included.",
);

/// The instruments of semantic conventions before the GenAI conventions' first release of their
/// own (v0.1.0), published for a transition next to their replacements:
/// [`CLIENT_OPERATION_DURATION`], [`CLIENT_TIME_TO_FIRST_CHUNK`], [`CLIENT_TIME_PER_OUTPUT_CHUNK`]
/// (renamed `gen_ai.client.inference.*`) and [`CLIENT_TOKEN_USAGE`] (removed upstream; replaced by
/// the `gen_ai.client.inference.usage.*` counters and the `…operation.*_tokens` histograms).
/// [`Conventions::current`](super::Conventions::current) leaves them out: the OTel sink publishes
/// them only when given the default table; the Prometheus exporter, whose default is that
/// table, publishes them.
pub const SUPERSEDED: &[Instrument] = &[
    CLIENT_OPERATION_DURATION,
    CLIENT_TIME_TO_FIRST_CHUNK,
    CLIENT_TIME_PER_OUTPUT_CHUNK,
    CLIENT_TOKEN_USAGE,
];

/// Every instrument, in the order exporters list them.
pub const ALL: &[Instrument] = &[
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
    TIME_TO_FIRST_OUTPUT_TOKEN,
    TIME_TO_SECOND_TOKEN,
    NORMALIZED_TIME_PER_OUTPUT_TOKEN,
    COMPUTED_INPUT_TOKENS,
    INPUT_TOKENS_BY_SOURCE,
    REQUEST_MAX_TOKENS,
    REQUEST_CHOICES,
    PREFIX_CACHE_QUERIES,
    PREFIX_CACHE_HITS,
    SPEC_DECODE_DRAFTS,
    SPEC_DECODE_DRAFT_TOKENS,
    SPEC_DECODE_ACCEPTED_TOKENS,
    ENGINE_CACHE_CONFIG_INFO,
    ENGINE_LORA_REQUESTS_INFO,
    ENGINE_WAITING_BY_REASON,
    ENGINE_ADMISSION_REJECTIONS,
    CLIENT_INFERENCE_DURATION,
    CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK,
    CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK,
    CLIENT_USAGE_INPUT_TOKENS,
    CLIENT_USAGE_OUTPUT_TOKENS,
    CLIENT_USAGE_CACHE_READ_INPUT_TOKENS,
    CLIENT_USAGE_REASONING_OUTPUT_TOKENS,
    CLIENT_OPERATION_INPUT_TOKENS,
    CLIENT_OPERATION_OUTPUT_TOKENS,
];

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn names_are_unique_ascii_and_namespaced() {
        let (mut seen, mut translated) = (HashSet::new(), HashSet::new());
        for instrument in ALL {
            let name = instrument.name;
            assert!(seen.insert(name), "duplicate {name}");
            assert!(name.starts_with("gen_ai.") || name.starts_with("tokenmeter."));
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'.'),
                "{name}"
            );
            assert!(!instrument.description.is_empty(), "{name}");
            assert!(translated.insert(instrument.prometheus_name()), "{name}");
        }
    }
}
