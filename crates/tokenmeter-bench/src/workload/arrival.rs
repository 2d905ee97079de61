//! When requests are sent in an open loop: gaps drawn at a rate that may ramp, Poisson, gamma
//! (burstiness) or constant.
//!
//! The gap after request `i` is drawn at request `i`'s rate, as `vllm bench serve` does: the
//! first request goes at once. A gamma gap with shape `b` and mean `1/rate` has a coefficient of
//! variation of `1/√b`: `b = 1` is a Poisson process, `b < 1` burstier, `b > 1` steadier, and
//! `--arrival constant` the limit `b → ∞`.

use std::time::Duration;

use rand::Rng;
use rand_distr::{Distribution as _, Gamma};

/// How arrivals are spaced when a rate is given.
///
/// ```
/// use tokenmeter_bench::{ArrivalKind, LoadArgs};
///
/// let mut load = LoadArgs::default();
/// load.rate = Some(8.0);
/// load.arrival = ArrivalKind::Constant;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ArrivalKind {
    /// Random gaps with mean 1/rate: exponential (a Poisson process), or gamma with
    /// `--burstiness`.
    Poisson,
    /// Gaps of exactly 1/rate.
    Constant,
}

/// How the rate moves from its start to its end over a ramp.
///
/// ```
/// use tokenmeter_bench::{Curve, LoadArgs};
///
/// // From 2 to 20 requests per second, exponentially.
/// let mut load = LoadArgs::default();
/// load.ramp_up_strategy = Some(Curve::Exponential);
/// load.ramp_up_start_rate = Some(2.0);
/// load.ramp_up_end_rate = Some(20.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Curve {
    /// `start + (end − start) · p`.
    Linear,
    /// `start · (end / start)^p`.
    Exponential,
}

/// A rate that changes from `start` (the stage's rate) to `end` as the stage progresses.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub(crate) struct Ramp {
    /// The rate at the end of the stage.
    pub(crate) end: f64,
    /// Linear or exponential.
    pub(crate) curve: Curve,
}

/// How far a stage has gone, for a ramp: by requests (request `i` of `n` is at `i/(n−1)`, as
/// vLLM ramps) or, for a stage that ends by time only, by time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Span {
    /// The stage sends this many requests.
    Requests(usize),
    /// The stage lasts this long.
    Time(Duration),
}

/// The open-loop arrivals of one stage.
#[derive(Clone, Debug)]
pub(crate) struct Arrivals {
    kind: ArrivalKind,
    rate: f64,
    ramp: Option<Ramp>,
    span: Span,
    gamma_shape: Option<f64>,
    at: f64,
    index: usize,
}

impl Arrivals {
    /// Arrivals at `rate` requests per second (infinite: all at once), spaced by `kind`; a
    /// `burstiness` other than 1 draws Poisson gaps from a gamma distribution of that shape.
    pub(crate) fn new(
        kind: ArrivalKind,
        rate: f64,
        burstiness: f64,
        ramp: Option<Ramp>,
        span: Span,
    ) -> Self {
        Self {
            kind,
            rate,
            ramp,
            span,
            gamma_shape: (burstiness != 1.0).then_some(burstiness),
            at: 0.0,
            index: 0,
        }
    }

    /// The rate of request `index` sent at `at` seconds into the stage.
    pub(crate) fn rate_at(&self, index: usize, at: f64) -> f64 {
        let Some(ramp) = self.ramp else {
            return self.rate;
        };
        let progress = match self.span {
            Span::Requests(n) if n > 1 => index as f64 / (n - 1) as f64,
            Span::Requests(_) => 0.0,
            Span::Time(d) if !d.is_zero() => (at / d.as_secs_f64()).min(1.0),
            Span::Time(_) => 0.0,
        };
        match ramp.curve {
            Curve::Linear => self.rate + (ramp.end - self.rate) * progress,
            Curve::Exponential => self.rate * (ramp.end / self.rate).powf(progress),
        }
    }

    /// The offset from the stage's start of the next arrival.
    pub(crate) fn next_offset(&mut self, rng: &mut impl Rng) -> Duration {
        if self.index > 0 {
            let rate = self.rate_at(self.index - 1, self.at);
            if rate.is_finite() {
                self.at += self.gap(rate, rng);
            }
        }
        self.index += 1;
        Duration::from_secs_f64(self.at)
    }

    fn gap(&self, rate: f64, rng: &mut impl Rng) -> f64 {
        match (self.kind, self.gamma_shape) {
            (ArrivalKind::Constant, _) => 1.0 / rate,
            (ArrivalKind::Poisson, None) => -(1.0 - rng.random::<f64>()).ln() / rate,
            (ArrivalKind::Poisson, Some(shape)) => match Gamma::new(shape, 1.0 / (rate * shape)) {
                Ok(gamma) => gamma.sample(rng),
                // Shape and rate are checked positive and finite when parsed.
                Err(_) => 1.0 / rate,
            },
        }
    }
}

