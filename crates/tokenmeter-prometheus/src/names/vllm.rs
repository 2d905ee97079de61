//! The vLLM-compatible profile: vLLM's metric names with the label `model_name`, so an
//! existing vLLM Grafana dashboard works unchanged.
//!
//! Each constant is an [`Instrument`] named as vLLM names the metric (its name is the
//! Prometheus name, published as it is: [`exposition_name`](super::exposition_name)), with
//! the unit and kind of the instrument it renames and vLLM's help text as description. The
//! profile publishes the rows of the conventions table renamed to these instruments
//! ([`Row::renamed`](tokenmeter::conventions::Row::renamed)).
//!
//! Source: vllm-project/vllm `vllm/v1/metrics/loggers.py` and `vllm/v1/metrics/buckets.py`.
//! These names contain `:`, which Prometheus reserves for recording rules; `promtool check
//! metrics` reports that as a lint for vLLM's own `/metrics` too.
//!
//! # Examples
//!
//! ```
//! use tokenmeter::conventions::InstrumentKind;
//! use tokenmeter_prometheus::names::{exposition_name, vllm};
//!
//! let waiting = vllm::NUM_REQUESTS_WAITING;
//! assert_eq!(exposition_name(&waiting), "vllm:num_requests_waiting");
//! assert_eq!(waiting.kind.prometheus_type(), "gauge");
//! assert_eq!(vllm::ITERATION_TOKENS.kind, InstrumentKind::Histogram);
//! ```

use tokenmeter::conventions::{Instrument, InstrumentKind};

/// `vllm:time_to_first_token_seconds`.
pub const TIME_TO_FIRST_TOKEN: Instrument = Instrument::new(
    "vllm:time_to_first_token_seconds",
    "s",
    InstrumentKind::Histogram,
    "Histogram of time to first token in seconds.",
);
/// `vllm:inter_token_latency_seconds`: one sample per token-bearing item after the first.
pub const INTER_TOKEN_LATENCY: Instrument = Instrument::new(
    "vllm:inter_token_latency_seconds",
    "s",
    InstrumentKind::Histogram,
    "Histogram of inter-token latency in seconds.",
);
/// `vllm:request_time_per_output_token_seconds`: TPOT per request.
pub const TIME_PER_OUTPUT_TOKEN: Instrument = Instrument::new(
    "vllm:request_time_per_output_token_seconds",
    "s",
    InstrumentKind::Histogram,
    "Histogram of time per output token in seconds.",
);
/// `vllm:e2e_request_latency_seconds`.
pub const E2E_REQUEST_LATENCY: Instrument = Instrument::new(
    "vllm:e2e_request_latency_seconds",
    "s",
    InstrumentKind::Histogram,
    "Histogram of e2e request latency in seconds.",
);
/// `vllm:request_queue_time_seconds`.
pub const QUEUE_TIME: Instrument = Instrument::new(
    "vllm:request_queue_time_seconds",
    "s",
    InstrumentKind::Histogram,
    "Histogram of time spent in WAITING phase for request.",
);
/// `vllm:request_prefill_time_seconds`.
pub const PREFILL_TIME: Instrument = Instrument::new(
    "vllm:request_prefill_time_seconds",
    "s",
    InstrumentKind::Histogram,
    "Histogram of time spent in PREFILL phase for request.",
);
/// `vllm:request_decode_time_seconds`.
pub const DECODE_TIME: Instrument = Instrument::new(
    "vllm:request_decode_time_seconds",
    "s",
    InstrumentKind::Histogram,
    "Histogram of time spent in DECODE phase for request.",
);
/// `vllm:request_inference_time_seconds`.
pub const INFERENCE_TIME: Instrument = Instrument::new(
    "vllm:request_inference_time_seconds",
    "s",
    InstrumentKind::Histogram,
    "Histogram of time spent in RUNNING phase for request.",
);
/// `vllm:request_prompt_tokens`: input tokens per request.
pub const REQUEST_PROMPT_TOKENS: Instrument = Instrument::new(
    "vllm:request_prompt_tokens",
    "{token}",
    InstrumentKind::Histogram,
    "Number of prefill tokens processed.",
);
/// `vllm:request_generation_tokens`: output tokens per request.
pub const REQUEST_GENERATION_TOKENS: Instrument = Instrument::new(
    "vllm:request_generation_tokens",
    "{token}",
    InstrumentKind::Histogram,
    "Number of generation tokens processed.",
);
/// `vllm:prompt_tokens_total`.
pub const PROMPT_TOKENS: Instrument = Instrument::new(
    "vllm:prompt_tokens_total",
    "{token}",
    InstrumentKind::Counter,
    "Number of prefill tokens processed.",
);
/// `vllm:generation_tokens_total`.
pub const GENERATION_TOKENS: Instrument = Instrument::new(
    "vllm:generation_tokens_total",
    "{token}",
    InstrumentKind::Counter,
    "Number of generation tokens processed.",
);
/// `vllm:request_success_total{finished_reason}`: `stop`, `length`, `abort` (cancelled),
/// `error` or `repetition`.
pub const REQUEST_SUCCESS: Instrument = Instrument::new(
    "vllm:request_success_total",
    "{request}",
    InstrumentKind::Counter,
    "Count of finished requests by finished_reason (stop, length, abort, error, repetition).",
);
/// `vllm:num_requests_running`: a gauge that moves by deltas, as
/// [`REQUESTS_RUNNING`](tokenmeter::conventions::names::REQUESTS_RUNNING) does.
pub const NUM_REQUESTS_RUNNING: Instrument = Instrument::new(
    "vllm:num_requests_running",
    "{request}",
    InstrumentKind::UpDownCounter,
    "Number of requests in model execution batches.",
);
/// `vllm:num_requests_waiting`: a gauge that moves by deltas, as
/// [`REQUESTS_WAITING`](tokenmeter::conventions::names::REQUESTS_WAITING) does.
pub const NUM_REQUESTS_WAITING: Instrument = Instrument::new(
    "vllm:num_requests_waiting",
    "{request}",
    InstrumentKind::UpDownCounter,
    "Number of requests waiting to be processed.",
);
/// `vllm:kv_cache_usage_perc`: a fraction from 0 to 1, despite the name.
pub const KV_CACHE_USAGE: Instrument = Instrument::new(
    "vllm:kv_cache_usage_perc",
    "1",
    InstrumentKind::Gauge,
    "KV-cache usage. 1 means 100 percent usage.",
);
/// `vllm:num_preemptions_total`.
pub const NUM_PREEMPTIONS: Instrument = Instrument::new(
    "vllm:num_preemptions_total",
    "{preemption}",
    InstrumentKind::Counter,
    "Cumulative number of preemption from the engine.",
);

