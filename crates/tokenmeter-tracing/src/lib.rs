//! `tracing` for tokenmeter: each request's span carries the numbers the metrics show.
//!
//! Make the request's span with [`request_span!`] (a `tracing::span!` that also declares the
//! [`fields`] this crate records), start the request inside it, and add [`TracingSink`] to the
//! meter. The span then gets `gen_ai.response.time_to_first_chunk` when the first token arrives
//! and, when the request ends, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`,
//! `gen_ai.response.finish_reasons`, `error.type`, `tokenmeter.outcome`,
//! `tokenmeter.time_per_output_token` and `tokenmeter.request.duration`. With
//! `tracing-opentelemetry` they become span attributes under the same names.
//!
//! ```
//! use futures_util::{StreamExt as _, stream};
//! use tokenmeter::sink::FanOut;
//! use tokenmeter::{Labels, Meter, MeterExt as _};
//! use tokenmeter_tracing::{TracingSink, request_span};
//! use tracing::Instrument as _;
//!
//! # async fn demo() {
//! let meter = Meter::builder().sink(FanOut::new().with(TracingSink::new())).build();
//! let series = meter.series(&Labels::server("chat").request_model("llama-3-8b"));
//!
//! async {
//!     // The request starts inside the span, so it is tied to it.
//!     let tokens = stream::iter(["Hel", "lo"]).meter(series.start());
//!     let text: String = tokens.collect::<Vec<_>>().await.concat();
//!     assert_eq!(text, "Hello");
//! }
//! .instrument(request_span!(tracing::Level::INFO, "chat", gen_ai.request.model = "llama-3-8b"))
//! .await;
//! # }
//! # assert!(futures_util::FutureExt::now_or_never(demo()).is_some());
//! ```
//!
//! A span is tied to a request when the request starts: the current span must be the one made
//! with [`request_span!`] at that moment (entered, or the span of the future that starts it).
//! Streams polled later outside the span (an HTTP body polled by the server) still record onto it.

#![forbid(unsafe_code)]

pub mod fields;
mod record;
mod sink;
mod spans;

pub use record::record;
pub use sink::TracingSink;

#[doc(hidden)]
pub mod __private {
    pub use tracing;
}

/// A `tracing` span that declares every field [`TracingSink`] records (as empty), followed by
/// your own fields, in `tracing::span!` syntax.
///
/// # Examples
///
/// ```
/// use tokenmeter_tracing::request_span;
/// use tracing::Level;
///
/// let model = "llama-3-8b";
/// let plain = request_span!(Level::INFO, "chat");
/// let with_fields = request_span!(Level::INFO, "chat", gen_ai.request.model = model, user.tier = "free");
/// # drop((plain, with_fields));
/// ```
#[macro_export]
macro_rules! request_span {
    ($level:expr, $name:expr) => {
        $crate::request_span!($level, $name,)
    };
    ($level:expr, $name:expr, $($fields:tt)*) => {
        $crate::__private::tracing::span!(
            $level,
            $name,
            gen_ai.response.time_to_first_chunk = $crate::__private::tracing::field::Empty,
            gen_ai.usage.input_tokens = $crate::__private::tracing::field::Empty,
            gen_ai.usage.output_tokens = $crate::__private::tracing::field::Empty,
            gen_ai.response.finish_reasons = $crate::__private::tracing::field::Empty,
            error.type = $crate::__private::tracing::field::Empty,
            tokenmeter.outcome = $crate::__private::tracing::field::Empty,
            tokenmeter.time_per_output_token = $crate::__private::tracing::field::Empty,
            tokenmeter.request.duration = $crate::__private::tracing::field::Empty,
            tokenmeter.request.id = $crate::__private::tracing::field::Empty,
            $($fields)*
        )
    };
}

// The README's example runs with the doc tests, so the page crates.io shows stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
