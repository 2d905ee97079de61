//! Measure what users of a large language model feel: wrap any token stream and get its time to
//! first token, inter-token latency, time per output token, phases, token counts and outcome.
//!
//! # Getting started
//!
//! ```
//! # futures_executor::block_on(async {
//! use futures_util::{StreamExt, stream};
//! use tokenmeter::{Labels, Meter, MeterExt, sink::InMemorySink};
//!
//! // 1. A meter with a sink (an exporter in production; exact values here).
//! let memory = InMemorySink::new();
//! let meter = Meter::builder().sink(memory.clone()).build();
//!
//! // 2. A series per label set, resolved once and kept.
//! let series = meter.series(&Labels::server("chat").provider("vllm").request_model("llama-3-8b"));
//!
//! // 3. Per request: start at arrival, wrap the token stream.
//! let mut request = series.start();
//! request.set_input_tokens(42);
//! request.mark_scheduled(); // optional: the request left the queue
//! let tokens = stream::iter(["Hello", ",", " world"]).meter(request);
//! let text: String = tokens.collect().await; // ends with success at the stream's end
//!
//! // 4. Read the numbers.
//! let report = memory.report();
//! assert_eq!(text, "Hello, world");
//! assert_eq!(report.requests, 1);
//! assert_eq!(report.output_tokens.p50, 3.0);
//! println!("{report}");
//! # });
//! ```
//!
//! # What is measured
//!
//! ```text
//! arrival ──queue──▶ scheduled ──prefill──▶ first token ──decode──▶ last token ──▶ end
//!    └───────────────── TTFT ──────────────────┘
//!    └─────────────────────────────── E2E ───────────────────────────────────────┘
//! ```
//!
//! | Interval | Definition |
//! |---|---|
//! | queue | scheduled − arrival (only when `scheduled` is marked) |
//! | prefill | first token − scheduled |
//! | TTFT | first token − arrival (server) or send (client) |
//! | decode | last token − first token |
//! | inference | last token − scheduled |
//! | E2E | end − arrival; the end is the stream's end, an error, or the drop |
//! | ITL | the gap between two consecutive token-bearing items (one sample per item) |
//! | TPOT | decode / (output tokens − 1); no sample for one output token or fewer |
//!
//! The first token is the first item that carries at least one token: role-only frames,
//! keep-alives and empty deltas do not count (give them 0 tokens with an observer,
//! [`Metered::with_observer`]). An interval whose start or end was
//! never observed is `None`, never computed from a zero.
//!
//! # Outcomes
//!
//! Every request ends exactly once, on every path: the stream's end ([`Outcome::Success`], or
//! [`Outcome::Degraded`] if [`Request::mark_degraded`] was called), an error item
//! ([`Outcome::Error`] with an [`ErrorClass`]), a drop before the end ([`Outcome::Cancelled`]), or
//! a panic unwinding through the request ([`ErrorClass::Other`], with
//! [`RequestRecord::panicked`] set).
//!
//! # The pieces
//!
//! - [`Meter`]: the clock, the sinks and the capped series registry.
//! - [`Series`]: a resolved label set; keeps the `waiting` and `running` gauges.
//! - [`Request`]: one request's lifecycle, also usable without a stream.
//! - [`Metered`] and [`MeterExt`]: the stream wrapper. `stream.meter(request)` is the one way
//!   to meter a stream; closures, `Result` streams and your own types plug into it as
//!   observers ([`stream`] says how).
//! - [`Clock`]: monotonic by default; [`ManualClock`] for tests; `Clock::tokio` with the
//!   `tokio` feature for paused time.
//! - [`sink`]: the [`Sink`](sink::Sink) trait exporters implement, plus no-op, fan-out and
//!   in-memory sinks.
//! - [`report`]: percentiles like `numpy.percentile`, next to token counts.
//!
//! # Features
//!
//! - `tokio`: `Clock::tokio`, which follows tokio's paused time, and classification of
//!   `tokio::time::error::Elapsed` as a timeout.
//! - `quanta`: `Clock::quanta`, the CPU's time-stamp counter (cheaper to read than
//!   `Instant::now`), which then becomes the default clock. The Prometheus
//!   exporter turns it on (its dependencies already include `quanta`).
//!
//! # Cost
//!
//! Per token-bearing item: one clock read and a few integer operations, held in the request.
//! Items after the first token go to the sinks' pre-built series handles in batches of up to
//! 16 ([`sink::Items`]: when the batch is full, 1 s after its first item, at the request's end,
//! or on [`Request::flush`]), so a sink pays its per-call costs once per batch;
//! [`MeterBuilder::item_batch`] sets a smaller batch, 1 for every item at once. The first
//! token, the end and the gauges go to the sinks at once. No allocation, no lock, no lookup.
//! Resolving a series takes a lock: do it once per label set. The `core` benchmark
//! (`cargo bench -p tokenmeter-benches --bench core`) compares this against a hand-written
//! floor; its latest figures are in the repository's `benches/README.md`.
//!
//! A panic inside a sink is caught and counted ([`sink::sink_panics`]): the other sinks, the
//! request and the stream carry on.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod clock;
pub mod conventions;
mod meter;
pub mod orca;
pub mod outcome;
mod record;
pub mod report;
pub mod request;
pub mod series;
pub mod sink;
mod slo_targets;
pub mod stream;

pub use clock::{Clock, ManualClock, TimeSource};
pub use meter::{Meter, MeterBuilder};
pub use outcome::{Degradation, ErrorClass, FinishReason, Outcome};
pub use record::{ItemTime, RequestRecord};
pub use request::{Observation, Request};
pub use series::{Labels, Role, Series, TenantKey};
pub use stream::{MeterExt, Metered};

// The README's example runs with the doc tests, so the page crates.io shows stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
