//! The bench clock: one monotonic origin shared by the client, the trace and the core meter, with
//! a per-thread latch so that the core records the exact instant at which the client parsed an
//! SSE event.
//!
//! The client stamps each SSE event with [`BenchClock::now`] when it has been parsed (the clock
//! is the `tokenmeter_openai::EventClock` of the metered response), stores that offset in the
//! trace, and the metered stream announces it ([`EventClock::recording`]) just before the core
//! records the token: [`latch`] makes the core's next clock read on the same thread (inside
//! `Request::tokens`, with no await point in between) return that same offset instead of reading
//! the time again, so the trace and the core agree to the nanosecond.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokenmeter::{Clock, TimeSource};
use tokenmeter_openai::EventClock;

thread_local! {
    static LATCHED: Cell<Option<Duration>> = const { Cell::new(None) };
}

/// Makes the next read of a [`BenchClock`]'s meter clock on this thread return `at` (once).
fn latch(at: Duration) {
    LATCHED.with(|cell| cell.set(Some(at)));
}

/// A monotonic clock whose origin is the start of the benchmark.
#[derive(Clone, Debug)]
pub(crate) struct BenchClock {
    source: Arc<Source>,
}

#[derive(Debug)]
struct Source {
    origin: Instant,
}

impl TimeSource for Source {
    fn now(&self) -> Duration {
        LATCHED
            .with(Cell::take)
            .unwrap_or_else(|| self.origin.elapsed())
    }
}

impl BenchClock {
    /// A clock with its origin now.
    pub(crate) fn start() -> Self {
        Self::with_origin(Instant::now())
    }

    /// A clock with the given origin (the self-check shares one origin with its server).
    pub(crate) fn with_origin(origin: Instant) -> Self {
        Self {
            source: Arc::new(Source { origin }),
        }
    }

    /// Time since the origin, read now (never latched).
    pub(crate) fn now(&self) -> Duration {
        self.source.origin.elapsed()
    }

    /// The same time source as a tokenmeter [`Clock`], honouring [`latch`].
    pub(crate) fn meter_clock(&self) -> Clock {
        Clock::custom(self.source.clone())
    }
}

impl EventClock for BenchClock {
    fn now(&self) -> Duration {
        BenchClock::now(self)
    }

    fn recording(&self, at: Duration) {
        latch(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latched_instant_is_read_once_by_the_meter_clock() {
        let clock = BenchClock::start();
        let meter = clock.meter_clock();
        clock.recording(Duration::from_nanos(7)); // what the metered response calls
        assert_eq!(meter.now(), Duration::from_nanos(7));
        assert!(meter.now() >= clock.now().saturating_sub(Duration::from_secs(1)));
        assert_ne!(meter.now(), Duration::from_nanos(7));
    }
}
