//! Time sources: every timestamp tokenmeter takes comes from a [`Clock`].
//!
//! A clock returns the time elapsed since its own origin as a [`Duration`]. Only differences between
//! two readings of the same clock mean anything, and a clock never goes backwards.
//!
//! | Clock | For |
//! |---|---|
//! | [`Clock::monotonic`] (the default) | production: `std::time::Instant`, read through the vDSO |
//! | `Clock::quanta` (feature `quanta`; then the default) | production, faster: the CPU's time-stamp counter |
//! | [`Clock::manual`] with a [`ManualClock`] | tests: time moves only when the test says so |
//! | `Clock::tokio` (feature `tokio`) | code under `tokio::time::pause()`: follows tokio's clock |
//! | [`Clock::custom`] with a [`TimeSource`] | anything else |
//!
//! Production and tests run the same code: nothing switches on `cfg(test)`.

mod manual;

pub use manual::ManualClock;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A user-supplied source of monotonic time, for [`Clock::custom`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::{Clock, TimeSource};
///
/// #[derive(Debug)]
/// struct Frozen;
/// impl TimeSource for Frozen {
///     fn now(&self) -> Duration { Duration::from_secs(7) }
/// }
/// let clock = Clock::custom(std::sync::Arc::new(Frozen));
/// assert_eq!(clock.now(), Duration::from_secs(7));
/// ```
pub trait TimeSource: Send + Sync + fmt::Debug + 'static {
    /// Time since this source's origin. Must never decrease.
    fn now(&self) -> Duration;
}

/// A cheap, cloneable handle to a monotonic time source.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::{Clock, ManualClock};
///
/// let manual = ManualClock::new();
/// let clock = Clock::manual(&manual);
/// manual.advance(Duration::from_millis(5));
/// assert_eq!(clock.now(), Duration::from_millis(5));
/// ```
#[derive(Clone)]
pub struct Clock {
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Monotonic(Instant),
    #[cfg(feature = "quanta")]
    /// The clock and its origin as a raw counter reading.
    Quanta(quanta::Clock, u64),
    Manual(ManualClock),
    #[cfg(feature = "tokio")]
    Tokio(tokio::time::Instant),
    Custom(Arc<dyn TimeSource>),
}

impl Clock {
    /// The time-stamp-counter clock of `quanta` (feature `quanta`): about a quarter of the cost
    /// of `std::time::Instant::now`, calibrated against the OS clock, and the OS clock itself where
    /// the counter is not reliable. With the feature on, it is also the default clock.
    ///
    /// # Examples
    ///
    /// ```
    /// let clock = tokenmeter::Clock::quanta();
    /// let (a, b) = (clock.now(), clock.now());
    /// assert!(b >= a);
    /// ```
    #[cfg(feature = "quanta")]
    pub fn quanta() -> Self {
        let clock = quanta::Clock::new();
        let origin = clock.raw();
        Self {
            kind: Kind::Quanta(clock, origin),
        }
    }

    /// The OS monotonic clock: `std::time::Instant`, with its origin at the call.
    pub fn monotonic() -> Self {
        Self {
            kind: Kind::Monotonic(Instant::now()),
        }
    }

    /// A clock that reads a [`ManualClock`]; the test moves time with [`ManualClock::advance`].
    pub fn manual(manual: &ManualClock) -> Self {
        Self {
            kind: Kind::Manual(manual.clone()),
        }
    }

    /// A clock that follows `tokio::time::Instant`, so it obeys `tokio::time::pause()` and
    /// `tokio::time::advance`. Requires the `tokio` feature.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// let clock = tokenmeter::Clock::tokio();
    /// tokio::time::sleep(Duration::from_secs(3)).await; // instant: time is paused
    /// assert_eq!(clock.now(), Duration::from_secs(3));
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub fn tokio() -> Self {
        Self {
            kind: Kind::Tokio(tokio::time::Instant::now()),
        }
    }

    /// A clock backed by any [`TimeSource`].
    pub fn custom(source: Arc<dyn TimeSource>) -> Self {
        Self {
            kind: Kind::Custom(source),
        }
    }

    /// Time elapsed since this clock's origin.
    #[inline]
    pub fn now(&self) -> Duration {
        match &self.kind {
            Kind::Monotonic(origin) => origin.elapsed(),
            #[cfg(feature = "quanta")]
            Kind::Quanta(..) => Duration::from_nanos(self.now_nanos()),
            Kind::Manual(manual) => manual.now(),
            #[cfg(feature = "tokio")]
            Kind::Tokio(origin) => origin.elapsed(),
            Kind::Custom(source) => source.now(),
        }
    }

    /// [`now`](Self::now) as whole nanoseconds (saturating at `u64::MAX`, some 584 years): the
    /// form the per-token path keeps, which skips splitting into seconds and nanoseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let manual = tokenmeter::ManualClock::new();
    /// let clock = tokenmeter::Clock::manual(&manual);
    /// manual.advance(Duration::from_micros(1_500));
    /// assert_eq!(clock.now_nanos(), 1_500_000);
    /// assert_eq!(Duration::from_nanos(clock.now_nanos()), clock.now());
    /// ```
    #[inline]
    pub fn now_nanos(&self) -> u64 {
        match &self.kind {
            #[cfg(feature = "quanta")]
            Kind::Quanta(clock, origin) => clock.delta_as_nanos(*origin, clock.raw()),
            _ => u64::try_from(self.now().as_nanos()).unwrap_or(u64::MAX),
        }
    }
}

impl Default for Clock {
    /// [`Clock::monotonic`], or `Clock::quanta` with the `quanta` feature.
    fn default() -> Self {
        default_clock()
    }
}

#[cfg(feature = "quanta")]
fn default_clock() -> Clock {
    Clock::quanta()
}

#[cfg(not(feature = "quanta"))]
fn default_clock() -> Clock {
    Clock::monotonic()
}

impl From<ManualClock> for Clock {
    fn from(manual: ManualClock) -> Self {
        Self::manual(&manual)
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match &self.kind {
            Kind::Monotonic(_) => "monotonic",
            #[cfg(feature = "quanta")]
            Kind::Quanta(..) => "quanta",
            Kind::Manual(_) => "manual",
            #[cfg(feature = "tokio")]
            Kind::Tokio(_) => "tokio",
            Kind::Custom(_) => "custom",
        };
        f.debug_struct("Clock")
            .field("kind", &name)
            .field("now", &self.now())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_never_goes_back() {
        let clock = Clock::monotonic();
        let a = clock.now();
        let b = clock.now();
        assert!(b >= a);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let manual = ManualClock::new();
        let clock: Clock = manual.clone().into();
        assert_eq!(clock.now(), Duration::ZERO);
        manual.advance(Duration::from_nanos(1_234));
        assert_eq!(clock.now(), Duration::from_nanos(1_234));
        manual.set(Duration::from_secs(1));
        assert_eq!(clock.now(), Duration::from_secs(1));
    }

    #[cfg(feature = "tokio")]
    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_paused_time() {
        let clock = Clock::tokio();
        tokio::time::advance(Duration::from_millis(250)).await;
        assert_eq!(clock.now(), Duration::from_millis(250));
    }
}