/// `vllm:cache_config_info`: an info gauge, always 1, labelled by the KV-cache configuration
/// (`block_size`, `num_gpu_blocks`), which the Gateway API Inference Extension reads.
pub const CACHE_CONFIG_INFO: Instrument = Instrument::new(
    "vllm:cache_config_info",
    "{info}",
    InstrumentKind::Gauge,
    "Information of the LLMEngine CacheConfig",
);
/// `vllm:lora_requests_info`: an info gauge labelled `max_lora`, `running_lora_adapters` and
/// `waiting_lora_adapters` (comma-separated), whose value is the Unix time of the last change.
pub const LORA_REQUESTS_INFO: Instrument = Instrument::new(
    "vllm:lora_requests_info",
    "{info}",
    InstrumentKind::Gauge,
    "Running stats on lora requests.",
);
/// `vllm:num_requests_waiting_by_reason`: requests waiting, by `reason` (`capacity`,
/// `deferred`).
pub const NUM_REQUESTS_WAITING_BY_REASON: Instrument = Instrument::new(
    "vllm:num_requests_waiting_by_reason",
    "{request}",
    InstrumentKind::Gauge,
    "Number of requests waiting to be processed, by reason.",
);

/// `vllm:iteration_tokens_total`: tokens per engine step (prompt plus generated), one sample per
/// step. A histogram despite its `_total` suffix, as in vLLM (`promtool` reports the suffix, as it
/// does for vLLM's own `/metrics`).
pub const ITERATION_TOKENS: Instrument = Instrument::new(
    "vllm:iteration_tokens_total",
    "{token}",
    InstrumentKind::Histogram,
    "Histogram of number of tokens per engine_step.",
);

