//! The intervals' coverage, by simulation with a fixed seed: over many samples from a known
//! distribution, how often the 95% interval holds the true value.

use super::{Confidence, Z95, quantile_bounds, wilson};

/// SplitMix64: a small deterministic generator, enough for a simulation.
struct Draws(u64);

impl Draws {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Log-normal with μ = ln 40 ms and σ = 0.5: a TTFT-like shape with a long right tail.
const MU: f64 = 3.688_879_454_113_936; // ln 40
const SIGMA: f64 = 0.5;

fn true_quantile(percent: f64) -> f64 {
    (MU + SIGMA * super::normal_quantile(percent / 100.0)).exp()
}

fn quantile_coverage(percent: f64, n: usize, trials: usize, seed: u64) -> f64 {
    let mut draws = Draws(seed);
    let truth = true_quantile(percent);
    let mut held = 0;
    for _ in 0..trials {
        let mut sample: Vec<f64> = (0..n)
            .map(|_| (MU + SIGMA * draws.normal()).exp())
            .collect();
        sample.sort_by(f64::total_cmp);
        let (lo, hi) = quantile_bounds(&sample, percent, Confidence::P95)
            .interval()
            .expect("200 samples bound p50 and p95");
        held += usize::from(lo <= truth && truth <= hi);
    }
    held as f64 / trials as f64
}

#[test]
fn percentile_intervals_hold_the_true_value_about_95_percent_of_the_time() {
    for percent in [50.0, 95.0] {
        let coverage = quantile_coverage(percent, 200, 1000, 42);
        assert!(
            (0.93..=0.97).contains(&coverage),
            "p{percent}: coverage {coverage}"
        );
    }
}

#[test]
fn wilson_intervals_hold_the_true_proportion_about_95_percent_of_the_time() {
    let mut draws = Draws(7);
    for p in [0.9, 0.5] {
        let mut held = 0;
        for _ in 0..1000 {
            let successes = (0..200).filter(|_| draws.uniform() < p).count() as u64;
            let (lo, hi) = wilson(successes, 200, Z95).expect("200 trials");
            held += usize::from(lo <= p && p <= hi);
        }
        let coverage = held as f64 / 1000.0;
        assert!(
            (0.93..=0.97).contains(&coverage),
            "p {p}: coverage {coverage}"
        );
    }
}

#[test]
fn a_wrong_interval_would_fail_the_coverage_check() {
    // The check can fail: an interval at 80% held to the 95% band misses it.
    let mut draws = Draws(3);
    let truth = true_quantile(50.0);
    let level = Confidence::new(0.8).expect("a level");
    let held = (0..1000)
        .filter(|_| {
            let mut sample: Vec<f64> = (0..200)
                .map(|_| (MU + SIGMA * draws.normal()).exp())
                .collect();
            sample.sort_by(f64::total_cmp);
            let (lo, hi) = quantile_bounds(&sample, 50.0, level)
                .interval()
                .expect("bounds");
            lo <= truth && truth <= hi
        })
        .count();
    let coverage = held as f64 / 1000.0;
    assert!(!(0.93..=0.97).contains(&coverage), "{coverage}");
}
