//! Publish tokenmeter's measurements to Prometheus: a [`Sink`](tokenmeter::sink::Sink) that
//! writes through the `metrics` facade with real histogram buckets, in OpenTelemetry GenAI or
//! vLLM names.
//!
//! # Getting started
//!
//! ```
//! use tokenmeter::{Labels, Meter};
//! use tokenmeter_prometheus::{Builder, Profile};
//!
//! // 1. A sink and a handle, on a recorder of their own (no global state).
//! let (sink, handle) = Builder::new(Profile::Semconv).build_recorder()?;
//!
//! // 2. Meter requests as usual.
//! let meter = Meter::builder().sink(sink).build();
//! let series = meter.series(&Labels::server("chat").provider("vllm").request_model("llama-3-8b"));
//! let mut request = series.start();
//! request.record_tokens(1);
//! request.record_tokens(1);
//! request.succeed();
//!
//! // 3. Serve this text on /metrics (with `tokenmeter_prometheus::CONTENT_TYPE`).
//! let text = handle.render();
//! assert!(text.contains("# TYPE gen_ai_server_time_to_first_token_seconds histogram"));
//! assert!(text.contains(r#"tokenmeter_requests_total{gen_ai_operation_name="chat",gen_ai_provider_name="vllm",gen_ai_request_model="llama-3-8b",role="server",outcome="success"} 1"#));
//! # Ok::<(), tokenmeter_prometheus::Error>(())
//! ```
//!
//! Or let the exporter serve it: [`Builder::install`] installs the global recorder and an HTTP
//! listener on `127.0.0.1:9464` ([`DEFAULT_LISTEN`]; change it with [`Builder::listen`]). The
//! listener is safe to expose: a request's headers must arrive within
//! [`DEFAULT_HEADER_TIMEOUT`], a connection with no request is closed after
//! [`DEFAULT_IDLE_TIMEOUT`], a client that reads nothing after [`DEFAULT_SEND_TIMEOUT`], and at
//! most [`DEFAULT_MAX_CONNECTIONS`] are open at once (each set on the [`Builder`]);
//! [`Handle::listener_stats`] counts what it closed and refused.
//!
//! # The ways to build it
//!
//! One [`Builder`], finished in one of four ways: as many as `metrics-exporter-prometheus`'s
//! `PrometheusBuilder`, which it wraps, and named after them.
//!
//! | Call | `PrometheusBuilder`'s | Recorder | `/metrics` | Upkeep |
//! |---|---|---|---|---|
//! | [`Builder::build_recorder`] | `build_recorder` | its own, no global state | you serve [`Handle::render`] (axum, …) | a background thread |
//! | [`Builder::install_recorder`] | `install_recorder` | global: your `metrics::*!` macros land there too | you serve [`Handle::render`] | a background thread |
//! | [`Builder::install`] | `install` | global | an HTTP listener of its own, with timeouts and a connection cap | a background thread |
//! | [`Builder::build_for`] | `build` (you run what it returns) | any `metrics` recorder you give, for example one built from [`Builder::prometheus_builder`] | the recorder's business | the recorder's business |
//!
//! The names of earlier releases are deprecated and go in 0.3.0: `local(profile)` and
//! `Builder::build_recorder` are [`Builder::build_recorder`];
//! `PrometheusSink::with_recorder(profile, r)` is `Builder::new(profile).build_for(r)`;
//! `PrometheusSink::global(profile)` is [`Builder::install_recorder`], or
//! [`Builder::build_for`] with a clone of the `Arc` you installed.
//!
//! The upkeep folds recorded samples into buckets every interval
//! ([`Builder::upkeep_interval`], default 5 s), so memory stays bounded when nobody scrapes.
//!
//! # Buckets and SLO thresholds
//!
//! Every histogram gets the explicit buckets of `docs/src/reference/metrics.md` §4 (never a summary, which
//! cannot be aggregated across replicas). Replace a layout with [`Builder::set_buckets`] or add
//! edges with [`Builder::add_edges`], per [`Metric`]. Add every SLO threshold as an edge: then
//! `rate(x_bucket{le="<threshold>"}[w]) / rate(x_count[w])` is the exact fraction of requests
//! at or under it (buckets count `value <= le`).
//!
//! ```
//! use tokenmeter_prometheus::{Builder, Metric, Profile};
//!
//! let builder = Builder::new(Profile::Vllm)
//!     .add_edges(Metric::Ttft, &[0.35])? // "TTFT p95 <= 350 ms"
//!     .add_edges(Metric::Tpot, &[0.03])?; // "TPOT p95 <= 30 ms"
//! let edges = Profile::Vllm.edges(builder.bucket_settings(), "vllm:time_to_first_token_seconds");
//! assert!(edges.unwrap().contains(&0.35));
//! # Ok::<(), tokenmeter_prometheus::Error>(())
//! ```
//!
//! # Metrics of the `semconv` profile (the default)
//!
//! `B` is the series' semconv labels, each only when known: `gen_ai_operation_name`,
//! `gen_ai_provider_name`, `gen_ai_request_model`, `gen_ai_response_model`, `server_address`,
//! `server_port`. `error_type` is one of `timeout`, `rate_limited`, `overloaded`,
//! `server_error`, `client_error`, `transport`, `_OTHER`: the duration of a request that ended in
//! an error is recorded in the histogram with its `error_type`, any other in the one without.
//! `role` is `server` or `client`. Buckets: *TTFT* = 0.001, 0.005, 0.01, 0.02, 0.04, 0.06,
//! 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10; *TPOT* = 0.01, 0.025, 0.05, 0.075, 0.1, 0.15,
//! 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5; *doubling* = 0.01, 0.02, 0.04, … 81.92; *×4* = 1, 4, 16,
//! … 67108864; *step* = 0.001, 0.002, 0.004, … doubling … 8.192 (engine steps take milliseconds
//! to seconds); *batch* = 1, 2, 4, … 1024. `kind` is the engine step's `prefill`, `decode` or
//! `mixed`.
//!
//! The series' tenant attributes ([`Labels::tenant`](tokenmeter::Labels::tenant): `tenant_id`,
//! `user_id` or a key of your own with dots as underscores) follow `B` on every request-level
//! metric, in both profiles (vLLM has no such labels; they are opt-in, so the `vllm` profile
//! carries them when asked); never on engine metrics nor on the `_OTHER` series.
//!
//! | Name | Type | Unit | Labels | Buckets | Produced by |
//! |---|---|---|---|---|---|
//! | `gen_ai_server_time_to_first_token_seconds` | histogram | s | B | TTFT | server series: the first token-bearing item |
//! | `gen_ai_server_time_per_output_token_seconds` | histogram | s | B | TPOT | server: request end, with ≥ 2 output tokens |
//! | `gen_ai_server_request_duration_seconds` | histogram | s | B, `error_type` | doubling | server: every request end (success, error, cancelled, degraded) |
//! | `gen_ai_client_operation_duration_seconds` | histogram | s | B, `error_type` | doubling | client series: every request end |
//! | `gen_ai_client_operation_time_to_first_chunk_seconds` | histogram | s | B | doubling | client: the first token-bearing chunk |
//! | `gen_ai_client_operation_time_per_output_chunk_seconds` | histogram | s | B | doubling | client: each later token-bearing chunk (one sample per chunk) |
//! | `gen_ai_client_token_usage` | histogram | `{token}` | B, `gen_ai_token_type` | ×4 | client: request end; `input` when known, `output` when > 0 |
//! | `tokenmeter_inter_token_latency_seconds` | histogram | s | B, `role` | TPOT | server: each later token-bearing item (ITL) |
//! | `tokenmeter_time_per_output_token_seconds` | histogram | s | B, `role` | TPOT | client: request end, with ≥ 2 output tokens |
//! | `tokenmeter_request_queue_time_seconds` | histogram | s | B, `role` | doubling | server: request end, if marked `scheduled` |
//! | `tokenmeter_request_prefill_time_seconds` | histogram | s | B, `role` | doubling | server: request end, if scheduled and a token came |
//! | `tokenmeter_request_decode_time_seconds` | histogram | s | B, `role` | doubling | both: request end, if a token came |
//! | `tokenmeter_request_inference_time_seconds` | histogram | s | B, `role` | doubling | server: request end, if scheduled and a token came |
//! | `tokenmeter_requests_total` | counter | `{request}` | B, `role`, `outcome`, `error_type` | — | every request end, cancelled ones included |
//! | `tokenmeter_input_tokens_total` | counter | `{token}` | B, `role` | — | request end, when the input count is known |
//! | `tokenmeter_output_tokens_total` | counter | `{token}` | B, `role` | — | request end |
//! | `tokenmeter_requests_waiting` | gauge | `{request}` | B, `role` | — | +1 at start; −1 when scheduled, at the first token, or at the end |
//! | `tokenmeter_requests_running` | gauge | `{request}` | B, `role` | — | +1 when scheduled or at the first token; −1 at the end |
//! | `tokenmeter_series_folded_total` | counter | `{series}` | `role` | — | a label set past the meter's series cap, folded into `_OTHER` |
//! | `tokenmeter_kv_cache_usage_ratio` | gauge | 1 | B without the operation | — | [`EngineRecorder::set_kv_cache_usage`](tokenmeter::sink::EngineRecorder::set_kv_cache_usage) (0–1) |
//! | `tokenmeter_preemptions_total` | counter | `{preemption}` | B without the operation | — | [`EngineRecorder::add_preemptions`](tokenmeter::sink::EngineRecorder::add_preemptions) |
//! | `tokenmeter_engine_step_duration_seconds` | histogram | s | B without the operation, `kind` | step | each engine step ([engine steps](#engine-steps)) |
//! | `tokenmeter_engine_batch_size` | histogram | `{sequence}` | B without the operation, `kind` | batch | each engine step: sequences in the batch |
//! | `tokenmeter_engine_step_tokens_total` | counter | `{token}` | B without the operation, `kind` | — | each engine step: its tokens (prompt tokens of a prefill, one per sequence of a decode) |
//! | `tokenmeter_request_time_to_first_output_token_seconds` | histogram | s | B, `role` | doubling | both: request end: the first answer token after any reasoning ([`Request::record_reasoning_tokens`](tokenmeter::Request::record_reasoning_tokens)) |
//! | `tokenmeter_request_time_to_second_token_seconds` | histogram | s | B, `role` | doubling | both: request end, with ≥ 2 output tokens |
//! | `tokenmeter_request_normalized_time_per_output_token_seconds` | histogram | s | B, `role` | TPOT | both: request end: E2E ÷ output tokens |
//! | `tokenmeter_request_computed_input_tokens` | histogram | `{token}` | B, `role` | ×4 | server: request end: input − cached − external, when the input is known |
//! | `tokenmeter_input_tokens_by_source_total` | counter | `{token}` | B, `role`, `source` | — | request end: `local_compute` (input − reused), `local_cache_hit` ([`Request::set_cached_input_tokens`](tokenmeter::Request::set_cached_input_tokens)), `external_kv_transfer` |
//! | `tokenmeter_request_max_tokens` | histogram | `{token}` | B, `role` | ×4 | request end, when [`Request::set_max_tokens`](tokenmeter::Request::set_max_tokens) was called |
//! | `tokenmeter_request_choices` | histogram | `{choice}` | B, `role` | 1, 2, 5, 10, 20 | request end, when [`Request::set_choices`](tokenmeter::Request::set_choices) was called |
//! | `tokenmeter_prefix_cache_queries_total` | counter | `{token}` | B without the operation | — | [`EngineRecorder::add_prefix_cache`](tokenmeter::sink::EngineRecorder::add_prefix_cache): prompt tokens looked up |
//! | `tokenmeter_prefix_cache_hits_total` | counter | `{token}` | B without the operation | — | [`EngineRecorder::add_prefix_cache`](tokenmeter::sink::EngineRecorder::add_prefix_cache): prompt tokens found |
//! | `tokenmeter_spec_decode_drafts_total` | counter | `{draft}` | B without the operation | — | [`EngineRecorder::add_speculation`](tokenmeter::sink::EngineRecorder::add_speculation) |
//! | `tokenmeter_spec_decode_draft_tokens_total` | counter | `{token}` | B without the operation | — | [`EngineRecorder::add_speculation`](tokenmeter::sink::EngineRecorder::add_speculation) |
//! | `tokenmeter_spec_decode_accepted_tokens_total` | counter | `{token}` | B without the operation | — | [`EngineRecorder::add_speculation`](tokenmeter::sink::EngineRecorder::add_speculation) (≤ draft tokens) |
//! | `tokenmeter_engine_cache_config_info` | gauge | `{info}` | B without the operation, `block_size`, `num_gpu_blocks` | — | [`EngineRecorder::set_cache_config`](tokenmeter::sink::EngineRecorder::set_cache_config), once; always 1 |
//! | `tokenmeter_engine_lora_requests_info` | gauge | `{info}` | B without the operation, `max_lora`, `running_lora_adapters`, `waiting_lora_adapters` | — | [`EngineRecorder::set_lora_adapters`](tokenmeter::sink::EngineRecorder::set_lora_adapters) on a change: the Unix time of the change; the previous label set drops to 0 (bounded: [`MAX_LORA_COMBINATIONS`](tokenmeter::sink::MAX_LORA_COMBINATIONS)) |
//! | `tokenmeter_engine_requests_waiting_by_reason` | gauge | `{request}` | B without the operation, `reason` | — | [`EngineRecorder::set_waiting_by_reason`](tokenmeter::sink::EngineRecorder::set_waiting_by_reason): `capacity`, `deferred` |
//! | `tokenmeter_engine_admission_rejections_total` | counter | `{request}` | B without the operation, `reason` | — | [`EngineRecorder::add_admission_rejections`](tokenmeter::sink::EngineRecorder::add_admission_rejections): `queue_full`, `too_large` |
//! | `gen_ai_client_inference_duration_seconds` | histogram | s | B, `error_type` | doubling | as `gen_ai_client_operation_duration_seconds` (its GenAI-conventions v0.1.0 name) |
//! | `gen_ai_client_inference_time_to_first_chunk_seconds` | histogram | s | B | doubling | as `gen_ai_client_operation_time_to_first_chunk_seconds` |
//! | `gen_ai_client_inference_time_per_output_chunk_seconds` | histogram | s | B | doubling | as `gen_ai_client_operation_time_per_output_chunk_seconds` |
//! | `gen_ai_client_inference_usage_input_tokens_total` | counter | `{token}` | B, `gen_ai_token_modality` | — | client: request end, when the input count is known; `text` |
//! | `gen_ai_client_inference_usage_output_tokens_total` | counter | `{token}` | B, `gen_ai_token_modality` | — | client: request end, reasoning tokens included |
//! | `gen_ai_client_inference_usage_cache_read_input_tokens_total` | counter | `{token}` | B, `gen_ai_token_modality` | — | client: request end, when [`Request::set_cached_input_tokens`](tokenmeter::Request::set_cached_input_tokens) was called |
//! | `gen_ai_client_inference_usage_reasoning_output_tokens_total` | counter | `{token}` | B, `gen_ai_token_modality` | — | client: request end: the tokens of [`Request::record_reasoning_tokens`](tokenmeter::Request::record_reasoning_tokens) |
//! | `gen_ai_client_inference_operation_input_tokens` | histogram | `{token}` | B, `error_type` | ×4 | client: request end, when the input count is known |
//! | `gen_ai_client_inference_operation_output_tokens` | histogram | `{token}` | B, `error_type` | ×4 | client: every request end, 0 included |
//!
//! The `gen_ai_client_inference_*` metrics follow the GenAI semantic conventions v0.1.0
//! (open-telemetry/semantic-conventions-genai), which renamed the `gen_ai_client_operation_*`
//! histograms for inference and replaced `gen_ai_client_token_usage` (and its
//! `gen_ai_token_type`) with the usage counters and the per-request histograms. The older four
//! are still published, with the same samples, for existing dashboards;
//! [`Conventions::current`](tokenmeter::conventions::Conventions::current) given to
//! [`Builder::conventions`] leaves them out.
//!
//! These are the OTel→Prometheus translations of the OpenTelemetry instruments in [`names`], so
//! the OTLP path (crate `tokenmeter-otel`) lands on the same series. Each is a row of the
//! conventions table ([`tokenmeter::conventions::ROWS`]), which says what feeds it (the event
//! and the field), which roles record it and its labels; the sink loops over the rows. A table
//! with rows of your own ([`Builder::conventions`]) is published the same way, in both profiles
//! and by the OpenTelemetry exporter, without changing either exporter. The vLLM profile below
//! is the same rows renamed ([`Row::renamed`](tokenmeter::conventions::Row::renamed)) to vLLM's
//! instruments ([`names::vllm`]), plus vLLM's `request_success_total`, `iteration_tokens_total`
//! and `request_max_num_generation_tokens`. [`names::exposition_name`] is the name of every
//! metric in the exposition, and [`InstrumentKind::prometheus_type`] its type.
//!
//! [`InstrumentKind::prometheus_type`]: tokenmeter::conventions::InstrumentKind::prometheus_type
//!
//! # Metrics of the `vllm` profile
//!
//! Every metric carries `model_name` (the response model, or else the request model) and
//! `engine="0"` (vLLM's V1 engine-core index; one engine per exporter here). Buckets:
//! *TTFT* = 0.001 … 10, 20, 40, 80, 160, 640, 2560; *ITL* = 0.01 … 2.5, 5, 7.5, 10, 20, 40, 80;
//! *request* = 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480,
//! 960, 1920, 7680; *1-2-5* = 1, 2, 5, 10, … up to the context length
//! ([`Buckets::context_length`], default 131072); *iteration* = 1, 8, 16, 32, … doubling …
//! 16384 (vLLM's fixed `iteration_tokens_total` buckets in `vllm/v1/metrics/loggers.py`; older
//! vLLM releases used the model's CUDA-graph capture sizes); *step* and *batch* as in the
//! semconv profile.
//!
//! | Name | Type | Unit | Labels | Buckets | Produced by |
//! |---|---|---|---|---|---|
//! | `vllm:time_to_first_token_seconds` | histogram | s | `model_name` | TTFT | the first token-bearing item |
//! | `vllm:inter_token_latency_seconds` | histogram | s | `model_name` | ITL | each later token-bearing item |
//! | `vllm:request_time_per_output_token_seconds` | histogram | s | `model_name` | ITL | request end, with ≥ 2 output tokens |
//! | `vllm:e2e_request_latency_seconds` | histogram | s | `model_name` | request | every request end, aborted ones included |
//! | `vllm:request_queue_time_seconds` | histogram | s | `model_name` | request | request end, if marked `scheduled` |
//! | `vllm:request_prefill_time_seconds` | histogram | s | `model_name` | request | request end, if scheduled and a token came |
//! | `vllm:request_decode_time_seconds` | histogram | s | `model_name` | request | request end, if a token came |
//! | `vllm:request_inference_time_seconds` | histogram | s | `model_name` | request | request end, if scheduled and a token came |
//! | `vllm:request_prompt_tokens` | histogram | tokens | `model_name` | 1-2-5 | request end, when the input count is known |
//! | `vllm:request_generation_tokens` | histogram | tokens | `model_name` | 1-2-5 | request end, when > 0 |
//! | `vllm:prompt_tokens_total` | counter | tokens | `model_name` | — | request end, when the input count is known |
//! | `vllm:generation_tokens_total` | counter | tokens | `model_name` | — | request end |
//! | `vllm:request_success_total` | counter | requests | `model_name`, `finished_reason` | — | every request end: `stop` (also tool calls, content filter, none given), `length`, `abort` (cancelled), `error` (an error, or finish reason `error`), `repetition` (finish reason `repetition`) |
//! | `vllm:num_requests_running` | gauge | requests | `model_name` | — | as `tokenmeter_requests_running` |
//! | `vllm:num_requests_waiting` | gauge | requests | `model_name` | — | as `tokenmeter_requests_waiting` |
//! | `vllm:kv_cache_usage_perc` | gauge | 0–1 | `model_name` | — | [`EngineRecorder::set_kv_cache_usage`](tokenmeter::sink::EngineRecorder::set_kv_cache_usage) |
//! | `vllm:num_preemptions_total` | counter | preemptions | `model_name` | — | [`EngineRecorder::add_preemptions`](tokenmeter::sink::EngineRecorder::add_preemptions) |
//! | `tokenmeter_requests_total` | counter | requests | `model_name`, `outcome`, `error_type` | — | every request end (error classes vLLM does not have) |
//! | `tokenmeter_series_folded_total` | counter | series | `role` | — | a label set folded into `_OTHER` |
//! | `vllm:iteration_tokens_total` | histogram | tokens | `model_name` | iteration | each engine step: its tokens, prompt and generated (a histogram despite `_total`, as in vLLM) |
//! | `tokenmeter_engine_step_duration_seconds` | histogram | s | `model_name`, `kind` | step | each engine step |
//! | `tokenmeter_engine_batch_size` | histogram | sequences | `model_name`, `kind` | batch | each engine step: sequences in the batch |
//! | `tokenmeter_engine_step_tokens_total` | counter | tokens | `model_name`, `kind` | — | each engine step: its tokens |
//! | `vllm:prefix_cache_queries_total` | counter | tokens | `model_name` | — | as `tokenmeter_prefix_cache_queries_total` |
//! | `vllm:prefix_cache_hits_total` | counter | tokens | `model_name` | — | as `tokenmeter_prefix_cache_hits_total` |
//! | `vllm:prompt_tokens_by_source_total` | counter | tokens | `model_name`, `source` | — | as `tokenmeter_input_tokens_by_source_total` |
//! | `vllm:request_prefill_kv_computed_tokens` | histogram | tokens | `model_name` | 1-2-5 | as `tokenmeter_request_computed_input_tokens` (both roles) |
//! | `vllm:request_params_max_tokens` | histogram | tokens | `model_name` | 1-2-5 | as `tokenmeter_request_max_tokens` |
//! | `vllm:request_params_n` | histogram | choices | `model_name` | 1, 2, 5, 10, 20 | as `tokenmeter_request_choices` |
//! | `vllm:request_max_num_generation_tokens` | histogram | tokens | `model_name` | 1-2-5 | request end, when > 0: the output tokens (with `n` > 1, all choices together) |
//! | `vllm:spec_decode_num_drafts_total` | counter | drafts | `model_name` | — | as `tokenmeter_spec_decode_drafts_total` |
//! | `vllm:spec_decode_num_draft_tokens_total` | counter | tokens | `model_name` | — | as `tokenmeter_spec_decode_draft_tokens_total` |
//! | `vllm:spec_decode_num_accepted_tokens_total` | counter | tokens | `model_name` | — | as `tokenmeter_spec_decode_accepted_tokens_total` |
//! | `vllm:cache_config_info` | gauge | info | `engine`, `block_size`, `num_gpu_blocks` (vLLM's set: no `model_name`) | — | as `tokenmeter_engine_cache_config_info` |
//! | `vllm:lora_requests_info` | gauge | info | `max_lora`, `running_lora_adapters`, `waiting_lora_adapters` only (vLLM's set) | — | as `tokenmeter_engine_lora_requests_info` |
//! | `vllm:num_requests_waiting_by_reason` | gauge | requests | `model_name`, `reason` | — | as `tokenmeter_engine_requests_waiting_by_reason` |
//! | `tokenmeter_engine_admission_rejections_total` | counter | requests | `model_name`, `reason` | — | vLLM publishes no name we could confirm for it: tokenmeter's |
//! | `tokenmeter_request_time_to_first_output_token_seconds` | histogram | s | `model_name` | doubling | as in the semconv profile (vLLM has no such metric) |
//! | `tokenmeter_request_time_to_second_token_seconds` | histogram | s | `model_name` | doubling | as in the semconv profile |
//! | `tokenmeter_request_normalized_time_per_output_token_seconds` | histogram | s | `model_name` | TPOT | as in the semconv profile |
//!
//! The `vllm-legacy` profile ([`Profile::VllmLegacy`]) publishes all of the above and, for
//! dashboards written before vLLM 0.11, the old names of what vLLM has since renamed, with the
//! same samples:
//!
//! | Name | Type | Unit | Labels | Buckets | Produced by |
//! |---|---|---|---|---|---|
//! | `vllm:time_per_output_token_seconds` | histogram | s | `model_name` | ITL | as `vllm:inter_token_latency_seconds` |
//! | `vllm:gpu_cache_usage_perc` | gauge | 0–1 | `model_name` | — | as `vllm:kv_cache_usage_perc` |
//! | `vllm:gpu_prefix_cache_queries_total` | counter | tokens | `model_name` | — | as `vllm:prefix_cache_queries_total` |
//! | `vllm:gpu_prefix_cache_hits_total` | counter | tokens | `model_name` | — | as `vllm:prefix_cache_hits_total` |
//!
//! # Engine steps
//!
//! A batching engine reports each step (scheduler iteration) through
//! [`Meter::engine`](tokenmeter::Meter::engine): this sink registers the step handles once per
//! engine, so recording a step indexes arrays and updates handles it already holds. Together
//! the step metrics show the batch-size trade-off: a bigger decode batch makes each step, and
//! so each user's next token, slower, and the engine's throughput higher.
//!
//! ```
//! use std::time::Duration;
//! use tokenmeter::sink::{Step, StepKind};
//! use tokenmeter::{Labels, Meter};
//! use tokenmeter_prometheus::{Builder, Profile};
//!
//! let (sink, handle) = Builder::new(Profile::Semconv).build_recorder()?;
//! let meter = Meter::builder().sink(sink).build();
//! // Once per engine; then once per step: a decode of 8 sequences (8 tokens) in 8 ms.
//! let steps = meter.engine(&Labels::server("").provider("vllm").request_model("llama-3-8b"));
//! steps.record(&Step::new(StepKind::Decode, 8, 8, Duration::from_millis(8)));
//!
//! let text = handle.render();
//! let labels = r#"gen_ai_provider_name="vllm",gen_ai_request_model="llama-3-8b",kind="decode""#;
//! let line = |name: &str, le: &str, n: u32| format!(r#"{name}_bucket{{{labels},le="{le}"}} {n}"#);
//! assert!(text.contains(&line("tokenmeter_engine_step_duration_seconds", "0.008", 1)));
//! assert!(text.contains(&line("tokenmeter_engine_batch_size", "4", 0)));
//! assert!(text.contains(&format!("tokenmeter_engine_step_tokens_total{{{labels}}} 8")));
//! # Ok::<(), tokenmeter_prometheus::Error>(())
//! ```
//!
//! Queries (per engine; add the model labels to `by`):
//!
//! | Question | PromQL |
//! |---|---|
//! | output tokens/s per engine (per GPU with one engine per GPU; divide by the tensor-parallel size otherwise) | `rate(tokenmeter_engine_step_tokens_total{kind="decode"}[5m])` |
//! | mean decode batch | `rate(tokenmeter_engine_batch_size_sum{kind="decode"}[5m]) / rate(tokenmeter_engine_batch_size_count{kind="decode"}[5m])` |
//! | p95 decode step time (≈ TPOT of every sequence in the batch) | `histogram_quantile(0.95, rate(tokenmeter_engine_step_duration_seconds_bucket{kind="decode"}[5m]))` |
//! | fraction of time the engine is stepping | `rate(tokenmeter_engine_step_duration_seconds_sum[5m])` summed over `kind` |
//!
//! Add a TPOT objective as a step-duration edge ([`Metric::StepDuration`]) to read the fraction
//! of decode steps that met it exactly.
//!
//! # Behaviour and caveats
//!
//! - **Nothing is lost.** Every request that starts ends exactly once (the core guarantees it),
//!   and its end is recorded in the duration histogram and the outcome counters whatever the
//!   outcome: `_count` of the duration histogram equals the requests run, cancelled included.
//! - **TTFT is recorded when the first token arrives**, so it also counts requests that later
//!   fail or are cancelled (the user saw that token). Semconv describes TTFT and TPOT "for
//!   successful responses"; filter by `tokenmeter_requests_total` if you need that.
//! - **Series are registered up front.** Each series registers all its handles once, when
//!   the meter resolves it, including one duration histogram per `error_type` and one
//!   `tokenmeter_requests_total` per outcome, all at zero: a series that appears with its first
//!   error would lose that error in `rate()` and `increase()`. Budget the exposition size with
//!   the meter's series cap.
//! - **Label values** come from the core's bounded, sanitised [`Labels`](tokenmeter::Labels);
//!   empty values are left out.
//! - **`promtool check metrics`** passes on the semconv exposition. vLLM's names contain `:`,
//!   which promtool's lint reports ("metric names should not contain ':'"), as it does for
//!   vLLM's own `/metrics`; it also reports the `_total` suffix of the histogram
//!   `vllm:iteration_tokens_total`, vLLM's name. Those are the only problems it reports.
//! - **Engine-step metrics** carry the engine's labels, not a series': provider and models
//!   (semconv, no operation, no `role`) or `model_name` (vLLM). Engines that share labels share
//!   the metrics.
//! - **Descriptions** (`# HELP`) are given to the recorder when the sink is created, so a recorder
//!   given to [`Builder::build_for`] gets them at once.
//!
//! # Cost
//!
//! Per token-bearing item after the first: one histogram record on a pre-registered handle.
//! The core hands a request's items over in batches ([`tokenmeter::sink::Items`]), and the sink
//! records each batch under one crossbeam epoch pin, which the exporter's sample storage would
//! otherwise take, with a full fence, on every record.
//!
//! The `prometheus` criterion benchmark (`cargo bench -p tokenmeter-benches --bench prometheus`)
//! compares a metered request with this sink against the naive `Instant::now()` +
//! `metrics::histogram!(…, "model" => model.to_string()).record(…)` per token, both recording
//! into the same `metrics-exporter-prometheus` recorder (goal: at most 0.2 of its cost). The
//! latest figures, with the commit that recorded them, are in the repository's
//! `benches/README.md`.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod buckets;
mod error;
mod exporter;
mod handle;
mod layout;
mod listener;
pub mod names;
mod profile;
mod rows;
mod sink;
mod vllm_rows;