/// `vllm:prefix_cache_queries_total`: prompt tokens looked up in the prefix cache.
pub const PREFIX_CACHE_QUERIES: Instrument = Instrument::new(
    "vllm:prefix_cache_queries_total",
    "{token}",
    InstrumentKind::Counter,
    "Prefix cache queries, in terms of number of queried tokens.",
);
/// `vllm:prefix_cache_hits_total`: prompt tokens found in the prefix cache.
pub const PREFIX_CACHE_HITS: Instrument = Instrument::new(
    "vllm:prefix_cache_hits_total",
    "{token}",
    InstrumentKind::Counter,
    "Prefix cache hits, in terms of number of cached tokens.",
);
/// `vllm:prompt_tokens_by_source_total{source}`: `local_compute`, `local_cache_hit`,
/// `external_kv_transfer`.
pub const PROMPT_TOKENS_BY_SOURCE: Instrument = Instrument::new(
    "vllm:prompt_tokens_by_source_total",
    "{token}",
    InstrumentKind::Counter,
    "Number of prompt tokens by source.",
);
/// `vllm:request_prefill_kv_computed_tokens`: prompt tokens a request computed (not cached).
pub const REQUEST_PREFILL_KV_COMPUTED_TOKENS: Instrument = Instrument::new(
    "vllm:request_prefill_kv_computed_tokens",
    "{token}",
    InstrumentKind::Histogram,
    "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
);
/// `vllm:request_params_max_tokens`: the `max_tokens` parameter.
pub const REQUEST_PARAMS_MAX_TOKENS: Instrument = Instrument::new(
    "vllm:request_params_max_tokens",
    "{token}",
    InstrumentKind::Histogram,
    "Histogram of the max_tokens request parameter.",
);
/// `vllm:request_params_n`: the `n` parameter.
pub const REQUEST_PARAMS_N: Instrument = Instrument::new(
    "vllm:request_params_n",
    "{choice}",
    InstrumentKind::Histogram,
    "Histogram of the n request parameter.",
);
/// `vllm:request_max_num_generation_tokens`: the output tokens of a request (tokenmeter counts
/// a request's choices together, so with `n` > 1 this is their sum, not the longest one).
pub const REQUEST_MAX_NUM_GENERATION_TOKENS: Instrument = Instrument::new(
    "vllm:request_max_num_generation_tokens",
    "{token}",
    InstrumentKind::Histogram,
    "Histogram of maximum number of requested generation tokens.",
);
/// `vllm:spec_decode_num_drafts_total`.
pub const SPEC_DECODE_NUM_DRAFTS: Instrument = Instrument::new(
    "vllm:spec_decode_num_drafts_total",
    "{draft}",
    InstrumentKind::Counter,
    "Number of spec decoding drafts.",
);
/// `vllm:spec_decode_num_draft_tokens_total`.
pub const SPEC_DECODE_NUM_DRAFT_TOKENS: Instrument = Instrument::new(
    "vllm:spec_decode_num_draft_tokens_total",
    "{token}",
    InstrumentKind::Counter,
    "Number of draft tokens.",
);
/// `vllm:spec_decode_num_accepted_tokens_total`.
pub const SPEC_DECODE_NUM_ACCEPTED_TOKENS: Instrument = Instrument::new(
    "vllm:spec_decode_num_accepted_tokens_total",
    "{token}",
    InstrumentKind::Counter,
    "Number of accepted tokens.",
);

/// The names vLLM used before 0.11 for metrics it has since renamed, published beside the new
/// ones by [`Profile::VllmLegacy`](crate::Profile::VllmLegacy) for dashboards written then.
pub mod legacy {
    use tokenmeter::conventions::{Instrument, InstrumentKind};

