//! The bootstrap of the differences: each iteration resamples both sides independently — runs
//! with replacement, then requests with replacement within each chosen run (two levels, so
//! run-to-run variation counts; one run is drawn as itself) — computes every figure of both
//! resamples once, and keeps new − base and new / base − 1 of each figure.

use super::figures::Figure;
use super::pooled::Pooled;
use crate::resample::{Resample, percentile_unsorted};

/// Each figure's bootstrap draws of the difference, one per resample.
#[derive(Debug)]
pub(crate) struct Draws {
    /// new − base, per figure.
    pub(crate) difference: Vec<Vec<f64>>,
    /// new / base − 1, per figure (NaN where the base's resample is 0).
    pub(crate) relative: Vec<Vec<f64>>,
}

/// `resamples` draws of every figure's difference between `new` and `base`, seeded by `seed`.
pub(crate) fn bootstrap(
    base: &Pooled,
    new: &Pooled,
    figures: &[Figure],
    resamples: u32,
    seed: u64,
) -> Draws {
    let mut draws = Resample::new(seed);
    let mut sides = [Scratch::new(base), Scratch::new(new)];
    let mut out = Draws {
        difference: vec![Vec::with_capacity(resamples as usize); figures.len()],
        relative: vec![Vec::with_capacity(resamples as usize); figures.len()],
    };
    for _ in 0..resamples {
        for (scratch, pooled) in sides.iter_mut().zip([base, new]) {
            scratch.draw(pooled, figures, &mut draws);
        }
        let [b, n] = &sides;
        for (f, (b, n)) in b.values.iter().zip(&n.values).enumerate() {
            out.difference[f].push(n - b);
            out.relative[f].push(if *b == 0.0 { f64::NAN } else { n / b - 1.0 });
        }
    }
    out
}

/// The percentile interval of `draws` at two-sided `level`, their non-finite ones left out;
/// `None` when fewer than half of them are finite (the figure is missing from too many
/// resamples for an interval to mean anything).
pub(crate) fn percentile_interval(draws: &[f64], level: f64) -> Option<(f64, f64)> {
    let mut finite: Vec<f64> = draws.iter().copied().filter(|d| d.is_finite()).collect();
    if finite.is_empty() || finite.len() * 2 < draws.len() {
        return None;
    }
    let tail = (1.0 - level) / 2.0 * 100.0;
    let lo = percentile_unsorted(&mut finite, tail)?;
    let hi = percentile_unsorted(&mut finite, 100.0 - tail)?;
    Some((lo, hi))
}

/// One side's buffers, reused by every iteration.
#[derive(Debug)]
struct Scratch {
    counts: Vec<u32>,
    runs: Vec<usize>,
    values: Vec<f64>,
}

impl Scratch {
    fn new(pooled: &Pooled) -> Self {
        Self {
            counts: vec![0; pooled.requests()],
            runs: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Draws one two-level resample of `pooled` and computes its figures into `values`.
    fn draw(&mut self, pooled: &Pooled, figures: &[Figure], draws: &mut Resample) {
        self.counts.fill(0);
        draws.indices(pooled.runs.len(), &mut self.runs);
        let mut duration = 0.0;
        for &r in &self.runs {
            let run = pooled.runs[r];
            draws.add_counts(&mut self.counts[run.start..run.start + run.len]);
            duration += run.duration_s;
        }
        pooled.resampled(figures, &self.counts, duration, &mut self.values);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_percentile_interval_leaves_out_missing_draws() {
        let close = |got: Option<(f64, f64)>| {
            let (lo, hi) = got.unwrap();
            (lo - 5.0).abs() < 1e-9 && (hi - 95.0).abs() < 1e-9
        };
        let mut draws: Vec<f64> = (0..=100).map(f64::from).collect();
        assert!(close(percentile_interval(&draws, 0.9)));
        draws.extend([f64::NAN; 40]);
        assert!(close(percentile_interval(&draws, 0.9)));
        draws.extend([f64::NAN; 100]);
        assert_eq!(percentile_interval(&draws, 0.9), None);
        assert_eq!(percentile_interval(&[], 0.9), None);
    }
}
