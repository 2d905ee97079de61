//! [`StatBounds`]: the intervals of one row of the summary (p50, p90, p95, p99, mean).

use tokenmeter::report::{Bounds, Confidence, SummaryBounds};

/// The confidence intervals of one statistic's p50, p90, p95, p99 and mean, in the units of
/// the statistic (seconds for latencies, tokens for token counts). The maximum has none: no
/// sample bounds the largest value the distribution can take.
///
/// ```
/// use tokenmeter::report::Confidence;
/// use tokenmeter_bench::StatBounds;
///
/// let values: Vec<f64> = (1..=200).map(|i| f64::from(i) / 1000.0).collect();
/// let bounds = StatBounds::of(values, Confidence::P95);
/// let (lo, hi) = bounds.p50.interval().unwrap();
/// assert!(lo < 0.1005 && 0.1005 < hi);
/// // 200 samples cannot bound p99 at 95%: 368 would.
/// assert_eq!(bounds.too_few(), vec![("p99", 200, 368)]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct StatBounds {
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

/// Intervals made from values, read by name.
///
/// ```
/// use tokenmeter::report::{Bounds, Confidence};
/// use tokenmeter_bench::StatBounds;
///
/// let bounds = StatBounds::of(vec![3.0, 1.0, 2.0, 5.0, 4.0, 6.0, 7.0], Confidence::P95);
/// let (name, p50) = bounds.named()[0];
/// assert_eq!(name, "p50");
/// assert!(matches!(p50, Bounds::Within { .. }));
/// assert!(bounds.too_few().iter().any(|&(name, have, _)| name == "p99" && have == 7));
/// ```
impl StatBounds {
    /// Order-statistic intervals of each percentile and a Student-t interval of the mean of
    /// `values` (any order), as [`SummaryBounds::of`] computes them.
    pub fn of(values: Vec<f64>, level: Confidence) -> Self {
        Self::from(SummaryBounds::of(values, level))
    }

    /// Each statistic's name (`p50`, …, `mean`) and bounds, in the table's order.
    pub fn named(&self) -> [(&'static str, Bounds); 5] {
        [
            ("p50", self.p50),
            ("p90", self.p90),
            ("p95", self.p95),
            ("p99", self.p99),
            ("mean", self.mean),
        ]
    }

    /// The statistics whose sample was too small for an interval: (name, have, need).
    pub fn too_few(&self) -> Vec<(&'static str, u64, u64)> {
        self.named()
            .into_iter()
            .filter_map(|(name, b)| match b {
                Bounds::TooFew { have, need } => Some((name, have, need)),
                Bounds::Within { .. } => None,
            })
            .collect()
    }
}

impl From<SummaryBounds> for StatBounds {
    fn from(b: SummaryBounds) -> Self {
        Self {
            p50: b.p50,
            p90: b.p90,
            p95: b.p95,
            p99: b.p99,
            mean: b.mean,
        }
    }
}

impl StatBounds {
    /// The same bounds for every statistic.
    pub(crate) fn uniform(b: Bounds) -> Self {
        Self {
            p50: b,
            p90: b,
            p95: b,
            p99: b,
            mean: b,
        }
    }
}
