//! A Prometheus histogram as its cumulative buckets, the observations between two scrapes
//! (bucket deltas), and its quantiles: the bucket each falls in, and the estimate inside it
//! interpolated the way PromQL's `histogram_quantile` does.

use serde::Serialize;

/// Cumulative bucket counts by upper bound `le`, sorted by `le`, the last one `+Inf`; the
/// series of one family summed bucket by bucket.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Buckets(pub(crate) Vec<(f64, f64)>);

impl Buckets {
    /// Adds one series' bucket `(le, count)` into the family's sum.
    pub(crate) fn add(&mut self, le: f64, count: f64) {
        match self.0.iter_mut().find(|(l, _)| *l == le) {
            Some((_, c)) => *c += count,
            None => {
                self.0.push((le, count));
                self.0.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
        }
    }

    /// Observations in all (the `+Inf` bucket).
    pub(crate) fn total(&self) -> f64 {
        self.0
            .last()
            .filter(|(le, _)| le.is_infinite())
            .map_or(0.0, |(_, c)| *c)
    }

    /// The observations made after `earlier` and up to `self`. A counter that fell, or a
    /// bucket layout that changed, is a restart of the server: then `self` alone, as
    /// Prometheus's `increase` treats a reset.
    pub(crate) fn since(&self, earlier: &Buckets) -> Buckets {
        let same_layout = self.0.len() == earlier.0.len()
            && self.0.iter().zip(&earlier.0).all(|(a, b)| a.0 == b.0);
        let fell = self.0.iter().zip(&earlier.0).any(|(a, b)| a.1 < b.1);
        if !same_layout || fell {
            return self.clone();
        }
        Buckets(
            self.0
                .iter()
                .zip(&earlier.0)
                .map(|(a, b)| (a.0, a.1 - b.1))
                .collect(),
        )
    }

    /// The `q` quantile (0..=1), as `histogram_quantile` estimates it, with the bucket it
    /// falls in: find the bucket holding rank `q × total`, interpolate linearly between its
    /// lower and upper bound (the first bucket's lower bound is 0); a rank in the `+Inf`
    /// bucket gives the highest finite bound. `None` without observations or without a `+Inf`
    /// bucket and one finite bucket.
    pub(crate) fn quantile(&self, q: f64) -> Option<Estimate> {
        let buckets = &self.0;
        let total = self.total();
        if buckets.len() < 2 || total.is_nan() || total <= 0.0 || !(0.0..=1.0).contains(&q) {
            return None;
        }
        let rank = q * total;
        let b = buckets.iter().position(|(_, c)| *c >= rank)?;
        if b == buckets.len() - 1 {
            let highest = buckets[b - 1].0;
            return Some(Estimate {
                estimate: highest,
                bucket: (highest, None),
            });
        }
        let (end, count) = buckets[b];
        let (start, before) = match b {
            0 => (end.min(0.0), 0.0),
            _ => buckets[b - 1],
        };
        let bucket = (start, Some(end));
        let inside = count - before;
        let estimate = if (b == 0 && end <= 0.0) || inside <= 0.0 {
            end
        } else {
            start + (end - start) * (rank - before) / inside
        };
        Some(Estimate { estimate, bucket })
    }

    /// The percentiles the reports show.
    pub(crate) fn percentiles(&self) -> Option<Percentiles> {
        Some(Percentiles {
            count: self.total(),
            p50: self.quantile(0.5)?,
            p90: self.quantile(0.9)?,
            p95: self.quantile(0.95)?,
            p99: self.quantile(0.99)?,
        })
    }
}

/// A percentile of a histogram: the bucket it falls in, which is all the buckets know, and
/// the linear estimate inside it. In `--json`: `{"estimate": 0.167, "bucket": [0.1, 0.25]}`
/// (`null` as the upper bound of the `+Inf` bucket).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Estimate {
    /// Interpolated linearly inside the bucket, as `histogram_quantile` does: an estimate,
    /// off by up to the bucket's width.
    pub(crate) estimate: f64,
    /// The bucket `(lower, upper]` the percentile falls in; `None` as the upper bound: `+Inf`.
    pub(crate) bucket: (f64, Option<f64>),
}

