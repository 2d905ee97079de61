//! The intervals of the run's proportions and rates.
//!
//! - Success rate and attainment (good / sent): Wilson score intervals over the requests sent.
//! - Throughputs (requests, output tokens, total tokens, goodput, good output tokens per
//!   second): a Student-t interval from how the rate varies between the run's time slices
//!   (`slices`, the same cut the report shows): the run's rate ± t(k − 1) · s / √K, where s is
//!   the standard deviation of the rate over the k **interior** slices and K the run's length
//!   in slices. The first slice (ramp-up: requests still in flight) and the last one (drain)
//!   differ from the others by how a run starts and ends, not by chance: they count in the
//!   run's rate and in K but not in s. A run whose report has fewer than [`MIN_SLICES`]
//!   interior slices (automatic slices are 1 s at least: a run of a few seconds) is cut into
//!   [`FALLBACK_SLICES`] equal slices for its intervals instead (`RunIntervals::of`).

use tokenmeter::report::{Bounds, Confidence, wilson};

use crate::slices::Slices;
use crate::summary::BenchSummary;

/// Slices a throughput interval needs.
pub(crate) const MIN_SLICES: u64 = 3;

/// Slices a short run is cut into for its throughputs' intervals.
pub(crate) const FALLBACK_SLICES: u32 = 10;

/// The intervals of the run's proportions and rates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rates {
    pub(crate) success_rate: Bounds,
    pub(crate) attainment: Bounds,
    pub(crate) request_throughput: Bounds,
    pub(crate) output_throughput: Bounds,
    pub(crate) total_token_throughput: Bounds,
    pub(crate) goodput: Bounds,
    pub(crate) goodput_output_tokens: Bounds,
    /// Interior slices the throughputs' intervals came from.
    pub(crate) slices: u64,
}

/// Wilson's interval of `successes` of `n`, as [`Bounds`].
pub(crate) fn proportion(successes: u64, n: u64, level: Confidence) -> Bounds {
    match wilson(successes, n, level.z()) {
        Some((lo, hi)) => Bounds::Within { lo, hi },
        None => Bounds::TooFew { have: n, need: 1 },
    }
}

/// The interval of a rate whose whole-run value is `point`, from its value in each interior
/// slice (`per_slice`) of a run `length` slices long.
pub(crate) fn rate(point: f64, per_slice: &[f64], length: f64, level: Confidence) -> Bounds {
    let k = per_slice.len() as u64;
    if k < MIN_SLICES || length.is_nan() || length <= 0.0 {
        return Bounds::TooFew {
            have: k,
            need: MIN_SLICES,
        };
    }
    let mean = per_slice.iter().sum::<f64>() / k as f64;
    let var = per_slice.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (k - 1) as f64;
    let half = level.t(k - 1) * (var / length.max(k as f64)).sqrt();
    Bounds::Within {
        lo: (point - half).max(0.0),
        hi: point + half,
    }
}

/// The interior slices of `slices` (neither the first nor the last, and of full width) and the
/// run's length in slices.
fn interior(slices: &Slices) -> (Vec<&BenchSummary>, f64) {
    let all = &slices.slices;
    let length = if slices.width_s > 0.0 {
        all.iter()
            .map(|s| (s.end_s - s.start_s).max(0.0))
            .sum::<f64>()
            / slices.width_s
    } else {
        0.0
    };
    let inner = all.get(1..all.len().saturating_sub(1)).unwrap_or_default();
    let kept = inner
        .iter()
        .filter(|s| s.end_s - s.start_s >= slices.width_s / 2.0 && s.end_s > s.start_s)
        .map(|s| &s.summary)
        .collect();
    (kept, length)
}

impl Rates {
    /// The intervals of `summary`'s proportions and of its rates from `slices`.
    pub(crate) fn of(summary: &BenchSummary, slices: &Slices, level: Confidence) -> Self {
        let (kept, length) = interior(slices);
        let of = |point: f64, pick: fn(&BenchSummary) -> f64| {
            let per_slice: Vec<f64> = kept.iter().map(|s| pick(s)).collect();
            rate(point, &per_slice, length, level)
        };
        Self {
            success_rate: proportion(summary.successful, summary.requests, level),
            attainment: proportion(summary.good_requests, summary.requests, level),
            request_throughput: of(summary.request_throughput, |s| s.request_throughput),
            output_throughput: of(summary.output_throughput, |s| s.output_throughput),
            total_token_throughput: of(summary.total_token_throughput, |s| {
                s.total_token_throughput
            }),
            goodput: of(summary.goodput, |s| s.goodput),
            goodput_output_tokens: of(summary.goodput_output_tokens, |s| s.goodput_output_tokens),
            slices: kept.len() as u64,
        }
    }
}
