//! Which rate a sweep runs next: the given rates in turn, or a search that doubles, halves,
//! then bisects to the resolution.

use super::capacity::capacity_at;
use super::step::SweepStep;

/// Steps of an automatic sweep, at most.
pub(crate) const MAX_AUTO_STEPS: usize = 12;

/// Which rates to run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Rates {
    /// These, in order.
    Given(Vec<f64>),
    /// A search from `start`: doubling while rates pass, halving while they fail, then
    /// bisecting until the failing rate is within `resolution` of the passing one.
    Search {
        /// The first rate.
        start: f64,
        /// The relative resolution, e.g. 0.1.
        resolution: f64,
    },
}

impl Rates {
    /// The next rate to run after `done`, or `None` when the sweep is over.
    pub(crate) fn next(&self, done: &[SweepStep], target: f64) -> Option<f64> {
        let (start, resolution) = match self {
            Rates::Given(rates) => return rates.get(done.len()).copied(),
            Rates::Search { start, resolution } => (*start, *resolution),
        };
        if done.is_empty() {
            return Some(start);
        }
        if done.len() >= MAX_AUTO_STEPS {
            return None;
        }
        let at = capacity_at(done, target, None);
        let next = match (at.passed_at, at.failed_at) {
            (Some(pass), None) => pass * 2.0,
            (None, Some(fail)) => fail / 2.0,
            (Some(pass), Some(fail)) if fail > pass * (1.0 + resolution) => {
                round(pass + (fail - pass) / 2.0)
            }
            _ => return None,
        };
        // Halving to nothing, or a midpoint already run (rounding): the search is over.
        let known = done.iter().any(|s| (s.rate - next).abs() < 1e-9);
        (next >= start / 1024.0 && !known).then_some(next)
    }
}

/// `rate` to 3 significant digits (midpoints print as what they are).
pub(super) fn round(rate: f64) -> f64 {
    if rate <= 0.0 || !rate.is_finite() {
        return rate;
    }
    let scale = 10f64.powi(2 - rate.log10().floor() as i32);
    (rate * scale).round() / scale
}
