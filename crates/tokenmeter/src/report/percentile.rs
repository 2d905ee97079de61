//! Percentiles computed like `numpy.percentile` (linear interpolation between closest ranks).

/// The `p`-th percentile (0–100) of `sorted` (ascending), interpolating linearly between the
/// closest ranks exactly as `numpy.percentile` does by default. `None` for an empty slice.
///
/// # Examples
///
/// ```
/// use tokenmeter::report::percentile;
/// assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), Some(2.5));
/// assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 90.0), Some(3.7));
/// assert_eq!(percentile(&[], 50.0), None);
/// ```
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    weighted_percentile(sorted.len() as u64, p, |i| sorted[i as usize])
}

/// The same percentile over a multiset given as `(value, weight)` pairs sorted by value: as if
/// each value were repeated `weight` times. Used for the token-weighted ITL.
///
/// # Examples
///
/// ```
/// use tokenmeter::report::{percentile, percentile_weighted};
/// let pairs = [(1.0, 2), (5.0, 1)];
/// assert_eq!(percentile_weighted(&pairs, 50.0), percentile(&[1.0, 1.0, 5.0], 50.0));
/// ```
pub fn percentile_weighted(sorted: &[(f64, u64)], p: f64) -> Option<f64> {
    let total = sorted
        .iter()
        .map(|&(_, w)| w)
        .fold(0u64, u64::saturating_add);
    let mut cumulative = Vec::with_capacity(sorted.len());
    let mut sum: u64 = 0;
    for &(_, w) in sorted {
        sum = sum.saturating_add(w);
        cumulative.push(sum);
    }
    weighted_percentile(total, p, |i| {
        let at = cumulative.partition_point(|&c| c <= i);
        sorted[at].0
    })
}

fn weighted_percentile(n: u64, p: f64, nth: impl Fn(u64) -> f64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let rank = (p.clamp(0.0, 100.0) / 100.0) * (n - 1) as f64;
    let lo = rank.floor() as u64;
    let hi = rank.ceil() as u64;
    let (a, b) = (nth(lo), nth(hi.min(n - 1)));
    Some(a + (b - a) * (rank - lo as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_numpy_reference_values() {
        // numpy.percentile([15, 20, 35, 40, 50], [0, 25, 40, 95, 100])
        let v = [15.0, 20.0, 35.0, 40.0, 50.0];
        assert_eq!(percentile(&v, 0.0), Some(15.0));
        assert_eq!(percentile(&v, 25.0), Some(20.0));
        assert_eq!(percentile(&v, 40.0), Some(29.0));
        assert!((percentile(&v, 95.0).unwrap_or_default() - 48.0).abs() < 1e-12);
        assert_eq!(percentile(&v, 100.0), Some(50.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
    }

    #[test]
    fn weighted_equals_expanded() {
        let pairs = [(0.5, 3), (1.0, 1), (2.0, 4)];
        let expanded: Vec<f64> = pairs
            .iter()
            .flat_map(|&(v, w)| std::iter::repeat_n(v, w as usize))
            .collect();
        for p in [0.0, 10.0, 33.0, 50.0, 90.0, 99.0, 100.0] {
            assert_eq!(
                percentile_weighted(&pairs, p),
                percentile(&expanded, p),
                "p{p}"
            );
        }
    }
}
