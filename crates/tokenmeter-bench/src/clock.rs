//! The bench clock: one monotonic origin shared by the client, the trace and the core meter.
//!
//! The client's SSE reader stamps each event with [`BenchClock::now`] when it has been parsed;
//! the core records every token at that stamp (`Request::tokens_at`), so the trace, which is
//! built from the core's records, holds the parse instants exactly.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokenmeter::{Clock, TimeSource};
use tokenmeter_openai::EventClock;

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
        self.origin.elapsed()
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

    /// Time since the origin.
    pub(crate) fn now(&self) -> Duration {
        self.source.origin.elapsed()
    }

    /// The same time source as a tokenmeter [`Clock`], for the meter.
    pub(crate) fn meter_clock(&self) -> Clock {
        Clock::custom(self.source.clone())
    }
}

impl EventClock for BenchClock {
    fn now(&self) -> Duration {
        BenchClock::now(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meter_clock_reads_the_same_time_line() {
        let origin = Instant::now() - Duration::from_secs(5);
        let clock = BenchClock::with_origin(origin);
        let (a, b, c) = (clock.now(), clock.meter_clock().now(), clock.now());
        assert!(
            a >= Duration::from_secs(5) && a <= b && b <= c,
            "{a:?} {b:?} {c:?}"
        );
    }
}
