//! The ITL's intervals by resampling requests (a cluster bootstrap).
//!
//! The gaps of one request are not independent (a slow request is slow at every token; a
//! batch that grows slows every stream in it), so an order-statistic interval over all gaps
//! would be far too narrow. Instead: draw the run's requests with replacement, pool the gaps
//! of those drawn, take the pooled percentiles and mean; repeat; each interval is the
//! central `level` of what the repetitions gave (the percentile bootstrap). Seeded from
//! `--seed` mixed with a constant of its own (as `seeds` does for every other purpose), so
//! a run's intervals are the same every time it is reported.

use tokenmeter::report::{Bounds, Confidence, SummaryBounds, quantile_sample_needed};

use crate::gaps::{GapSpan, Gaps};
use crate::resample::{Resample, percentile_unsorted};

/// Mixed into `--seed` for the ITL's resampling.
const SEED_MIX: u64 = 0x17e_b007;

/// Resamples at most.
pub(crate) const MAX_RESAMPLES: usize = 1000;

/// Resamples at least, when there are many gaps.
const MIN_RESAMPLES: usize = 200;

/// Gaps copied over all resamples, at most beyond [`MIN_RESAMPLES`]: fewer resamples for a
/// long run, so the intervals stay quick to compute.
const WORK: usize = 50_000_000;

/// More gaps than this and no interval is computed (it would take too long).
pub(crate) const MAX_GAPS: usize = 2_000_000;

/// The ITL's intervals and how they were made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ItlBounds {
    /// `None` when the run had more than [`MAX_GAPS`] gaps.
    pub(crate) bounds: Option<SummaryBounds>,
    /// Resamples drawn.
    pub(crate) resamples: usize,
    /// Gaps, over all requests resampled.
    pub(crate) gaps: u64,
    /// Requests with at least one gap.
    pub(crate) requests: u64,
}

/// The requests' gaps, sorted once, each with the request it belongs to: a resample is then a
/// weight per request (how many times it was drawn), and its pooled percentiles one walk up
/// the sorted gaps (numpy's percentile of the pooled sample, without copying or sorting the
/// pool).
///
/// A gap is held in 8 bytes while the intervals are computed (its nanoseconds and its
/// request, packed in one `u64`), allocated once at its exact size; a gap of 2^32 ns (4.29 s)
/// or more is kept whole on the side. Nothing is copied for a run of more than [`MAX_GAPS`]
/// gaps, which gets no interval: at most 16 MB, whatever the run's length.
pub(crate) struct Clusters {
    /// Gaps under 2^32 ns, ascending: `ns << 32 | request`.
    sorted: Vec<u64>,
    /// The longer gaps, ascending (all above those of `sorted`): (ns, request).
    long: Vec<(u64, u32)>,
    /// Per request: Σ of its gaps in seconds and their count.
    sums: Vec<(f64, u64)>,
    /// Gaps of the requests, also when there were too many to copy.
    gaps: usize,
}

impl Clusters {
    /// The gaps of the requests of `spans` that have any.
    pub(crate) fn of(gaps: &Gaps, spans: &[GapSpan]) -> Self {
        let total = spans.iter().map(|s| s.len()).sum::<usize>();
        if total > MAX_GAPS {
            return Self {
                sorted: Vec::new(),
                long: Vec::new(),
                sums: Vec::new(),
                gaps: total,
            };
        }
        Self::from_requests_sized(
            spans.iter().filter(|s| s.len() > 0).map(|&s| gaps.raw(s)),
            total,
        )
    }

    /// The gaps of each request in nanoseconds (those with none are left out).
    #[cfg(test)]
    pub(crate) fn from_requests(requests: impl IntoIterator<Item = Vec<u64>>) -> Self {
        let requests: Vec<Vec<u64>> = requests.into_iter().collect();
        let total = requests.iter().map(Vec::len).sum();
        Self::from_requests_sized(requests.into_iter().map(Vec::into_iter), total)
    }

    /// The clusters of `requests` (each request's gaps in nanoseconds), with room made for
    /// `total` gaps at once.
    fn from_requests_sized<R: Iterator<Item = u64>>(
        requests: impl IntoIterator<Item = R>,
        total: usize,
    ) -> Self {
        let (mut sorted, mut long, mut sums) = (Vec::with_capacity(total), Vec::new(), Vec::new());
        for one in requests {
            let id = u32::try_from(sums.len()).unwrap_or(u32::MAX);
            let (mut sum, mut count) = (0.0, 0_u64);
            for ns in one {
                sum += seconds(ns);
                count += 1;
                match u32::try_from(ns) {
                    Ok(small) => sorted.push(u64::from(small) << 32 | u64::from(id)),
                    Err(_) => long.push((ns, id)),
                }
            }
            if count > 0 {
                sums.push((sum, count));
            }
        }
        sorted.sort_unstable();
        long.sort_unstable();
        let gaps = sorted.len() + long.len();
        Self {
            sorted,
            long,
            sums,
            gaps,
        }
    }

