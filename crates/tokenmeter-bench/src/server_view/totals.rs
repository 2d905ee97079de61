//! A histogram's `_sum` and `_count`, and the exact mean of the observations between two
//! scrapes: Δ`_sum` / Δ`_count`. Unlike a percentile from the buckets, whose resolution is a
//! bucket's width, this mean is exact (to the exporter's printed digits).

use serde::Serialize;

/// `_sum` and `_count` of one histogram family, summed over its series.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Totals {
    /// Σ of the observations (`_sum`).
    pub(crate) sum: f64,
    /// Observations (`_count`).
    pub(crate) count: f64,
}

impl Totals {
    /// The observations made after `earlier` and up to `self`. A count that fell is a restart
    /// of the server: then `self` alone, as Prometheus's `increase` treats a reset.
    pub(crate) fn since(&self, earlier: &Totals) -> Totals {
        if self.count < earlier.count {
            return *self;
        }
        Totals {
            sum: self.sum - earlier.sum,
            count: self.count - earlier.count,
        }
    }

    /// The exact mean of the observations; `None` without one.
    pub(crate) fn mean(&self) -> Option<Mean> {
        let mean = self.sum / self.count;
        (self.count > 0.0 && mean.is_finite()).then_some(Mean {
            mean_s: mean,
            count: self.count,
        })
    }
}

/// An exact mean (seconds) and how many observations it is of.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Mean {
    /// The mean, in seconds.
    pub(crate) mean_s: f64,
    /// Observations.
    pub(crate) count: f64,
}

/// The `_sum` and `_count` of each histogram the reports read exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Sums {
    /// TTFT.
    pub(crate) ttft: Option<Totals>,
    /// Inter-token latency.
    pub(crate) itl: Option<Totals>,
    /// End to end (arrival to the end of the request).
    pub(crate) e2e: Option<Totals>,
    /// Queue time.
    pub(crate) queue: Option<Totals>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_of_the_deltas_is_exact_and_a_reset_starts_over() {
        let earlier = Totals {
            sum: 1.5,
            count: 10.0,
        };
        let later = Totals {
            sum: 2.1,
            count: 13.0,
        };
        let mean = later.since(&earlier).mean().unwrap();
        assert!((mean.mean_s - 0.2).abs() < 1e-12 && mean.count == 3.0);
        assert_eq!(later.since(&later).mean(), None, "nothing observed");
        let restarted = Totals {
            sum: 0.3,
            count: 1.0,
        };
        assert_eq!(restarted.since(&earlier), restarted);
    }
}
