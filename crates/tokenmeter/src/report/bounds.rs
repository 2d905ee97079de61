//! [`Bounds`]: confidence intervals of a percentile (order statistics, no resampling) and of a
//! mean (Student t), and [`SummaryBounds`], those of every figure of a [`Summary`].

#[cfg(doc)]
use super::Summary;
use super::confidence::Confidence;

/// A confidence interval, or why there is none.
///
/// # Examples
///
/// ```
/// use tokenmeter::report::{Bounds, Confidence, quantile_bounds};
///
/// let sorted: Vec<f64> = (1..=50).map(f64::from).collect();
/// // p99 of 50 samples: no 95% interval exists; 368 samples would give one.
/// assert_eq!(
///     quantile_bounds(&sorted, 99.0, Confidence::P95),
///     Bounds::TooFew { have: 50, need: 368 }
/// );
/// assert!(quantile_bounds(&sorted, 50.0, Confidence::P95).interval().is_some());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bounds {
    /// The interval: the true value lies in `lo..=hi` at the level asked.
    Within {
        /// Lower end.
        lo: f64,
        /// Upper end.
        hi: f64,
    },
    /// The sample is too small for an interval at this level: it has `have` samples and
    /// `need` would do (`u64::MAX`: no sample size would, as for the maximum).
    TooFew {
        /// Samples there are.
        have: u64,
        /// Samples an interval needs.
        need: u64,
    },
}

impl Bounds {
    /// `(lo, hi)`, or `None` when the sample is too small.
    pub fn interval(self) -> Option<(f64, f64)> {
        match self {
            Self::Within { lo, hi } => Some((lo, hi)),
            Self::TooFew { .. } => None,
        }
    }

    /// The larger distance from `point` to either end (an asymmetric interval shown as one
    /// `±`), or `None` when the sample is too small.
    ///
    /// ```
    /// use tokenmeter::report::Bounds;
    /// assert_eq!(Bounds::Within { lo: 9.0, hi: 12.0 }.half_width(10.0), Some(2.0));
    /// ```
    pub fn half_width(self, point: f64) -> Option<f64> {
        self.interval()
            .map(|(lo, hi)| (point - lo).max(hi - point).max(0.0))
    }
}

/// The confidence interval of the `percent`-th percentile (0 < `percent` < 100) of the
/// distribution `sorted` (ascending, i.i.d. samples) was drawn from: distribution-free, from
/// the order statistics. Each end is the order statistic whose binomial tail probability is
/// (1 − level)/2, interpolated linearly in that probability between the two neighbouring order
/// statistics (as Hettmansperger and Sheather do for the median), so the coverage is close to
/// the level rather than above it. No resampling; O(n).
///
/// [`Bounds::TooFew`] when even the smallest or largest sample cannot bound the percentile at
/// this level (p99 needs 368 samples at 95%, p95 72, p90 36, the median 6; see
/// [`quantile_sample_needed`]), and for a `percent` outside 0 < `percent` < 100.
///
/// # Examples
///
/// ```
/// use tokenmeter::report::{Confidence, quantile_bounds, percentile};
///
/// let sorted: Vec<f64> = (0..200).map(|i| f64::from(i) / 10.0).collect();
/// let (lo, hi) = quantile_bounds(&sorted, 50.0, Confidence::P95).interval().unwrap();
/// let p50 = percentile(&sorted, 50.0).unwrap();
/// assert!(lo < p50 && p50 < hi && hi - lo < 3.0);
/// ```
pub fn quantile_bounds(sorted: &[f64], percent: f64, level: Confidence) -> Bounds {
    let n = sorted.len() as u64;
    let need = quantile_sample_needed(percent, level);
    if n < need {
        return Bounds::TooFew { have: n, need };
    }
    let q = percent / 100.0;
    let a = level.tail();
    let binomial = Binomial::new(n, q);
    // X_(k) (1-based) lies below the percentile when at least k samples do: B >= k, where
    // B ~ Binomial(n, q). Lower end: the largest l with P(B < l) <= a.
    let below = binomial.cdf_walk_up(a);
    let lo = interpolate(sorted, below.rank, below.at_rank, below.next, a, 1);
    // Upper end: the smallest u with P(B >= u) <= a.
    let above = binomial.sf_walk_down(a);
    let hi = interpolate(sorted, above.rank, above.at_rank, above.next, a, -1);
    Bounds::Within { lo, hi }
}

