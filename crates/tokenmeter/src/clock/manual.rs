//! A clock that moves only when told to.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A shared, manually driven time source for tests and simulations.
///
/// Clones share the same time. Time is kept in whole nanoseconds and never goes backwards:
/// [`ManualClock::set`] to an earlier time is ignored.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::ManualClock;
///
/// let clock = ManualClock::new();
/// clock.advance(Duration::from_millis(20));
/// assert_eq!(clock.now(), Duration::from_millis(20));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock at time zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current time.
    #[inline]
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Acquire))
    }

    /// Moves time forward by `by` (saturating at `u64::MAX` nanoseconds).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .nanos
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_add(by))
            });
    }

    /// Sets the time to `to` if that is not earlier than now.
    pub fn set(&self, to: Duration) {
        let to = u64::try_from(to.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_max(to, Ordering::AcqRel);
    }
}
