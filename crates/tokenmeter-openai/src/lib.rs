//! OpenAI-compatible streaming for tokenmeter: turn a streaming chat or text completion into a
//! metered stream of parsed chunks, measured the way `vllm bench serve` measures it.
//!
//! # Getting started
//!
//! With the `reqwest` feature, one line after the send:
//!
//! ```no_run
//! # #[cfg(feature = "reqwest")]
//! # async fn chat(http: reqwest::Client, series: tokenmeter::Series, body: String) -> Result<(), Box<dyn std::error::Error>> {
//! use futures_util::StreamExt;
//!
//! let request = series.start(); // TTFT and E2E count from here
//! let response = http.post("http://127.0.0.1:8000/v1/chat/completions").body(body).send().await?;
//! let mut chunks = tokenmeter_openai::meter_response(response, request);
//! while let Some(chunk) = chunks.next().await {
//!     print!("{}", chunk?.text());
//! }
//! # Ok(()) }
//! ```
//!
//! Without it, from any stream of byte chunks (another HTTP client, a file, a test):
//!
//! ```
//! # futures_executor::block_on(async {
//! use futures_util::{StreamExt, stream};
//! use tokenmeter::{Labels, Meter, Outcome, sink::InMemorySink};
//! use tokenmeter_openai::SseChunks;
//!
//! let memory = InMemorySink::new();
//! let meter = Meter::builder().sink(memory.clone()).build();
//! let request = meter.series(&Labels::client("chat")).start();
//! let clock = request.series().clock().clone();
//!
//! let body = stream::iter([
//!     Ok::<_, std::io::Error>(&b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"[..]),
//!     Ok(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hel"),
//!     Ok(b"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"),
//! ]);
//! let chunks: Vec<_> = SseChunks::new(body, clock).meter(request).collect().await;
//!
//! assert_eq!(chunks.len(), 3); // role frame, "Hello", [DONE]
//! let record = &memory.records()[0];
//! assert_eq!((record.outcome, record.output_tokens), (Outcome::Success, 1));
//! # });
//! ```
//!
//! # What is measured
//!
//! - TTFT from the send to the first chunk with a content, reasoning or tool-call delta; the
//!   role-only frame, keep-alives, usage chunks and `[DONE]` carry no token.
//! - ITL: one gap per token-bearing chunk; output tokens from the final `usage` when the server
//!   sends it (`"stream_options": {"include_usage": true}`), else one per token-bearing delta;
//!   input tokens from `usage.prompt_tokens`, cached ones from
//!   `usage.prompt_tokens_details.cached_tokens`.
//! - Time to first *output* token: the first chunk with content or a tool call, after the
//!   chunks that carried only reasoning (`reasoning_content` or `reasoning`).
//! - The finish reason, and one outcome: success; an error classified from the HTTP status and
//!   the body's error object (429 `rate_limited`, 503 `overloaded`, 5xx `server_error`, 4xx
//!   `client_error`, 408/504 `timeout`), from the transport, or from the stream (an error
//!   object or `error` event, malformed JSON or SSE, a truncated body); or `cancelled` when the
//!   stream is dropped before its end.
//!
//! # The pieces
//!
//! - [`chunk::parse`]: one data event → token-bearing deltas, finish reason, usage, id.
//! - [`SseChunks`]: a body (any `Stream<Item = Result<impl AsRef<[u8]>, E>>`, `E` a
//!   [`TransportError`]) → timestamped [`Chunk`]s and at most one [`StreamError`].
//! - [`MeteredChunks`] ([`SseChunks::meter`]): the same, measured by a tokenmeter `Request`.
//! - [`EventClock`]: what stamps the chunks; the meter's `Clock` by default.
//! - Feature `reqwest`: `meter_response`, `meter_response_with`, `send`, and `send_labelled`
//!   (the series' labels completed from the outgoing request: see [`TenantLabels`]).
//! - [`TenantLabels`]: the allow-list of request headers (and the body's `user`, opt-in) that
//!   label a request's series by tenant, shared with the server layer `tokenmeter-axum`;
//!   [`request_body::fields`] reads a request body's `model` and `user`.
//! - Feature `async-openai`: the module `async_openai` (`send`, `meter_chat_stream`,
//!   `meter_completion_stream`, `meter_response_stream`) for programs that call the API
//!   through async-openai.
//!
//! # Features
//!
//! - `reqwest` (off by default): the `reqwest` helper. It adds `reqwest` with its `stream`
//!   feature and no TLS; turn on a TLS feature of `reqwest` yourself for `https://`.
//! - `async-openai` (off by default): the async-openai helper, the same measures over
//!   async-openai's chat, completion and Responses API streams, with its errors classified. It
//!   adds `async-openai` 0.43 with its `chat-completion`, `completions` and `responses`
//!   features and no TLS; turn on its `rustls` or `native-tls` feature yourself for
//!   `https://`.
//!
//! With async-openai, one line around the call:
//!
//! ```no_run
//! # #[cfg(feature = "async-openai")]
//! # async fn chat(
//! #     client: &async_openai::Client<async_openai::config::OpenAIConfig>,
//! #     series: tokenmeter::Series,
//! #     ask: async_openai::types::chat::CreateChatCompletionRequest,
//! # ) -> Result<(), async_openai::error::OpenAIError> {
//! use futures_util::StreamExt;
//!
//! // `send` awaits the call: the request starts before it.
//! let mut chunks =
//!     tokenmeter_openai::async_openai::send(client.chat().create_stream(ask), series.start()).await?;
//! while let Some(chunk) = chunks.next().await {
//!     for choice in chunk?.choices {
//!         print!("{}", choice.delta.content.unwrap_or_default());
//!     }
//! }
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "async-openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "async-openai")))]
pub mod async_openai;
mod bom;
pub mod chunk;
#[cfg(feature = "reqwest")]
mod client;
mod clock;
mod decode;
mod error;
mod item;
#[cfg(feature = "reqwest")]
mod labelled;
mod meter;
pub mod request_body;
mod skipped;
mod sse;
mod tenant;

#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub use client::{MeteredResponse, ResponseBody, meter_response, meter_response_with, send};
pub use clock::EventClock;
pub use error::{StatusError, StreamError, TransportError, describe_error};
pub use item::Chunk;
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub use labelled::send_labelled;
pub use meter::{ChunkObserver, MeteredChunks};
pub use skipped::Skipped;
pub use sse::{DEFAULT_MAX_EVENT_SIZE, ERROR_BODY_LIMIT, SseChunks};
pub use tenant::{TenantError, TenantLabels};

#[cfg(test)]
mod tests;

// The README's example runs with the doc tests, so the page crates.io shows stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