pub use buckets::{Buckets, DEFAULT_CONTEXT_LENGTH, Metric};
pub use error::Error;
pub use exporter::{Builder, DEFAULT_LISTEN, DEFAULT_UPKEEP_INTERVAL};
pub use handle::{CONTENT_TYPE, Handle};
pub use listener::limits::{
    DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_SEND_TIMEOUT,
};
pub use listener::stats::ListenerStats;
pub use profile::Profile;
pub use sink::PrometheusSink;

/// A sink and a handle for `profile` on a recorder of their own, with the default buckets.
#[deprecated(
    since = "0.2.0",
    note = "use `Builder::new(profile).build_recorder()`; removed in 0.3.0"
)]
pub fn local(profile: Profile) -> Result<(PrometheusSink, Handle), Error> {
    Builder::new(profile).build_recorder()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crate_docs_list_every_metric_of_both_profiles_with_its_type() {
        let docs = include_str!("lib.rs");
        for profile in [Profile::Semconv, Profile::Vllm, Profile::VllmLegacy] {
            for metric in profile.metrics() {
                let name = names::exposition_name(metric);
                let cells = format!("| `{name}` | {} |", metric.kind.prometheus_type());
                assert!(
                    docs.contains(&cells),
                    "{profile}: {name} is not in the table"
                );
            }
        }
    }
}

// The README's example runs with the doc tests, so the page crates.io shows stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