/// The smallest sample for which [`quantile_bounds`] gives an interval of the `percent`-th
/// percentile at `level`: both (1 − q)ⁿ and qⁿ at most (1 − level)/2, q = `percent`/100.
/// `u64::MAX` for a `percent` outside 0 < `percent` < 100.
///
/// ```
/// use tokenmeter::report::{Confidence, quantile_sample_needed};
/// let c = Confidence::P95;
/// assert_eq!(
///     [50.0, 90.0, 95.0, 99.0].map(|p| quantile_sample_needed(p, c)),
///     [6, 36, 72, 368]
/// );
/// ```
pub fn quantile_sample_needed(percent: f64, level: Confidence) -> u64 {
    let q = percent / 100.0;
    if !(q > 0.0 && q < 1.0) {
        return u64::MAX;
    }
    let a = level.tail().ln();
    let n = (a / (1.0 - q).ln()).max(a / q.ln());
    // Guard the rounding of the logarithms: the smallest integer whose powers are small enough.
    let mut need = n.floor().max(1.0) as u64;
    while (1.0 - q).powf(need as f64) > level.tail() || q.powf(need as f64) > level.tail() {
        need += 1;
    }
    need
}

/// The confidence interval of the mean of the distribution `values` were drawn from (Student
/// t with n − 1 degrees of freedom, the sample's standard deviation with n − 1). At least 2
/// values.
///
/// ```
/// use tokenmeter::report::{Confidence, mean_bounds};
/// let (lo, hi) = mean_bounds(&[9.0, 10.0, 11.0], Confidence::P95).interval().unwrap();
/// assert!((lo - 7.515_9).abs() < 1e-3 && (hi - 12.484_1).abs() < 1e-3);
/// ```
pub fn mean_bounds(values: &[f64], level: Confidence) -> Bounds {
    let n = values.len() as u64;
    if n < 2 {
        return Bounds::TooFew { have: n, need: 2 };
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64;
    let half = level.t(n - 1) * (var / n as f64).sqrt();
    Bounds::Within {
        lo: mean - half,
        hi: mean + half,
    }
}

/// The confidence intervals of the figures of a [`Summary`] of the same values: its
/// percentiles ([`quantile_bounds`]) and its mean ([`mean_bounds`]). The maximum has none.
///
/// # Examples
///
/// ```
/// use tokenmeter::report::{Confidence, Summary, SummaryBounds};
///
/// let values: Vec<f64> = (1..=100).map(f64::from).collect();
/// let summary = Summary::of(values.clone());
/// let bounds = SummaryBounds::of(values, Confidence::P95);
/// let (lo, hi) = bounds.p50.interval().unwrap();
/// assert!(lo < summary.p50 && summary.p50 < hi);
/// assert!(bounds.p99.interval().is_none()); // 100 samples cannot bound p99 at 95%
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct SummaryBounds {
    /// Of the median.
    pub p50: Bounds,
    /// Of the 90th percentile.
    pub p90: Bounds,
    /// Of the 95th percentile.
    pub p95: Bounds,
    /// Of the 99th percentile.
    pub p99: Bounds,
    /// Of the mean.
    pub mean: Bounds,
}

impl SummaryBounds {
    /// Intervals computed another way (a bootstrap, say), one per figure.
    ///
    /// ```
    /// use tokenmeter::report::{Bounds, SummaryBounds};
    /// let few = Bounds::TooFew { have: 1, need: 2 };
    /// let b = SummaryBounds::new([few; 5]);
    /// assert_eq!(b.too_few().len(), 5);
    /// ```
    pub fn new([p50, p90, p95, p99, mean]: [Bounds; 5]) -> Self {
        Self {
            p50,
            p90,
            p95,
            p99,
            mean,
        }
    }

    /// Each figure's name (`p50`, `p90`, `p95`, `p99`, `mean`) and its interval, in that order.
    ///
    /// ```
    /// use tokenmeter::report::{Confidence, SummaryBounds};
    /// let b = SummaryBounds::of((1..=50).map(f64::from).collect(), Confidence::P95);
    /// assert_eq!(b.named().map(|(name, _)| name), ["p50", "p90", "p95", "p99", "mean"]);
    /// ```
    pub fn named(&self) -> [(&'static str, Bounds); 5] {
        [
            ("p50", self.p50),
            ("p90", self.p90),
            ("p95", self.p95),
            ("p99", self.p99),
            ("mean", self.mean),
        ]
    }

    /// The figures whose sample was too small for an interval: (name, have, need).
    ///
    /// ```
    /// use tokenmeter::report::{Confidence, SummaryBounds};
    /// let b = SummaryBounds::of((1..=200).map(f64::from).collect(), Confidence::P95);
    /// assert_eq!(b.too_few(), vec![("p99", 200, 368)]);
    /// ```
    pub fn too_few(&self) -> Vec<(&'static str, u64, u64)> {
        self.named()
            .into_iter()
            .filter_map(|(name, b)| match b {
                Bounds::TooFew { have, need } => Some((name, have, need)),
                Bounds::Within { .. } => None,
            })
            .collect()
    }

    /// The intervals of `values` (any order; values that are not finite are left out, as
    /// [`Summary::of`] does) at `level`.
    pub fn of(mut values: Vec<f64>, level: Confidence) -> Self {
        values.retain(|v| v.is_finite());
        values.sort_by(f64::total_cmp);
        let at = |p| quantile_bounds(&values, p, level);
        Self {
            p50: at(50.0),
            p90: at(90.0),
            p95: at(95.0),
            p99: at(99.0),
            mean: mean_bounds(&values, level),
        }
    }
}

/// The rank found by a walk, the tail probability there and at the next rank inwards.
struct Walk {
    rank: u64,
    at_rank: f64,
    next: f64,
}

/// `sorted`'s `rank`-th order statistic (1-based) moved towards the next one inwards
/// (`step` = 1 up, −1 down) by the fraction of the tail probability `a` lies between them.
fn interpolate(sorted: &[f64], rank: u64, at_rank: f64, next: f64, a: f64, step: i64) -> f64 {
    let x = |k: u64| sorted[(k - 1) as usize];
    let inner = rank as i64 + step;
    if inner < 1 || inner as u64 > sorted.len() as u64 || next <= at_rank {
        return x(rank);
    }
    let lambda = ((a - at_rank) / (next - at_rank)).clamp(0.0, 1.0);
    x(rank) + lambda * (x(inner as u64) - x(rank))
}

/// Binomial(n, q) probabilities, summed in log space so large n neither underflows nor
/// overflows.
struct Binomial {
    n: u64,
    ln_q: f64,
    ln_1q: f64,
    /// log of the largest probability, and the sum of all divided by it.
    ln_mode: f64,
    total: f64,
}

impl Binomial {
    fn new(n: u64, q: f64) -> Self {
        let (ln_q, ln_1q) = (q.ln(), (1.0 - q).ln());
        let mut b = Self {
            n,
            ln_q,
            ln_1q,
            ln_mode: 0.0,
            total: 1.0,
        };
        let mut ln_max = f64::NEG_INFINITY;
        b.each_up(|_, lp| {
            ln_max = ln_max.max(lp);
            true
        });
        b.ln_mode = ln_max;
        let mut total = 0.0;
        b.each_up(|_, lp| {
            total += (lp - ln_max).exp();
            true
        });
        b.total = total;
        b
    }

    /// log P(B = k) for k = 0, 1, … while `f` returns true.
    fn each_up(&self, mut f: impl FnMut(u64, f64) -> bool) {
        let mut lp = self.n as f64 * self.ln_1q;
        let ratio = self.ln_q - self.ln_1q;
        for k in 0..=self.n {
            if !f(k, lp) {
                return;
            }
            if k < self.n {
                lp += ((self.n - k) as f64 / (k + 1) as f64).ln() + ratio;
            }
        }
    }

    /// log P(B = k) for k = n, n − 1, … while `f` returns true.
    fn each_down(&self, mut f: impl FnMut(u64, f64) -> bool) {
        let mut lp = self.n as f64 * self.ln_q;
        let ratio = self.ln_1q - self.ln_q;
        for k in (0..=self.n).rev() {
            if !f(k, lp) {
                return;
            }
            if k > 0 {
                lp += (k as f64 / (self.n - k + 1) as f64).ln() + ratio;
            }
        }
    }

    fn p(&self, lp: f64) -> f64 {
        (lp - self.ln_mode).exp() / self.total
    }

    /// The largest l >= 1 with P(B < l) <= a, that probability, and P(B < l + 1).
    fn cdf_walk_up(&self, a: f64) -> Walk {
        let (mut below, mut rank, mut at_rank, mut next) = (0.0, 1, 0.0, 0.0);
        self.each_up(|k, lp| {
            // `below` is P(B < k) before adding P(B = k).
            let with = below + self.p(lp);
            if with <= a {
                below = with;
                rank = k + 1;
                at_rank = with;
                true
            } else {
                next = with;
                false
            }
        });
        Walk {
            rank: rank.min(self.n),
            at_rank,
            next,
        }
    }

    /// The smallest u <= n with P(B >= u) <= a, that probability, and P(B >= u − 1).
    fn sf_walk_down(&self, a: f64) -> Walk {
        let (mut above, mut rank, mut at_rank, mut next) = (0.0, self.n, 0.0, 0.0);
        self.each_down(|k, lp| {
            let with = above + self.p(lp);
            if with <= a {
                above = with;
                rank = k;
                at_rank = with;
                true
            } else {
                next = with;
                false
            }
        });
        Walk {
            rank: rank.max(1),
            at_rank,
            next,
        }
    }
}
