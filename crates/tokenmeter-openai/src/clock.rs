//! [`EventClock`]: when a chunk was parsed, and how the meter learns that same instant.

use std::time::Duration;

use tokenmeter::Clock;

/// The time source that stamps every parsed chunk ([`Chunk::at`](crate::Chunk::at)).
///
/// The default is the request's own tokenmeter [`Clock`]: chunk times and the request's record
/// are then on one time line, and the meter reads the clock again (a few nanoseconds later) when
/// it records a token.
///
/// A program that needs the meter to record *exactly* the parse instant (a benchmark comparing
/// its own trace with the meter's record, to the nanosecond) implements
/// [`recording`](EventClock::recording): it is called with the chunk's time just before the meter
/// records a token-bearing chunk, on the same thread and with no await point in between, so a
/// meter clock built on the same source can return that instant for its next read.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::{Clock, ManualClock};
/// use tokenmeter_openai::EventClock;
///
/// let manual = ManualClock::new();
/// let clock = Clock::manual(&manual);
/// manual.advance(Duration::from_millis(3));
/// assert_eq!(EventClock::now(&clock), Duration::from_millis(3));
/// ```
pub trait EventClock {
    /// The time now, on the meter's time line (time since the meter clock's origin).
    fn now(&self) -> Duration;

    /// The meter is about to record a token-bearing chunk parsed at `at`. Does nothing by
    /// default.
    fn recording(&self, at: Duration) {
        let _ = at;
    }
}

impl EventClock for Clock {
    #[inline]
    fn now(&self) -> Duration {
        Clock::now(self)
    }
}