impl Estimate {
    /// The bucket in milliseconds, as the reports print it: `(100, 250]`, `(250, +Inf)`.
    pub(crate) fn interval_ms(&self) -> String {
        let ms = |s: f64| {
            let text = format!("{:.3}", s * 1e3);
            let text = text.trim_end_matches('0').trim_end_matches('.');
            if text == "-0" {
                "0".to_owned()
            } else {
                text.to_owned()
            }
        };
        match self.bucket {
            (lo, Some(hi)) => format!("({}, {}]", ms(lo), ms(hi)),
            (lo, None) => format!("({}, +Inf)", ms(lo)),
        }
    }
}

/// Percentiles (seconds) of a histogram's observations, each as its bucket and an estimate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Percentiles {
    /// Observations.
    pub(crate) count: f64,
    /// Median.
    pub(crate) p50: Estimate,
    /// 90th percentile.
    pub(crate) p90: Estimate,
    /// 95th percentile.
    pub(crate) p95: Estimate,
    /// 99th percentile.
    pub(crate) p99: Estimate,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buckets(pairs: &[(f64, f64)]) -> Buckets {
        let mut b = Buckets::default();
        for &(le, c) in pairs {
            b.add(le, c);
        }
        b
    }

    const INF: f64 = f64::INFINITY;

    #[test]
    fn quantiles_of_the_deltas_match_the_hand_computed_values() {
        let earlier = buckets(&[(0.1, 1.0), (0.5, 2.0), (1.0, 2.0), (INF, 2.0)]);
        let later = buckets(&[(1.0, 10.0), (0.1, 2.0), (INF, 10.0), (0.5, 6.0)]);
        let delta = later.since(&earlier);
        assert_eq!(delta.0, [(0.1, 1.0), (0.5, 4.0), (1.0, 8.0), (INF, 8.0)]);
        // p50: rank 4 of 8 lies in (0.1, 0.5], which holds ranks 2..4: 0.1 + 0.4 × 3/3.
        assert!((delta.quantile(0.5).unwrap().estimate - 0.5).abs() < 1e-12);
        // p95: rank 7.6 in (0.5, 1], ranks 5..8: 0.5 + 0.5 × 3.6/4 = 0.95.
        assert!((delta.quantile(0.95).unwrap().estimate - 0.95).abs() < 1e-12);
        // p10: rank 0.8 in the first bucket, from 0: 0.1 × 0.8.
        assert!((delta.quantile(0.1).unwrap().estimate - 0.08).abs() < 1e-12);
        // Each with the bucket it falls in: all the histogram knows.
        assert_eq!(delta.quantile(0.5).unwrap().bucket, (0.1, Some(0.5)));
        assert_eq!(delta.quantile(0.95).unwrap().interval_ms(), "(500, 1000]");
        assert_eq!(delta.quantile(0.1).unwrap().interval_ms(), "(0, 100]");
        let json = serde_json::to_value(delta.quantile(0.95).unwrap()).unwrap();
        assert_eq!(json["bucket"], serde_json::json!([0.5, 1.0]));
    }

    #[test]
    fn a_rank_in_the_inf_bucket_gives_the_highest_finite_bound() {
        let b = buckets(&[(0.1, 1.0), (0.2, 1.0), (INF, 4.0)]);
        let p99 = b.quantile(0.99).unwrap();
        assert_eq!((p99.estimate, p99.bucket), (0.2, (0.2, None)));
        assert_eq!(p99.interval_ms(), "(200, +Inf)");
    }

    #[test]
    fn no_observations_no_quantile_and_a_reset_starts_over() {
        let empty = buckets(&[(0.1, 0.0), (INF, 0.0)]);
        assert_eq!(empty.quantile(0.5), None);
        assert_eq!(empty.percentiles(), None);
        let before = buckets(&[(0.1, 5.0), (INF, 9.0)]);
        let restarted = buckets(&[(0.1, 1.0), (INF, 2.0)]);
        assert_eq!(restarted.since(&before), restarted);
    }
}
