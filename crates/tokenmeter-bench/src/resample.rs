//! Seeded resampling with replacement, and percentiles of a resample: the one bootstrap of the
//! bench (the ITL's interval, `bench compare`'s differences).

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

/// Draws indices with replacement from a seeded generator: the same seed, the same draws.
#[derive(Debug)]
pub(crate) struct Resample {
    rng: StdRng,
}

impl Resample {
    /// A resampler seeded with `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// `n` indices in `0..n`, drawn with replacement, into `out` (cleared first).
    pub(crate) fn indices(&mut self, n: usize, out: &mut Vec<usize>) {
        out.clear();
        if n == 0 {
            return;
        }
        out.extend((0..n).map(|_| self.rng.random_range(0..n)));
    }

    /// `counts.len()` draws with replacement from `0..counts.len()`, each adding one to the
    /// drawn slot: a resample as each item's multiplicity, for [`percentile_counted`] (no value
    /// is copied).
    pub(crate) fn add_counts(&mut self, counts: &mut [u32]) {
        let n = counts.len();
        for _ in 0..n {
            counts[self.rng.random_range(0..n)] += 1;
        }
    }
}

/// The `percent`-th percentile, as [`percentile_unsorted`] computes it, of a resample given as
/// multiplicities: `sorted` holds each value (ascending) with the item it belongs to, an item
/// counted `counts[item]` times; `total` is the sum of those multiplicities over `sorted`.
/// Walks from the nearer end, so a tail percentile reads only the tail. `None` when `total`
/// is 0.
pub(crate) fn percentile_counted(
    sorted: &[(f64, u32)],
    counts: &[u32],
    total: u64,
    percent: f64,
) -> Option<f64> {
    if total == 0 {
        return None;
    }
    let rank = percent.clamp(0.0, 100.0) / 100.0 * (total - 1) as f64;
    let lo = rank.floor() as u64;
    let a = value_at_rank(sorted, counts, total, lo)?;
    let b = if rank > lo as f64 {
        value_at_rank(sorted, counts, total, lo + 1)?
    } else {
        a
    };
    Some(a + (b - a) * (rank - lo as f64))
}

/// The value at 0-based `rank` of the expanded resample (see [`percentile_counted`]).
fn value_at_rank(sorted: &[(f64, u32)], counts: &[u32], total: u64, rank: u64) -> Option<f64> {
    let weight = |&(_, item): &(f64, u32)| u64::from(counts[item as usize]);
    let mut seen = 0u64;
    if rank < total / 2 {
        for pair in sorted {
            seen += weight(pair);
            if seen > rank {
                return Some(pair.0);
            }
        }
    } else {
        // From the top: the value whose block holds rank `total - 1 - rank` counted downwards.
        let from_top = total - 1 - rank;
        for pair in sorted.iter().rev() {
            seen += weight(pair);
            if seen > from_top {
                return Some(pair.0);
            }
        }
    }
    None
}

/// The `percent`-th percentile of `values` as `numpy.percentile` computes it (linear
/// interpolation between closest ranks), reordering `values` in place in O(n) rather than
/// sorting them. `None` for no value.
pub(crate) fn percentile_unsorted(values: &mut [f64], percent: f64) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let rank = percent.clamp(0.0, 100.0) / 100.0 * (n - 1) as f64;
    let lo = rank.floor() as usize;
    let (_, &mut a, above) = values.select_nth_unstable_by(lo, f64::total_cmp);
    let b = if rank > lo as f64 {
        above.iter().copied().min_by(f64::total_cmp).unwrap_or(a)
    } else {
        a
    };
    Some(a + (b - a) * (rank - lo as f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenmeter::report::percentile;

    #[test]
    fn percentiles_equal_numpys_on_sorted_values() {
        let mut draws = Resample::new(1);
        let mut idx = Vec::new();
        draws.indices(57, &mut idx);
        let values: Vec<f64> = idx
            .iter()
            .map(|&i| (i * 7 % 13) as f64 + i as f64 / 100.0)
            .collect();
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        for p in [0.0, 12.5, 50.0, 90.0, 95.0, 99.0, 100.0] {
            let mut scratch = values.clone();
            assert_eq!(
                percentile_unsorted(&mut scratch, p),
                percentile(&sorted, p),
                "p{p}"
            );
        }
        assert_eq!(percentile_unsorted(&mut [], 50.0), None);
    }

    #[test]
    fn percentiles_of_counts_equal_those_of_the_expanded_resample() {
        let values: Vec<f64> = (0..41u32).map(|i| f64::from(i * 17 % 23) + 0.5).collect();
        let mut sorted: Vec<(f64, u32)> = values.iter().zip(0..).map(|(&v, i)| (v, i)).collect();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut draws = Resample::new(3);
        for _ in 0..20 {
            let mut counts = vec![0u32; values.len()];
            draws.add_counts(&mut counts);
            assert_eq!(counts.iter().sum::<u32>(), 41);
            let mut expanded: Vec<f64> = (0..values.len())
                .flat_map(|i| std::iter::repeat_n(values[i], counts[i] as usize))
                .collect();
            for p in [0.0, 10.0, 50.0, 90.0, 95.0, 99.0, 100.0] {
                assert_eq!(
                    percentile_counted(&sorted, &counts, 41, p),
                    percentile_unsorted(&mut expanded, p),
                    "p{p}"
                );
            }
        }
        assert_eq!(percentile_counted(&sorted, &[0; 41], 0, 50.0), None);
    }

    #[test]
    fn the_same_seed_draws_the_same_indices() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        Resample::new(9).indices(100, &mut a);
        Resample::new(9).indices(100, &mut b);
        assert_eq!(a, b);
        assert!(a.iter().all(|&i| i < 100));
        Resample::new(10).indices(100, &mut b);
        assert_ne!(a, b);
    }
}
