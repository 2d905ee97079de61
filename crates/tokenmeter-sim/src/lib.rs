//! A simulated continuous-batching LLM engine that produces real token streams, in real time or
//! in tokio's paused time, measured on the server side with tokenmeter.
//!
//! # Getting started
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use futures_util::StreamExt;
//! use tokenmeter::{Clock, Meter, sink::InMemorySink};
//! use tokenmeter_sim::{Engine, GenerateRequest, SimConfig};
//!
//! // 1. A meter (tokio's clock, so paused time works) and an engine measured with it.
//! let memory = InMemorySink::new();
//! let meter = Meter::builder().clock(Clock::tokio()).sink(memory.clone()).build();
//! let engine = Engine::builder()
//!     .meter(meter)
//!     .model("sim-llama-3-8b")
//!     .config(SimConfig::default().max_batch(8).seed(42))
//!     .build()?;
//!
//! // 2. Submit requests; each returns a stream of tokens arriving at simulated times.
//! let streams: Vec<_> = (0..4)
//!     .map(|_| engine.submit(GenerateRequest::chat(200, 16)))
//!     .collect::<Result<_, _>>()?;
//! for tokens in streams {
//!     let text: Vec<_> = tokens.collect().await;
//!     assert_eq!(text.len(), 16);
//! }
//!
//! // 3. The server-side measurements: 4 requests in one batch of 4.
//! let report = memory.report();
//! assert_eq!(report.outcomes.success, 4);
//! println!("{report}");
//! # Ok(())
//! # }
//! ```
//!
//! # The model
//!
//! The engine runs in steps, like vLLM's scheduler. Each step admits waiting requests (first
//! come, first served) while the batch has a free slot ([`SimConfig::max_batch`]) and the KV
//! cache can hold the request's prompt and whole output ([`SimConfig::kv_capacity_tokens`]),
//! prefills them (the time grows with their prompt tokens), and runs one decode step for the
//! running batch, whose time grows with the batch: by default 1 → 7 ms, 8 → 8 ms, 32 → 12 ms,
//! 64 → 18 ms (an 8B model on one H100), linear in between ([`CostModel`]). At the end of the
//! step every request in it gets one token: its first after the prefill, its next after a
//! decode. A request that cannot be admitted waits in the queue. Finished requests leave the
//! batch and free their KV cache; the engine publishes its state, and only then do their last
//! token (or error) go out and their end get recorded, so whoever sees a request end sees an
//! [`Engine::snapshot`] without it.
//!
//! Every random choice (which requests fail and where, which stall, the words) comes from
//! [`SimConfig::seed`]: the same seed and the same arrivals, in the same order, give the same run
//! on the same platform (the generator is `rand`'s `SmallRng`, which is fast but not portable
//! across pointer widths).
//!
//! # Measurement
//!
//! With a [`Meter`](tokenmeter::Meter) given to [`EngineBuilder::meter`], each request is
//! measured on the series `Labels::server(operation).provider("tokenmeter-sim")
//! .request_model(model)`: it starts at [`Engine::submit`] (the arrival), is marked `scheduled`
//! when admitted, and from then on is measured as its consumer receives it: each token is
//! recorded when the [`TokenStream`] yields it (so TTFT and ITL are what the consumer saw), the
//! request succeeds when the last token is taken, fails when an injected error is taken
//! (`server_error`; refusals at submit: `rate_limited`, `client_error`), and is cancelled, with
//! exactly the tokens taken, when the stream is dropped before its end. The meter's `waiting`
//! and `running` gauges follow from that. KV-cache usage, queue depth and batch size are read
//! with [`Engine::snapshot`]; [`EngineBuilder::on_step`] sees every step.
//!
//! # Delivery
//!
//! Each request has a bounded output queue ([`SimConfig::output_queue`], default
//! [`DEFAULT_OUTPUT_QUEUE`] tokens). A request whose consumer has not taken that many yet sits
//! out the decode steps, keeping its batch slot and KV cache, like a real engine whose output
//! queue is bounded: a slow reader slows its own request only, the others decode at their
//! pace, and what nobody has read stays bounded. After [`SimConfig::stall_limit`] (default
//! [`DEFAULT_STALL_LIMIT`]) with its queue full, the engine cuts the request: it leaves the
//! batch, frees its cache and is recorded as cancelled at once (the consumer stopped, not the
//! engine), with the tokens the consumer took, whether or not the consumer ever looks again;
//! its stream then yields [`StreamError::Stalled`] and ends (the tokens still queued are
//! dropped, never counted).
//!
//! # Faults
//!
//! [`Faults`]: an error rate (a request fails before or during its stream), a queue limit
//! (arrivals beyond it are refused, an HTTP 429), and stalls (a stream pauses once). Apart from
//! faults, a request whose prompt plus output exceed [`SimConfig::max_model_len`] (default
//! 8,192) is refused with vLLM's context-length message (an HTTP 400).
//!
//! # Caveats
//!
//! - tokio's timers have millisecond resolution: a step wakes up at the next millisecond, and
//!   the following step starts at the previous one's exact planned end, so long runs keep the
//!   cost model's average.
//! - KV-cache admission reserves the prompt and the whole output (no preemption); the usage
//!   reported counts the prompt and the tokens generated so far.
//! - [`Engine::submit`] must be called, and the engine built, inside a tokio runtime.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod config;
mod cost;
mod engine;
mod error;
mod link;
mod prefix;
mod request;
mod snapshot;
mod stream;
mod token;

pub use config::{
    DEFAULT_KV_CAPACITY, DEFAULT_MAX_BATCH, DEFAULT_MAX_MODEL_LEN, DEFAULT_OUTPUT_QUEUE,
    DEFAULT_STALL, DEFAULT_STALL_LIMIT, Faults, SimConfig, Speculation,
};
pub use cost::{CostModel, H100_8B_DECODE, H100_8B_PREFILL_BASE, H100_8B_PREFILL_PER_TOKEN};
pub use engine::{DEFAULT_MODEL, Engine, EngineBuilder, PROVIDER};
pub use error::{ConfigError, StreamError, SubmitError};
pub use prefix::{BLOCK_BYTES_PER_TOKEN, BLOCK_TOKENS, prompt_blocks};
pub use request::{GenerateRequest, Operation};
pub use snapshot::{EngineTotals, Snapshot, StepKind, StepStats};
pub use stream::{TokenResult, TokenStream};
pub use token::{Token, VOCABULARY};

// The README's example runs with the doc tests, so the page crates.io shows stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
