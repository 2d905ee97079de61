//! An OpenAI-compatible HTTP server over the simulated continuous-batching engine of
//! `tokenmeter-sim`, measured on the server side with tokenmeter: the library behind
//! `tokenmeter serve`, startable in-process as a realistic streaming endpoint for tests.
//!
//! # Getting started
//!
//! Start a server on any free loopback port, stream a chat completion from it, shut it down:
//!
//! ```
//! use tokenmeter_server::{Config, Server};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let _ = rustls::crypto::ring::default_provider().install_default(); // reqwest built for HTTPS
//! let server = Server::start(Config::default().keep_records(true), "127.0.0.1:0".parse()?).await?;
//! let body = serde_json::json!({
//!     "model": server.model(),
//!     "messages": [{"role": "user", "content": "Hello"}],
//!     "max_tokens": 8,
//!     "stream": true,
//! });
//! let mut response = reqwest::Client::new()
//!     .post(format!("{}/v1/chat/completions", server.url()))
//!     .header("content-type", "application/json")
//!     .body(body.to_string())
//!     .send()
//!     .await?;
//! assert_eq!(response.status(), 200);
//! let mut text = String::new();
//! while let Some(chunk) = response.chunk().await? {
//!     text.push_str(std::str::from_utf8(&chunk)?);
//! }
//! assert!(text.ends_with("data: [DONE]\n\n"));
//! let stopped = server.shutdown().await?;
//! assert_eq!(stopped.cancelled, 0);
//! # Ok(())
//! # }
//! ```
//!
//! [`Config`] configures everything `tokenmeter serve`'s flags do (the flag `--max-batch` is
//! the field and setter `max_batch`, and so on; the defaults are the flags' defaults).
//! [`Server`] is the running server: its [`local_addr`](Server::local_addr) and
//! [`url`](Server::url), the server-side [`records`](Server::records) (with
//! [`Config::keep_records`]), [`metrics_text`](Server::metrics_text), and a graceful
//! [`shutdown`](Server::shutdown); errors are an [`Error`].
//!
//! # Routes
//!
//! In the tables below, `--flag` is `tokenmeter serve`'s flag and the [`Config`] field of the
//! same name.
//!
//! | Route | What |
//! |---|---|
//! | `POST /v1/chat/completions` | chat; SSE when `"stream": true` (role frame, one chunk per token, the last with the `finish_reason` as vLLM sends it, `usage` chunk with `stream_options.include_usage`, `[DONE]`), else one JSON body with `usage`; with `--orca-format` (or a request header `endpoint-load-metrics-format: TEXT`/`JSON`, as vLLM reads it) the ORCA load report `endpoint-load-metrics` (`orca.rs`) |
//! | `POST /v1/completions` | the same for text completions; `prompt` a string, token ids, or a batch of either (`n` choices per prompt, indexed `prompt × n + choice`, `usage` summed, as vLLM answers) |
//! | `POST /v1/responses` | OpenAI's Responses API (`input`, `instructions`, `max_output_tokens`), read and metered as the chat request it amounts to; SSE when `"stream": true` as vLLM sends it (typed `event:` lines: `response.created`, `response.in_progress`, the output item and content part added, one `response.output_text.delta` per token (`response.reasoning_text.delta` for reasoning), the `done` events, `response.completed` with `usage`; `response.failed` on a failure), else the response object (`responses.rs`) |
//! | `GET /v1/models` | the served names (`--served-model-name`, default `--model`) |
//! | `GET /v1/models/{id}` | one served name's model object |
//! | `GET /metrics` | Prometheus text, `--profile semconv` (default) or `vllm`, with the KV-cache usage, every signal of the Gateway API Inference Extension's model-server protocol (queued and running requests, the KV-cache configuration, the LoRA adapters running and waiting with `--max-loras`/`--lora-modules`, waiting requests by reason, admission rejections: a request refused at `--queue-limit` is one `queue_full`) and every HTTP answer by route, method and status class |
//! | `GET /health` | `{"status":"ok"}` |
//! | `GET /slo` | the SLO monitor's report (with `--slo-spec`; requests carrying `x-slo-ttft-ms` / `x-slo-tpot-ms` are counted under the spec's header classes, judged against their own objectives) |
//! | any other path / method | 404 / 405 with OpenAI's error body |
//!
//! Every error has vLLM's body `{"error":{"message","type","param","code"}}`: `code` the status,
//! `type` vLLM's exception name (`BadRequestError`, `NotFoundError`, `InternalServerError`,
//! `ServiceUnavailableError`) or the status' phrase where vLLM's web framework answers (`Not
//! Found` for an unknown route, `Method Not Allowed`, `Request Timeout`, `Too Many Requests`),
//! `param` the field of a request refused for its body (`api_error.rs`):
//!
//! | Status | When |
//! |---|---|
//! | 400 | a malformed or repeated `x-slo-ttft-ms` / `x-slo-tpot-ms` header (`param` names it; the message gives the rule, never the value; counted as `tokenmeter_slo_requests_unclassified_total{reason="malformed"}` with `--slo-spec`); a body that is not JSON, or a field of the wrong type or out of range (`param` names it); prompt + `max_tokens` beyond `--max-model-len` (default 8,192), with vLLM's message `This model's maximum context length is …`; a non-streaming answer whose worst case is over `--max-answer-size` (default 256 MiB; `budget.rs`) |
//! | 404 | a `model` not served: ``The model `x` does not exist.`` (also `GET /v1/models/x`) |
//! | 404, 405 | an unknown path, or a method the route does not answer (with `Allow`) |
//! | 408 | a body not whole within `--body-timeout` (default 30 s) of its headers |
//! | 413 | a body over `--max-body-size` (default 2 MiB), refused from its `content-length` before it is read |
//! | 429 | the queue holds `--queue-limit` requests (default 256), with `retry-after` |
//! | 500 | an injected failure before the first token (mid-stream: an SSE `data: {"error":{...}}` then `data: [DONE]`) |
//! | 503 | no connection at `--max-connections` is idle (a quick answer with `retry-after: 1`, then the connection closes; `GET /metrics` and `GET /health` are answered as usual instead); or the bodies being received already take `--max-body-memory` (with `retry-after: 1`); or a non-streaming answer's worst case does not fit what the answers in flight leave of `--max-answer-memory` (with `retry-after: 1`) |
//!
//! A request naming a model that is not served is answered 404 (below) unless
//! `--accept-any-model`; responses report the first served name. The request options clients
//! notice behave as in vLLM: `stop` (`stop.rs`), `n` (`choices.rs`), `logprobs` (simulated,
//! `logprobs.rs`), and every sampling value is checked (`sampling.rs`).
//!
//! A client that disconnects mid-stream cancels its request (recorded as cancelled).
//!
//! # Connections
//!
//! | Limit | Default | What happens |
//! |---|---|---|
//! | `--header-timeout` | 10 s | a request line and headers not complete this long after their first byte: the connection is closed |
//! | `--keep-alive-timeout` | 5 s | a connection with no request and no byte this long: closed |
//! | `--body-timeout` | 30 s | 408 |
//! | `--max-body-size` | 2 MiB | 413 |
//! | `--max-body-memory` | 256 MiB (at most `--max-connections` bodies of `--max-body-size`, at least one) | the bytes of every body being received or held at once; a body that would take the total past it: 503 before the rest of it is read (`body.rs`) |
//! | `--max-answer-size` | 256 MiB | a non-streaming request whose answer could be larger (`n` × `max_tokens` × up to 1,719 bytes a token with `top_logprobs` 20) is a 400 before the engine; an answer is written as JSON while its tokens come and held once (`answer.rs`), a stream keeps only what it has not sent |
//! | `--max-answer-memory` | 1 GiB (four answers of the default `--max-answer-size`; at most `--max-connections` of `--max-answer-size`, at least one) | the worst cases of every non-streaming answer in flight at once: a request's is held from before the engine until its last byte is handed to hyper (or it ends otherwise); one that does not fit is a 503 with `retry-after: 1` (code `overloaded`, recorded `overloaded`, counted as `tokenmeter_http_requests_refused_total{reason="answer_budget"}`; `budget.rs`). Streams are not counted |
//! | `--max-connections` | 1024, lowered to leave an eighth (at least 32) of `RLIMIT_NOFILE` free | at the limit the longest-idle connection (one whose response ended and that waits on keep-alive; never one that has not yet sent its first request) is closed to make room; if none is idle, the new one gets a 503, or its `GET /metrics` / `GET /health` is answered (at most 64 such connections at once, past them a 503 at once; `overflow.rs`) |
//! | `--shutdown-grace` | 1 s | at Ctrl-C / SIGTERM / [`Server::shutdown`]: idle and half-sent connections close at once; in-flight responses get the grace, then are dropped and their requests recorded `cancelled`; exit 0 |
//!
//! Every answer is counted on `/metrics` (`tokenmeter_http_responses_total` or vLLM's
//! `http_requests_total`), and every connection the server closes on its own by reason
//! (`tokenmeter_http_connections_closed_total`); see `http_counts.rs`.
//!

#![forbid(unsafe_code)]

mod answer;
mod api_error;
mod body;
mod budget;
mod choices;
mod chunks;
mod config;
mod error;
mod fields;
mod http_counts;
mod limits;
mod listener;
mod logprobs;
mod metrics;
mod openai;
mod orca;
mod overflow;
mod profile;
mod request_metrics;
mod response_events;
mod responses;
mod routes;
mod sampling;
mod server;
mod setters;
mod slo;
mod socket;
mod sse;
mod stop;
#[cfg(test)]
mod tests;
pub mod tokenizer;

pub use budget::{DEFAULT_ANSWER_MEMORY, DEFAULT_MAX_ANSWER};
pub use config::{Config, DEFAULT_MAX_TOKENS, DEFAULT_SEND_BUFFER};
pub use error::Error;
pub use limits::{
    DEFAULT_BODY_MEMORY, DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS, DEFAULT_QUEUE_LIMIT, DEFAULT_SEND_TIMEOUT,
    DEFAULT_SHUTDOWN_GRACE, open_file_limit, parse_size,
};
pub use listener::Stopped;
pub use profile::MetricsProfile;
pub use server::{Server, bind, start};
pub use slo::SloState;

// The README's example runs with the doc tests, so the page crates.io shows stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