    /// `vllm:time_per_output_token_seconds`: now
    /// [`INTER_TOKEN_LATENCY`](super::INTER_TOKEN_LATENCY).
    pub const TIME_PER_OUTPUT_TOKEN: Instrument = Instrument::new(
        "vllm:time_per_output_token_seconds",
        "s",
        InstrumentKind::Histogram,
        "Histogram of time per output token in seconds (deprecated: inter_token_latency_seconds).",
    );
    /// `vllm:gpu_cache_usage_perc`: now [`KV_CACHE_USAGE`](super::KV_CACHE_USAGE).
    pub const GPU_CACHE_USAGE: Instrument = Instrument::new(
        "vllm:gpu_cache_usage_perc",
        "1",
        InstrumentKind::Gauge,
        "GPU KV-cache usage. 1 means 100 percent usage (deprecated: kv_cache_usage_perc).",
    );
    /// `vllm:gpu_prefix_cache_queries_total`: now
    /// [`PREFIX_CACHE_QUERIES`](super::PREFIX_CACHE_QUERIES).
    pub const GPU_PREFIX_CACHE_QUERIES: Instrument = Instrument::new(
        "vllm:gpu_prefix_cache_queries_total",
        "{token}",
        InstrumentKind::Counter,
        "GPU prefix cache queries, in terms of number of queried tokens (deprecated: prefix_cache_queries).",
    );
    /// `vllm:gpu_prefix_cache_hits_total`: now [`PREFIX_CACHE_HITS`](super::PREFIX_CACHE_HITS).
    pub const GPU_PREFIX_CACHE_HITS: Instrument = Instrument::new(
        "vllm:gpu_prefix_cache_hits_total",
        "{token}",
        InstrumentKind::Counter,
        "GPU prefix cache hits, in terms of number of cached tokens (deprecated: prefix_cache_hits).",
    );

    /// Each old name and the current name it aliases.
    pub const ALIASES: &[(Instrument, Instrument)] = &[
        (TIME_PER_OUTPUT_TOKEN, super::INTER_TOKEN_LATENCY),
        (GPU_CACHE_USAGE, super::KV_CACHE_USAGE),
        (GPU_PREFIX_CACHE_QUERIES, super::PREFIX_CACHE_QUERIES),
        (GPU_PREFIX_CACHE_HITS, super::PREFIX_CACHE_HITS),
    ];

    /// Every old name, in the order of [`ALIASES`].
    pub const ALL: &[Instrument] = &[
        TIME_PER_OUTPUT_TOKEN,
        GPU_CACHE_USAGE,
        GPU_PREFIX_CACHE_QUERIES,
        GPU_PREFIX_CACHE_HITS,
    ];
}

/// Every vLLM metric this crate publishes. The vLLM profile also publishes
/// [`semconv::REQUESTS`](super::semconv::REQUESTS),
/// [`semconv::SERIES_FOLDED`](super::semconv::SERIES_FOLDED) and the engine-step metrics
/// ([`semconv::ENGINE_STEP_DURATION`](super::semconv::ENGINE_STEP_DURATION),
/// [`semconv::ENGINE_BATCH_SIZE`](super::semconv::ENGINE_BATCH_SIZE),
/// [`semconv::ENGINE_STEP_TOKENS`](super::semconv::ENGINE_STEP_TOKENS)), which vLLM has no
/// name for, with the label `model_name`.
pub const ALL: &[Instrument] = &[
    TIME_TO_FIRST_TOKEN,
    INTER_TOKEN_LATENCY,
    TIME_PER_OUTPUT_TOKEN,
    E2E_REQUEST_LATENCY,
    QUEUE_TIME,
    PREFILL_TIME,
    DECODE_TIME,
    INFERENCE_TIME,
    REQUEST_PROMPT_TOKENS,
    REQUEST_GENERATION_TOKENS,
    PROMPT_TOKENS,
    GENERATION_TOKENS,
    REQUEST_SUCCESS,
    NUM_REQUESTS_RUNNING,
    NUM_REQUESTS_WAITING,
    KV_CACHE_USAGE,
    NUM_PREEMPTIONS,
    ITERATION_TOKENS,
    PREFIX_CACHE_QUERIES,
    PREFIX_CACHE_HITS,
    PROMPT_TOKENS_BY_SOURCE,
    REQUEST_PREFILL_KV_COMPUTED_TOKENS,
    REQUEST_PARAMS_MAX_TOKENS,
    REQUEST_PARAMS_N,
    REQUEST_MAX_NUM_GENERATION_TOKENS,
    SPEC_DECODE_NUM_DRAFTS,
    SPEC_DECODE_NUM_DRAFT_TOKENS,
    SPEC_DECODE_NUM_ACCEPTED_TOKENS,
    CACHE_CONFIG_INFO,
    LORA_REQUESTS_INFO,
    NUM_REQUESTS_WAITING_BY_REASON,
];