#[cfg(test)]
/// The send offsets (from the start of the run) of `n` open-loop arrivals at `rate` requests
/// per second. The first request is sent at once. An infinite rate sends all at once.
pub(crate) fn open_loop(
    kind: ArrivalKind,
    rate: f64,
    n: usize,
    rng: &mut impl Rng,
) -> Vec<Duration> {
    let mut arrivals = Arrivals::new(kind, rate, 1.0, None, Span::Requests(n));
    (0..n).map(|_| arrivals.next_offset(rng)).collect()
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

    /// Mean and coefficient of variation of the gaps of `n` arrivals.
    fn gap_stats(arrivals: &mut Arrivals, n: usize, seed: u64) -> (f64, f64) {
        let mut rng = StdRng::seed_from_u64(seed);
        let at: Vec<f64> = (0..n)
            .map(|_| arrivals.next_offset(&mut rng).as_secs_f64())
            .collect();
        let gaps: Vec<f64> = at.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn burstiness_sets_the_coefficient_of_variation_and_keeps_the_rate() {
        for (burstiness, seed) in [(0.25, 1), (1.0, 2), (4.0, 3)] {
            let mut arrivals = Arrivals::new(
                ArrivalKind::Poisson,
                20.0,
                burstiness,
                None,
                Span::Requests(20_001),
            );
            let (mean, cv) = gap_stats(&mut arrivals, 20_001, seed);
            let want_cv = 1.0 / f64::sqrt(burstiness);
            assert!(
                (mean - 0.05).abs() < 0.05 * 0.05,
                "b={burstiness}: mean {mean}"
            );
            assert!(
                (cv - want_cv).abs() < 0.05 * want_cv,
                "b={burstiness}: cv {cv}, want {want_cv}"
            );
        }
        let mut constant =
            Arrivals::new(ArrivalKind::Constant, 20.0, 1.0, None, Span::Requests(100));
        let (_, cv) = gap_stats(&mut constant, 100, 0);
        assert!(cv < 1e-9, "constant cv {cv}");
    }

    #[test]
    fn a_ramp_by_requests_follows_vllms_formula() {
        let linear = Arrivals::new(
            ArrivalKind::Constant,
            2.0,
            1.0,
            Some(Ramp {
                end: 10.0,
                curve: Curve::Linear,
            }),
            Span::Requests(5),
        );
        let rates: Vec<f64> = (0..5).map(|i| linear.rate_at(i, 0.0)).collect();
        assert_eq!(rates, [2.0, 4.0, 6.0, 8.0, 10.0]);
        let exponential = Arrivals::new(
            ArrivalKind::Constant,
            1.0,
            1.0,
            Some(Ramp {
                end: 16.0,
                curve: Curve::Exponential,
            }),
            Span::Requests(5),
        );
        let rates: Vec<f64> = (0..5).map(|i| exponential.rate_at(i, 0.0)).collect();
        for (got, want) in rates.iter().zip([1.0, 2.0, 4.0, 8.0, 16.0]) {
            assert!((got - want).abs() < 1e-12, "{rates:?}");
        }
        // Constant gaps: request i+1 comes 1/rate_i after request i.
        let mut linear = linear;
        let mut rng = StdRng::seed_from_u64(0);
        let at: Vec<f64> = (0..5)
            .map(|_| linear.next_offset(&mut rng).as_secs_f64())
            .collect();
        let want = [0.0, 0.5, 0.75, 0.75 + 1.0 / 6.0, 0.75 + 1.0 / 6.0 + 0.125];
        for (got, want) in at.iter().zip(want) {
            assert!((got - want).abs() < 1e-9, "{at:?}");
        }
    }

    #[test]
    fn a_ramp_by_time_reaches_its_end_rate_at_the_end_of_the_stage() {
        let mut ramp = Arrivals::new(
            ArrivalKind::Poisson,
            5.0,
            1.0,
            Some(Ramp {
                end: 50.0,
                curve: Curve::Linear,
            }),
            Span::Time(Duration::from_secs(100)),
        );
        assert_eq!(ramp.rate_at(0, 0.0), 5.0);
        assert_eq!(ramp.rate_at(0, 50.0), 27.5);
        assert_eq!(ramp.rate_at(0, 500.0), 50.0);
        // Arrivals in the last tenth come about ten times as often as in the first.
        let mut rng = StdRng::seed_from_u64(9);
        let mut at = Vec::new();
        loop {
            let t = ramp.next_offset(&mut rng).as_secs_f64();
            if t >= 100.0 {
                break;
            }
            at.push(t);
        }
        let first = at.iter().filter(|&&t| t < 10.0).count() as f64;
        let last = at.iter().filter(|&&t| t >= 90.0).count() as f64;
        // Expected 5.0·10 + 2.25·100/2 ≈ 72 and 47.75·10 + … ≈ 488.
        assert!((50.0..100.0).contains(&first), "first tenth {first}");
        assert!((420.0..560.0).contains(&last), "last tenth {last}");
    }
}
