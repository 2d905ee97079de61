//! The capacity of a sweep at an attainment goal: the highest rate that passed below the
//! lowest that failed, never above the best rate served.

use serde::Serialize;

use super::step::SweepStep;

/// The capacity at one attainment goal.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Capacity {
    /// The attainment goal.
    pub(crate) goal: f64,
    /// The capacity (requests per second): the highest offered rate that passed below the
    /// lowest that failed, or the best rate any step was served at when that is lower.
    pub(crate) rate: Option<f64>,
    /// The highest offered rate that passed below the lowest that failed.
    pub(crate) passed_at: Option<f64>,
    /// The lowest rate above it that failed: `None` when the capacity was not reached (every
    /// rate run above it passed).
    pub(crate) failed_at: Option<f64>,
    /// The same per GPU, with `--gpus`.
    pub(crate) per_gpu: Option<f64>,
}

impl Capacity {
    /// In words: `12.5 req/s (15.0 failed)`, `≥ 32.0 req/s (not reached)` or `none (even 1.0
    /// req/s failed)`.
    pub(crate) fn describe(&self) -> String {
        let per_gpu = self
            .per_gpu
            .map_or(String::new(), |g| format!(", {g:.2} req/s per GPU"));
        let served = match (self.rate, self.passed_at) {
            (Some(rate), Some(passed)) if rate < passed => {
                format!(", the best served rate; {passed:.2} req/s offered passed")
            }
            _ => String::new(),
        };
        match (self.rate, self.failed_at) {
            (Some(rate), Some(failed)) => {
                format!("{rate:.2} req/s{per_gpu} ({failed:.2} req/s failed{served})")
            }
            (Some(rate), None) => format!(
                "≥ {rate:.2} req/s{per_gpu} (not reached: the highest rate run still passed)"
            ),
            (None, Some(failed)) => format!("none (even {failed:.2} req/s failed)"),
            (None, None) => "none (no rate was run)".to_owned(),
        }
    }
}

/// The capacity at `goal`: the highest rate that passed below the lowest rate that failed
/// ([`SweepStep::passes`]), never above the highest rate any step was served at.
pub(crate) fn capacity_at(steps: &[SweepStep], goal: f64, gpus: Option<u32>) -> Capacity {
    let lowest_fail = steps
        .iter()
        .filter(|s| !s.passes(goal))
        .map(|s| s.rate)
        .min_by(f64::total_cmp);
    let best_served = steps
        .iter()
        .filter_map(|s| s.served_rate)
        .max_by(f64::total_cmp);
    let passed_at = steps
        .iter()
        .filter(|s| s.passes(goal) && lowest_fail.is_none_or(|f| s.rate < f))
        .map(|s| s.rate)
        .max_by(f64::total_cmp);
    let rate = passed_at.map(|rate| best_served.map_or(rate, |best| rate.min(best)));
    Capacity {
        goal,
        rate,
        passed_at,
        failed_at: lowest_fail,
        per_gpu: rate.zip(gpus).map(|(r, g)| r / f64::from(g)),
    }
}

/// The capacity at the target and at 90% and 99% (each goal once), per GPU when `gpus` is given.
pub(crate) fn capacities(steps: &[SweepStep], target: f64, gpus: Option<u32>) -> Vec<Capacity> {
    let mut goals = vec![target, 0.9, 0.99];
    goals.sort_by(f64::total_cmp);
    goals.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    goals
        .into_iter()
        .map(|goal| capacity_at(steps, goal, gpus))
        .collect()
}

/// The highest passing rate below the lowest failing one at `target`.
pub(crate) fn capacity(steps: &[SweepStep], target: f64) -> Option<f64> {
    capacity_at(steps, target, None).rate
}
