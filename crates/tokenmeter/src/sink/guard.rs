//! Isolation: a panic inside a sink is caught, counted and goes no further.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};

static SINK_PANICS: AtomicU64 = AtomicU64::new(0);

/// Panics caught inside sinks since the process started.
///
/// A sink that panics loses what that one call carried (one event, or one batch of items);
/// the other sinks of a [`FanOut`](super::FanOut), the request and the stream carry on. The
/// panic message still goes to the panic hook (stderr by default).
///
/// # Examples
///
/// ```
/// assert_eq!(tokenmeter::sink::sink_panics(), 0);
/// ```
pub fn sink_panics() -> u64 {
    SINK_PANICS.load(Ordering::Relaxed)
}

/// Runs one sink call, catching a panic. Costs nothing on the path that does not panic beyond
/// the call itself, which is a dynamic call anyway.
#[inline]
pub(crate) fn guarded(call: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(call)).is_err() {
        SINK_PANICS.fetch_add(1, Ordering::Relaxed);
    }
}
