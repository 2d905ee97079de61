//! [`KeptTime`] and [`KeptRate`]: a request's optional time and its sweep step's optional rate,
//! each in 8 bytes where an `Option<Duration>` or an `Option<f64>` takes 16 (a run keeps one
//! of each per request, for all of its requests). Each reads back exactly.

use std::num::NonZeroU64;
use std::time::Duration;

/// An optional time in whole nanoseconds: 8 bytes, the value read back exactly (the bench
/// clock's times are whole nanoseconds). A time of 2^64 − 2 ns (584 years) or more reads back
/// as 2^64 − 2 ns, as the trace line's nanoseconds saturate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeptTime(Option<NonZeroU64>);

impl KeptTime {
    /// The time kept.
    pub(crate) fn get(self) -> Option<Duration> {
        self.0.map(|n| Duration::from_nanos(n.get() - 1))
    }
}

impl From<Option<Duration>> for KeptTime {
    fn from(time: Option<Duration>) -> Self {
        Self(time.and_then(|t| {
            let ns = u64::try_from(t.as_nanos()).unwrap_or(u64::MAX);
            NonZeroU64::new(ns.saturating_add(1))
        }))
    }
}

impl From<Duration> for KeptTime {
    fn from(time: Duration) -> Self {
        Some(time).into()
    }
}

/// The bits that stand for no rate: a NaN with a payload of its own (no arithmetic makes it,
/// and a sweep's rates are finite), so every other `f64`, NaNs included, is kept bit for bit.
const NO_RATE: u64 = 0x7ff4_2b5e_9d0c_0001;

/// An optional rate (requests per second), in the 8 bytes of its `f64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeptRate(u64);

impl Default for KeptRate {
    fn default() -> Self {
        Self(NO_RATE)
    }
}

impl KeptRate {
    /// The rate kept.
    pub(crate) fn get(self) -> Option<f64> {
        (self.0 != NO_RATE).then(|| f64::from_bits(self.0))
    }
}

impl From<Option<f64>> for KeptRate {
    fn from(rate: Option<f64>) -> Self {
        Self(rate.map_or(NO_RATE, f64::to_bits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_back_exactly_in_8_bytes() {
        assert_eq!(std::mem::size_of::<KeptTime>(), 8);
        assert_eq!(KeptTime::default().get(), None);
        assert_eq!(KeptTime::from(None).get(), None);
        for ns in [0, 1, 999, u64::from(u32::MAX), 1 << 40, u64::MAX - 2] {
            let t = Duration::from_nanos(ns);
            assert_eq!(KeptTime::from(t).get(), Some(t), "{ns} ns");
        }
        // Beyond 2^64 − 2 ns: saturated, as the trace's nanoseconds are, never None.
        let top = Duration::from_nanos(u64::MAX - 1);
        assert_eq!(
            KeptTime::from(Duration::from_nanos(u64::MAX)).get(),
            Some(top)
        );
        assert_eq!(KeptTime::from(Duration::MAX).get(), Some(top));
    }

    #[test]
    fn rates_read_back_bit_for_bit_in_8_bytes() {
        assert_eq!(std::mem::size_of::<KeptRate>(), 8);
        assert_eq!(KeptRate::default().get(), None);
        assert_eq!(KeptRate::from(None).get(), None);
        for rate in [
            0.0,
            -0.0,
            1e-300,
            2.5,
            f64::MAX,
            f64::INFINITY,
            f64::MIN_POSITIVE,
        ] {
            let back = KeptRate::from(Some(rate)).get().unwrap();
            assert_eq!(back.to_bits(), rate.to_bits(), "{rate}");
        }
        let nan = KeptRate::from(Some(f64::NAN)).get().unwrap();
        assert_eq!(nan.to_bits(), f64::NAN.to_bits());
    }
}
