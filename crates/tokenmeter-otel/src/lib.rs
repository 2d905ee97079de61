//! OpenTelemetry exporter for tokenmeter: the GenAI semantic-convention metrics of every metered
//! stream, recorded into `opentelemetry` instruments and exported over OTLP (gRPC or
//! HTTP/protobuf) to any collector.
//!
//! # Getting started
//!
//! ```no_run
//! use std::time::Duration;
//! use tokenmeter::{Labels, Meter};
//! use tokenmeter_otel::{OtlpConfig, Protocol};
//!
//! # fn main() -> Result<(), tokenmeter_otel::OtlpError> {
//! // 1. The pipeline: endpoint, headers, interval from code or OTEL_EXPORTER_OTLP_* variables.
//! let otlp = OtlpConfig::new()
//!     .protocol(Protocol::Grpc)
//!     .endpoint("http://127.0.0.1:4317")
//!     .service_name("chat-gateway")
//!     .interval(Duration::from_secs(10))
//!     .install()?;
//!
//! // 2. Its sink on a tokenmeter Meter, then meter as usual.
//! let meter = Meter::builder().sink(otlp.sink()).build();
//! let series = meter.series(&Labels::client("chat").provider("openai").request_model("gpt-4o"));
//! let mut request = series.start();
//! request.record_tokens(1);
//! request.succeed();
//!
//! // 3. Before exiting: send what is left, waiting at most 5 s.
//! otlp.shutdown(Duration::from_secs(5))?;
//! # Ok(())
//! # }
//! ```
//!
//! Already have a meter provider? Give its meter to [`OtelSink::new`] (and add [`views`] to
//! the provider for the cardinality limit or exponential histograms).
//!
//! # What is exported
//!
//! | Instrument | Unit | Server role | Client role |
//! |---|---|---|---|
//! | `gen_ai.server.time_to_first_token` | s | at the first token | |
//! | `gen_ai.client.inference.time_to_first_chunk` | s | | at the first token |
//! | `tokenmeter.inter_token_latency` | s | per item after the first | |
//! | `gen_ai.client.inference.time_per_output_chunk` | s | | per item after the first |
//! | `gen_ai.server.time_per_output_token` | s | per request | |
//! | `tokenmeter.time_per_output_token` | s | | per request |
//! | `gen_ai.server.request.duration` / `gen_ai.client.inference.duration` | s | every request; `error.type` on errors | same |
//! | `gen_ai.client.inference.usage.{input,output}_tokens` | {token} | | counters, by `gen_ai.token.modality` |
//! | `gen_ai.client.inference.operation.{input,output}_tokens` | {token} | | per request; `error.type` on errors |
//! | `tokenmeter.request.{queue,prefill,inference}_time` | s | when scheduled | |
//! | `tokenmeter.request.decode_time` | s | per request | per request |
//! | `tokenmeter.requests` | {request} | by `outcome` (+ `error.type`) | same |
//! | `tokenmeter.{input,output}_tokens` | {token} | counters | counters |
//! | `tokenmeter.requests.{waiting,running}` | {request} | up-down counters | same |
//! | `tokenmeter.series.folded` | {series} | by `role` | same |
//! | `tokenmeter.kv_cache.usage`, `tokenmeter.preemptions` | 1, {preemption} | [`EngineRecorder::set_kv_cache_usage`](tokenmeter::sink::EngineRecorder::set_kv_cache_usage), [`EngineRecorder::add_preemptions`](tokenmeter::sink::EngineRecorder::add_preemptions) | |
//! | `tokenmeter.engine.step.duration` | s | per engine step, by `kind` ([engine steps](#engine-steps)) | |
//! | `tokenmeter.engine.batch_size` | {sequence} | per engine step, by `kind` | |
//! | `tokenmeter.engine.step.tokens` | {token} | counter: tokens per engine step, by `kind` | |
//!
//! The client instruments are those of the GenAI conventions v0.1.0. The instruments they
//! replaced ([`names::SUPERSEDED`]: `gen_ai.client.operation.duration`,
//! `…time_to_first_chunk`, `…time_per_output_chunk` and `gen_ai.client.token.usage` by
//! `gen_ai.token.type`) are published only when asked for, with the whole built-in table:
//! `OtelSink::builder().conventions(Conventions::default())` (given to
//! [`OtlpConfig::sink`] on the OTLP path). They then carry the same samples as their
//! successors, at the cost of a second histogram record per token-bearing item.
//!
//! The request-level instruments also carry the series' tenant attributes when it has any
//! ([`Labels::tenant`](tokenmeter::Labels::tenant): `tenant.id`, `user.id` or a key of your
//! own); the engine instruments and the `_OTHER` series never do.
//!
//! The instruments are the rows of [`tokenmeter::conventions`] (a table of your own with
//! [`OtelSinkBuilder::conventions`]): each row says which event feeds it, which field it reads,
//! which roles record it and which attributes it carries.
//!
//! Attributes: `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`,
//! `gen_ai.response.model`, `server.address`, `server.port` (empty values left out), plus `role`
//! on every `tokenmeter.*` instrument. These are the metrics of the Prometheus exporter's
//! `semconv` profile: a Prometheus backend shows the same series names on both paths
//! ([`names::Instrument::prometheus_name`]).
//!
//! The engine instruments (`tokenmeter.kv_cache.usage`, `tokenmeter.preemptions`,
//! `tokenmeter.engine.*`) carry the engine's attributes: the list above without
//! `gen_ai.operation.name` and `role`, plus `kind` (`prefill`, `decode` or `mixed`) on the step
//! instruments.
//!
//! Buckets follow the semconv advice (`docs/src/reference/metrics.md` §4); [`Buckets::add_edges`]
//! adds SLO thresholds as edges, and [`HistogramAggregation::exponential`] switches to base-2
//! exponential histograms.
//!
//! # Engine steps
//!
//! A batching engine reports each step (scheduler iteration) through
//! [`Meter::engine`](tokenmeter::Meter::engine), with its KV-cache usage and preemptions; the
//! sink prepares the engine attribute sets once per engine. Step time against batch size is the batch-size trade-off (a bigger decode batch
//! makes every user's next token slower and the engine's throughput higher), and the rate of
//! `tokenmeter.engine.step.tokens` with `kind` = `decode` is the engine's output tokens per
//! second (per GPU with one engine per GPU). Step durations use 0.001 s doubling to 8.192 s
//! ([`STEP_DURATION_EDGES`]); batch sizes 1, 2, 4, … 1024 ([`BATCH_SIZE_EDGES`]).
//!
//! ```
//! use std::time::Duration;
//! use opentelemetry::metrics::MeterProvider as _;
//! use opentelemetry_sdk::metrics::SdkMeterProvider;
//! use tokenmeter::sink::{Step, StepKind};
//! use tokenmeter::{Labels, Meter};
//! use tokenmeter_otel::OtelSink;
//!
//! let provider = SdkMeterProvider::builder().build();
//! let meter = Meter::builder().sink(OtelSink::new(&provider.meter("tokenmeter"))).build();
//! // Once per engine; then once per step: a decode of 8 sequences (8 tokens) in 8 ms.
//! let steps = meter.engine(&Labels::server("").provider("vllm").request_model("llama-3-8b"));
//! steps.record(&Step::new(StepKind::Decode, 8, 8, Duration::from_millis(8)));
//! ```
//!
//! # Cost
//!
//! Per token-bearing item after the first: one histogram record with an attribute slice prepared
//! when the series was resolved — no allocation. The core hands a request's items over in
//! batches ([`tokenmeter::sink::Items`]), one sink call per batch. The SDK still hashes that
//! slice to find the data point on every record (most of the cost: the SDK's own record on a
//! pre-built slice is more than half of what the naive way costs); with the
//! `bound-instruments` feature and `OtelSinkBuilder::bound_instruments(true)` the lookup is
//! done once per series instead. The `otel` benchmark (`cargo bench -p tokenmeter-benches
//! --bench otel`) compares both paths against the naive way (four `KeyValue`s built per token)
//! and prints the SDK's own record beside them. Goal: at most 0.33 of naive's cost; on the
//! default path, where the SDK's record alone is above that, what tokenmeter adds to that
//! record is at most 0.33 of naive. The latest figures, with the commit that recorded them,
//! are in the repository's `benches/README.md`.
//!
//! # Failure behaviour
//!
//! Recording never touches the network. The [`OtlpPipeline`] exports from its own thread;
//! an export that fails or exceeds the timeout is logged through `tracing` (target
//! `tokenmeter_otel`) and counted in [`ExportStats`], and the next export sends the cumulative
//! totals. Memory is bounded by the number of series, whatever the collector does.
//!
//! # Features
//!
//! - `grpc` (default): OTLP/gRPC through tonic.
//! - `http` (default): OTLP/HTTP with protobuf bodies through reqwest (plain HTTP; no TLS).
//! - `bound-instruments`: record the per-token histogram through the SDK's (experimental)
//!   bound instruments.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod attrs;
mod instruments;
pub mod names;
#[cfg(any(feature = "grpc", feature = "http"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "grpc", feature = "http"))))]
mod otlp;
mod series;
mod sink;
mod steps;
mod view;

#[cfg(any(feature = "grpc", feature = "http"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "grpc", feature = "http"))))]
pub use otlp::{DEFAULT_SHUTDOWN_WAIT, ExportStats, OtlpConfig, OtlpError, OtlpPipeline, Protocol};
pub use sink::{OtelSink, OtelSinkBuilder};
pub use view::{DEFAULT_CARDINALITY_LIMIT, HistogramAggregation, views};

// Bucket layouts: the semconv advice of `tokenmeter::conventions`, per-metric replacement and
// extra edges (SLO thresholds), shared with the Prometheus exporter.
pub use tokenmeter::conventions::{
    BATCH_SIZE_EDGES, BucketError, Buckets, DURATION_EDGES, Metric, STEP_DURATION_EDGES,
    TOKEN_EDGES, TPOT_EDGES, TTFT_EDGES,
};

// The README's example runs with the doc tests, so the page crates.io shows stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
