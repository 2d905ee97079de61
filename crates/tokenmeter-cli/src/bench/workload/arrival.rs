//! When requests are sent: open-loop arrivals (Poisson or constant rate) or a fixed concurrency.

use std::time::Duration;

use rand::Rng;

/// How arrivals are spaced when a rate is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ArrivalKind {
    /// Exponential gaps with mean 1/rate (a Poisson process).
    Poisson,
    /// Gaps of exactly 1/rate.
    Constant,
}

/// The send offsets (from the start of the run) of `n` open-loop arrivals at `rate` requests
/// per second. The first request is sent at once. An infinite rate sends all at once.
pub(crate) fn open_loop(
    kind: ArrivalKind,
    rate: f64,
    n: usize,
    rng: &mut impl Rng,
) -> Vec<Duration> {
    let mut at = 0.0_f64;
    let mut offsets = Vec::with_capacity(n);
    for i in 0..n {
        if i > 0 && rate.is_finite() {
            at += match kind {
                ArrivalKind::Constant => 1.0 / rate,
                ArrivalKind::Poisson => -(1.0 - rng.random::<f64>()).ln() / rate,
            };
        }
        offsets.push(Duration::from_secs_f64(at));
    }
    offsets
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn constant_arrivals_are_evenly_spaced() {
        let mut rng = StdRng::seed_from_u64(0);
        let at = open_loop(ArrivalKind::Constant, 4.0, 5, &mut rng);
        let ms: Vec<u128> = at.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [0, 250, 500, 750, 1000]);
    }

    #[test]
    fn poisson_arrivals_have_the_requested_rate_and_are_seeded() {
        let mut rng = StdRng::seed_from_u64(42);
        let at = open_loop(ArrivalKind::Poisson, 10.0, 10_001, &mut rng);
        let rate = 10_000.0 / at[10_000].as_secs_f64();
        assert!((rate - 10.0).abs() < 0.5, "measured rate {rate}");
        assert!(at.windows(2).all(|w| w[0] <= w[1]));
        let again = open_loop(
            ArrivalKind::Poisson,
            10.0,
            10_001,
            &mut StdRng::seed_from_u64(42),
        );
        assert_eq!(at, again);
    }

    #[test]
    fn an_infinite_rate_sends_everything_at_once() {
        let mut rng = StdRng::seed_from_u64(0);
        let at = open_loop(ArrivalKind::Poisson, f64::INFINITY, 3, &mut rng);
        assert_eq!(at, [Duration::ZERO; 3]);
    }
}
