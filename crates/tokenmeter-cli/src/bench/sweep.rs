//! `--sweep`: runs increasing request rates and finds the highest one at which SLO attainment
//! reaches the target (DistServe's goodput, `docs/metrics.md` §5).

use serde::Serialize;

use crate::bench::slo::Slo;
use crate::bench::summary::BenchSummary;

/// Steps of an automatic sweep, at most.
pub(crate) const MAX_AUTO_STEPS: usize = 8;

/// One rate of a sweep.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SweepStep {
    /// Offered rate (requests per second).
    pub(crate) rate: f64,
    /// The run's summary.
    pub(crate) summary: BenchSummary,
}

/// A whole sweep.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SweepResult {
    /// The objectives.
    pub(crate) slo: Slo,
    /// The attainment a rate must reach.
    pub(crate) target: f64,
    /// Every rate run, in order.
    pub(crate) steps: Vec<SweepStep>,
    /// The highest rate whose attainment reached the target.
    pub(crate) capacity: Option<f64>,
    /// The capacity at each attainment goal (the target, 90% and 99%).
    pub(crate) capacities: Vec<Capacity>,
}

/// The capacity at one attainment goal.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Capacity {
    /// The attainment goal.
    pub(crate) goal: f64,
    /// The highest rate that reached it (requests per second).
    pub(crate) rate: Option<f64>,
    /// The same per GPU, with `--gpus`.
    pub(crate) per_gpu: Option<f64>,
}

/// The capacity at the target and at 90% and 99%, per GPU when `gpus` is given.
pub(crate) fn capacities(steps: &[SweepStep], target: f64, gpus: Option<u32>) -> Vec<Capacity> {
    let mut goals = vec![target, 0.9, 0.99];
    goals.sort_by(f64::total_cmp);
    goals.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    goals
        .into_iter()
        .map(|goal| {
            let rate = capacity(steps, goal);
            Capacity {
                goal,
                rate,
                per_gpu: rate.zip(gpus).map(|(r, g)| r / f64::from(g)),
            }
        })
        .collect()
}

/// Which rates to run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Rates {
    /// These, in order.
    Given(Vec<f64>),
    /// Doubling from `start` until attainment falls below the target.
    Doubling {
        /// The first rate.
        start: f64,
    },
}

impl Rates {
    /// The next rate to run after `done`, or `None` when the sweep is over.
    pub(crate) fn next(&self, done: &[SweepStep], target: f64) -> Option<f64> {
        match self {
            Rates::Given(rates) => rates.get(done.len()).copied(),
            Rates::Doubling { start } => match done.last() {
                None => Some(*start),
                Some(_) if done.len() >= MAX_AUTO_STEPS => None,
                Some(last) if last.summary.attainment < target => None,
                Some(last) => Some(last.rate * 2.0),
            },
        }
    }
}

/// The highest rate whose attainment reached `target`.
pub(crate) fn capacity(steps: &[SweepStep], target: f64) -> Option<f64> {
    steps
        .iter()
        .filter(|s| s.summary.attainment >= target)
        .map(|s| s.rate)
        .max_by(f64::total_cmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(rate: f64, attainment: f64) -> SweepStep {
        SweepStep {
            rate,
            summary: BenchSummary {
                attainment,
                ..BenchSummary::default()
            },
        }
    }

    #[test]
    fn doubling_stops_after_the_first_miss() {
        let rates = Rates::Doubling { start: 1.0 };
        let mut done = Vec::new();
        let attainment = [1.0, 0.97, 0.91, 0.5, 1.0];
        while let Some(rate) = rates.next(&done, 0.9) {
            done.push(step(rate, attainment[done.len()]));
        }
        let run: Vec<f64> = done.iter().map(|s| s.rate).collect();
        assert_eq!(run, [1.0, 2.0, 4.0, 8.0]);
        assert_eq!(capacity(&done, 0.9), Some(4.0));
        let at = capacities(&done, 0.9, Some(2));
        let goals: Vec<(f64, Option<f64>, Option<f64>)> =
            at.iter().map(|c| (c.goal, c.rate, c.per_gpu)).collect();
        assert_eq!(
            goals,
            [(0.9, Some(4.0), Some(2.0)), (0.99, Some(1.0), Some(0.5))]
        );
    }

    #[test]
    fn given_rates_all_run_and_doubling_is_bounded() {
        let rates = Rates::Given(vec![1.0, 3.0]);
        let done = vec![step(1.0, 0.2)];
        assert_eq!(rates.next(&done, 0.9), Some(3.0));
        assert_eq!(capacity(&done, 0.9), None);
        let always = Rates::Doubling { start: 1.0 };
        let mut done = Vec::new();
        while let Some(rate) = always.next(&done, 0.9) {
            done.push(step(rate, 1.0));
        }
        assert_eq!(done.len(), MAX_AUTO_STEPS);
    }
}
