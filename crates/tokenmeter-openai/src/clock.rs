//! [`EventClock`]: when a chunk was parsed, and how the meter learns that same instant.

use std::time::Duration;

use tokenmeter::Clock;

/// The time source that stamps every parsed chunk ([`Chunk::at`](crate::Chunk::at)).
///
/// The default is the request's own tokenmeter [`Clock`]: chunk times and the request's record
/// are then on one time line, and the meter records each token at its chunk's time
/// ([`Request::tokens_at`](tokenmeter::Request::tokens_at)), so a program's own trace of the
/// chunks and the meter's record agree to the nanosecond. Another clock must read the same time
/// line as the meter's.
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
}

impl EventClock for Clock {
    #[inline]
    fn now(&self) -> Duration {
        Clock::now(self)
    }
}
