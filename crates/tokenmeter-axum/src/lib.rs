//! Meter an axum (or any tower) HTTP service that streams an OpenAI-compatible answer, with one
//! layer and no change to the handler: TTFT, inter-token latency, TPOT, token counts and the
//! outcome of every request, from the response body as it streams.
//!
//! # Getting started
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::convert::Infallible;
//!
//! use axum::{Router, body::Body, response::sse::{Event, Sse}, routing::post};
//! use futures_util::stream::{self, Stream, StreamExt};
//! use http_body_util::BodyExt;
//! use tokenmeter::{FinishReason, Labels, Meter, Outcome, sink::InMemorySink};
//! use tokenmeter_axum::{MeterLayer, header_value};
//! use tower::ServiceExt;
//!
//! // The handler streams OpenAI chunks with axum's `Sse`: nothing in it knows about metering.
//! async fn chat() -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
//!     let chunks = [
//!         r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
//!         r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
//!         r#"{"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
//!         r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
//!         "[DONE]",
//!     ];
//!     Sse::new(stream::iter(chunks).map(|data| Ok(Event::default().data(data))))
//! }
//!
//! // 1. A meter (an exporter's sink in production; exact values here).
//! let memory = InMemorySink::new();
//! let meter = Meter::builder().sink(memory.clone()).build();
//!
//! // 2. The layer: the series' labels come from the request (here the model from a header).
//! let layer = MeterLayer::labels(meter, |parts| {
//!     Labels::server("chat").provider("my-engine").request_model(header_value(parts, "x-model"))
//! });
//! let app = Router::new().route("/v1/chat/completions", post(chat)).route_layer(layer);
//!
//! // 3. Requests as usual (here without a socket).
//! let request = http::Request::post("/v1/chat/completions").header("x-model", "llama").body(Body::empty())?;
//! let response = app.oneshot(request).await?;
//! let streamed = response.into_body().collect().await?.to_bytes(); // unchanged bytes
//! assert!(streamed.ends_with(b"data: [DONE]\n\n"));
//!
//! // 4. The record: the role frame is not the first token; `usage` gives the counts.
//! let record = &memory.records()[0];
//! assert_eq!(record.outcome, Outcome::Success);
//! assert_eq!((record.items, record.output_tokens, record.input_tokens), (2, 2, Some(5)));
//! assert_eq!(record.finish_reason, Some(FinishReason::Stop));
//! assert_eq!(record.series.labels().request_model_name(), "llama");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # What is measured
//!
//! A request starts when the layer's service is called (the arrival) and is measured on the
//! series the layer chooses from the request's parts ([`MeterLayer::labels`],
//! [`MeterLayer::new`], [`ChooseSeries`]). The response body ([`MeteredBody`]) passes every
//! frame through unchanged and reads it on the way:
//!
//! | Response | Read as |
//! |---|---|
//! | status ≥ 400 | ends at once: error of the status' class (`rate_limited`, `overloaded`, `timeout`, `server_error`, `client_error`) |
//! | the answer to a HEAD request, or a 1xx, 204 or 304 (no body goes on the wire) | ends at once: success |
//! | `text/event-stream` | each SSE data event through [`tokenmeter_openai::chunk::parse`]: a token-bearing delta (content, reasoning, tool call) is one item, the time it passes is its token time; the role frame and empty deltas are frames without a token; `finish_reason` and `usage` (output and input tokens) are kept; an error object or `event: error` ends the request with its class; `[DONE]` ends it with success. A Responses API stream (`/v1/responses`: typed `event:` lines, no `[DONE]`) is read the same way: its text, reasoning and function-call argument deltas are the items, `response.completed`/`response.incomplete` end it with success and its `usage`, `response.failed` and `error` events with their class |
//! | `application/json` | kept (up to [`MeterLayer::buffer_limit`]) and its `usage` and finish reason read at the end; an error object makes it an error |
//! | anything else | success at the end |
//!
//! Every request ends exactly once, on every path:
//!
//! | Path | Outcome |
//! |---|---|
//! | `[DONE]`, a Responses stream's `response.completed` or `response.incomplete`, or the end of the body (also before any of these: the server ended it cleanly) | success (unless an error was seen) |
//! | an error from the inner body | `transport` error |
//! | the body dropped before its end (the client went away) | cancelled |
//! | the inner service returned an error | `server_error` |
//! | the response future dropped before the response | cancelled |
//! | a panic in the inner service or body | `_OTHER` error, [`RequestRecord::panicked`](tokenmeter::RequestRecord::panicked) |
//!
//! Events split across frames and several events in one frame are both handled; an event read
//! whole from one frame is not copied. Several events in one frame are several items, each at
//! the time the frame passes.
//!
//! # Tenants
//!
//! [`MeterLayer::tenants`] labels each request's series also by an allow-list of request
//! headers, and optionally the JSON body's `user` ([`TenantLabels`]): `tenant.id`, `user.id` or
//! keys of your own. Only the listed headers are read; headers that carry credentials
//! (`authorization`, `x-api-key`, `cookie`, ...) are refused when the list is built. Values are
//! cut and cleaned like every label and never rejected, and each distinct set is one series
//! under the meter's cap: past it, requests fold into `_OTHER` and
//! `tokenmeter.series.folded` counts them, so a million tenants cost the cap's series and no
//! more. The labels are resolved once per request; the per-token path is the same.
//!
//! ```
//! use axum::{Router, middleware, routing::post};
//! use tokenmeter::{Labels, Meter};
//! use tokenmeter_axum::{MeterLayer, TenantLabels, model_from_body, request_model};
//!
//! let tenants = TenantLabels::new().header("x-tenant-id", "tenant.id")?.body_user()?;
//! let meter = Meter::builder().max_series(1_000).build();
//! let app: Router = Router::new()
//!     .route("/v1/chat/completions", post(|| async { "ok" }))
//!     .layer(MeterLayer::labels(meter, |parts| {
//!         Labels::server("chat").request_model(request_model(parts))
//!     }).tenants(tenants))
//!     .layer(middleware::from_fn(model_from_body)); // reads `model` and `user`
//! # Ok::<(), tokenmeter_axum::TenantError>(())
//! ```
//!
//! # SLO classes from request headers
//!
//! [`MeterLayer::slo_headers`] (opt-in) reads each request's own objectives from the
//! `x-slo-ttft-ms` and `x-slo-tpot-ms` headers (whole milliseconds, the names llm-d's endpoint
//! picker reads; no other header) onto its record ([`slo_targets`]). An SLO monitor
//! (`tokenmeter-slo`) added to the meter folds them into the header classes its spec declares
//! and judges the request against them; a malformed or repeated header is recorded as
//! malformed and counted apart (`reason="malformed"`), never refused by the layer and never a
//! label of its value.
//!
//! # For load balancers and clients
//!
//! [`MeterLayer::orca`] adds an ORCA load report (the `endpoint-load-metrics` header Envoy and
//! gateways read; [`tokenmeter::orca`]) to successful answers, with the KV-cache usage and the
//! waiting and running requests your engine reports through a [`LoadSource`].
//! [`MeterLayer::per_request_metrics`] adds vLLM's per-request `metrics` object to each
//! stream's final usage chunk, from the layer's own measurement (the writer of
//! [`ServerMetrics::of`](tokenmeter_openai::chunk::ServerMetrics::of)). Both are off unless
//! asked for; neither touches the per-token path.
//!
//! # Cost
//!
//! Per token: parsing its SSE event (the allocations of [`tokenmeter_openai::chunk::parse`] and
//! nothing more; buffers for split events keep their capacity) and one call to
//! [`tokenmeter::Request::tokens`] (a clock read and the sinks' pre-built handles). No lock
//! and no lookup per token; [`MeterLayer::labels`] resolves the series once per request.
//!
//! # Caveats
//!
//! - The model in an OpenAI request is in its JSON body, which the layer does not read: add the
//!   [`model_from_body`] middleware and label with [`request_model`], or take the labels from the
//!   path, a header or an extension set by an earlier layer.
//! - An SSE data event that is not a completion chunk counts as a frame without a token, and an
//!   event longer than the buffer limit is passed through unread.
//! - The server decides when a dropped connection drops the body: hyper notices it on its next
//!   write (the next token) or read.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod body;
mod choose;
mod future;
mod layer;
mod model;
mod openai;
mod orca;
mod request_metrics;
mod service;
mod slo_headers;
mod sse;
mod unwind;

#[cfg(test)]
mod tests;

pub use body::MeteredBody;
pub use choose::{ByLabels, ChooseSeries, LabelsFn, header_value};
pub use future::ResponseFuture;
pub use layer::{DEFAULT_BUFFER_LIMIT, MeterLayer};
pub use model::{
    MODEL_BODY_LIMIT, RequestModel, RequestUser, model_from_body, model_from_body_limited,
    request_model, request_user,
};
pub use orca::LoadSource;
pub use service::MeterService;
pub use slo_headers::slo_targets;
pub use tokenmeter_openai::{TenantError, TenantLabels};

// The README's example runs with the doc tests, so the page crates.io shows stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