    /// Bytes held: the sorted gaps, the long ones, the sums.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        use std::mem::size_of;
        self.sorted.capacity() * size_of::<u64>()
            + self.long.capacity() * size_of::<(u64, u32)>()
            + self.sums.capacity() * size_of::<(f64, u64)>()
    }

    /// Every gap in seconds with its request, ascending.
    fn ascending(&self) -> impl Iterator<Item = (f64, u32)> + '_ {
        let small = self
            .sorted
            .iter()
            .map(|&p| (seconds(p >> 32), (p & u64::from(u32::MAX)) as u32));
        small.chain(self.long.iter().map(|&(ns, id)| (seconds(ns), id)))
    }

    fn requests(&self) -> usize {
        self.sums.len()
    }

    /// The pooled sample's mean and percentiles at `percents` (ascending) when request `i`
    /// is drawn `weights[i]` times.
    pub(crate) fn pooled(&self, weights: &[u64], percents: &[f64; 4]) -> (f64, [f64; 4]) {
        let (mut sum, mut total) = (0.0, 0_u64);
        for (&(s, n), &w) in self.sums.iter().zip(weights) {
            sum += s * w as f64;
            total += n * w;
        }
        let mut out = [f64::NAN; 4];
        if total == 0 {
            return (f64::NAN, out);
        }
        // numpy: rank = p · (total − 1), between the values at floor(rank) and floor + 1.
        let ranks = percents.map(|p| p / 100.0 * (total - 1) as f64);
        let mut lows = [f64::NAN; 4];
        let (mut k, mut seen) = (0, 0_u64);
        for (gap, id) in self.ascending() {
            let w = weights[id as usize];
            if w == 0 {
                continue;
            }
            seen += w; // positions seen − w .. seen of the pooled sample hold `gap`
            while k < 4 {
                let lo = ranks[k].floor();
                let frac = ranks[k] - lo;
                if lows[k].is_nan() {
                    if lo as u64 >= seen {
                        break;
                    }
                    lows[k] = gap;
                }
                if frac > 0.0 && lo as u64 + 1 >= seen {
                    break; // the upper neighbour is further up
                }
                out[k] = lows[k] + (gap - lows[k]) * frac;
                k += 1;
            }
            if k == 4 {
                break;
            }
        }
        out[k..].copy_from_slice(&lows[k..]);
        (sum / total as f64, out)
    }
}

/// A gap of `ns` nanoseconds in seconds (as every other figure of the run).
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Resamples for `gaps` gaps: 1,000, fewer (down to 200) beyond 50,000 gaps.
pub(crate) fn resamples_for(gaps: usize) -> usize {
    (WORK / gaps.max(1)).clamp(MIN_RESAMPLES, MAX_RESAMPLES)
}

/// The ITL's intervals at `level`, resampling the requests of `clusters` with a generator
/// drawn from `seed`.
pub(crate) fn bounds(clusters: &Clusters, level: Confidence, seed: u64) -> ItlBounds {
    let n = clusters.gaps;
    let requests = clusters.requests();
    let mut out = ItlBounds {
        bounds: None,
        resamples: 0,
        gaps: n as u64,
        requests: requests as u64,
    };
    if n > MAX_GAPS {
        return out;
    }
    if requests < 2 {
        let few = Bounds::TooFew {
            have: requests as u64,
            need: 2,
        };
        out.bounds = Some(SummaryBounds::new([few; 5]));
        return out;
    }
    out.resamples = resamples_for(n);
    let percents = [50.0, 90.0, 95.0, 99.0];
    let mut draws: [Vec<f64>; 5] = Default::default();
    let mut resample = Resample::new(seed ^ SEED_MIX);
    let (mut picked, mut weights) = (Vec::new(), vec![0_u64; requests]);
    for _ in 0..out.resamples {
        resample.indices(requests, &mut picked);
        weights.fill(0);
        for &i in &picked {
            weights[i] += 1;
        }
        let (mean, at) = clusters.pooled(&weights, &percents);
        if mean.is_nan() {
            continue;
        }
        draws[4].push(mean);
        for (k, value) in at.into_iter().enumerate() {
            draws[k].push(value);
        }
    }
    let tail = level.tail() * 100.0;
    let mut central = |k: usize, needed: u64| {
        if (n as u64) < needed {
            return Bounds::TooFew {
                have: n as u64,
                need: needed,
            };
        }
        let lo = percentile_unsorted(&mut draws[k], tail);
        let hi = percentile_unsorted(&mut draws[k], 100.0 - tail);
        match (lo, hi) {
            (Some(lo), Some(hi)) => Bounds::Within { lo, hi },
            _ => Bounds::TooFew { have: 0, need: 2 },
        }
    };
    let need = |p: f64| quantile_sample_needed(p, level);
    out.bounds = Some(SummaryBounds::new([
        central(0, need(50.0)),
        central(1, need(90.0)),
        central(2, need(95.0)),
        central(3, need(99.0)),
        central(4, 2),
    ]));
    out
}
