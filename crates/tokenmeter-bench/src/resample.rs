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
