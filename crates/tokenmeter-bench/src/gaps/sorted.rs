//! The gaps of a set of requests in ascending order, without a sorted copy of them all: the
//! statistics of [`Summary::of_durations`] over them, bit for bit, in a fraction of the memory.
//!
//! A first pass counts the gaps by their top 16 bits ([`Buckets`]). The buckets are then taken
//! in order, in batches of at most a sixteenth of the gaps (at least [`MIN_BATCH`]); for each
//! batch one pass collects its gaps and sorts them. A bucket that alone holds more than a batch
//! (most gaps of a fast stream are under 65.5 µs, all in bucket 0) is not collected: one pass
//! counts its values ([`in_bucket`]), which gives them in order. So the extra memory is at most
//! a quarter of a byte per gap (against the four of a copy, or the eight of the `f64` seconds
//! the core would sort) and 1 MiB of counts, for a few more passes over the buffer. The long
//! gaps (over 4.29 s) are few and come last. Percentiles need no walk: the counts say which
//! bucket holds each rank, and counting that bucket's values finds it.
//!
//! The statistics are the core's formulas on the same `f64` seconds in the same (ascending)
//! order: numpy's mean, population standard deviation and linearly interpolated percentiles.

use tokenmeter::report::Summary;

use super::buckets::{Buckets, in_bucket};
use super::{GapSpan, Gaps, LONG};

/// The smallest batch, in gaps.
const MIN_BATCH: u64 = 1 << 16;

/// A batch holds at most this fraction of the gaps (or [`MIN_BATCH`]).
const BATCHES: u64 = 16;

/// Seconds of `ns` nanoseconds, as [`std::time::Duration::as_secs_f64`] gives them.
fn secs(ns: u64) -> f64 {
    std::time::Duration::from_nanos(ns).as_secs_f64()
}

/// Calls `f` with every gap of `spans`, in ascending order; returns how many there were.
pub(crate) fn walk(gaps: &Gaps, spans: &[GapSpan], f: impl FnMut(u64)) -> u64 {
    walk_batched(gaps, spans, f).0
}

/// [`walk`], and the most gaps a batch held at once.
fn walk_batched(gaps: &Gaps, spans: &[GapSpan], mut f: impl FnMut(u64)) -> (u64, usize) {
    let Buckets { counts, long } = Buckets::of(gaps, spans);
    let total: u64 = counts.iter().sum();
    let budget = (total / BATCHES).max(MIN_BATCH);
    let mut batch = Vec::new();
    let mut most = 0;
    let mut bucket = 0;
    while bucket < counts.len() {
        let first = bucket;
        let mut held = 0;
        while bucket < counts.len() && (held == 0 || held + counts[bucket] <= budget) {
            held += counts[bucket];
            bucket += 1;
        }
        if held == 0 {
            continue;
        }
        if held > budget {
            // One bucket (the last taken) over the budget alone: counted, not collected.
            for (value, count) in in_bucket(gaps, spans, bucket - 1) {
                (0..count).for_each(|_| f(value));
            }
            continue;
        }
        let (low, high) = ((first as u64) << 16, (bucket as u64) << 16);
        batch.clear();
        batch.reserve_exact(usize::try_from(held).unwrap_or(usize::MAX));
        for &span in spans {
            let mine = gaps
                .small(span)
                .filter(|&n| n != LONG && (low..high).contains(&u64::from(n)));
            batch.extend(mine);
        }
        most = most.max(batch.capacity());
        batch.sort_unstable();
        batch.iter().for_each(|&n| f(u64::from(n)));
    }
    long.iter().for_each(|&n| f(n));
    (total + long.len() as u64, most)
}

/// The gaps of `spans` at each of the ranks `ranks` (ascending, each below their count), in
/// seconds: the bucket of each rank from the counts, its value from counting that bucket.
fn at_ranks(gaps: &Gaps, spans: &[GapSpan], ranks: &[u64]) -> Vec<f64> {
    let Buckets { counts, long } = Buckets::of(gaps, spans);
    let mut found = Vec::with_capacity(ranks.len());
    let mut below = 0;
    for (bucket, &count) in counts.iter().enumerate() {
        if found.len() == ranks.len() {
            break;
        }
        if ranks[found.len()] < below + count {
            let mut at = below;
            for (value, count) in in_bucket(gaps, spans, bucket) {
                at += count;
                while found.len() < ranks.len() && ranks[found.len()] < at {
                    found.push(secs(value));
                }
            }
        }
        below += count;
    }
    for &rank in &ranks[found.len()..] {
        let k = usize::try_from(rank.saturating_sub(below)).unwrap_or(usize::MAX);
        found.push(long.get(k).map_or(0.0, |&ns| secs(ns)));
    }
    found
}

/// The two ranks around percentile `p` of `n` values, and the weight of the upper one (the
/// core's [`tokenmeter::report::percentile`]).
fn ranks_of(n: u64, p: f64) -> (u64, u64, f64) {
    let rank = (p.clamp(0.0, 100.0) / 100.0) * (n - 1) as f64;
    let (lo, hi) = (rank.floor() as u64, rank.ceil() as u64);
    (lo, hi.min(n - 1), rank - lo as f64)
}

/// Percentiles `ps` of the gaps of `spans`, in seconds (`None` for each when there is none).
pub(crate) fn percentiles(gaps: &Gaps, spans: &[GapSpan], ps: &[f64]) -> Vec<Option<f64>> {
    let n: u64 = spans.iter().map(|s| u64::from(s.len)).sum();
    if n == 0 {
        return vec![None; ps.len()];
    }
    let wanted: Vec<(u64, u64, f64)> = ps.iter().map(|&p| ranks_of(n, p)).collect();
    let mut ranks: Vec<u64> = wanted.iter().flat_map(|w| [w.0, w.1]).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let values = at_ranks(gaps, spans, &ranks);
    let value = |r: u64| values[ranks.binary_search(&r).unwrap_or_default()];
    wanted
        .iter()
        .map(|&(lo, hi, weight)| {
            let (a, b) = (value(lo), value(hi));
            Some(a + (b - a) * weight)
        })
        .collect()
}

/// [`Summary::of_durations`] of the gaps of `spans`, bit for bit.
pub(crate) fn summary(gaps: &Gaps, spans: &[GapSpan]) -> Summary {
    let mut sum = 0.0;
    let mut max = 0.0;
    let n = walk(gaps, spans, |ns| {
        let v = secs(ns);
        sum += v;
        max = v;
    });
    let mut out = Summary::default();
    if n == 0 {
        return out;
    }
    let mean = sum / n as f64;
    let mut squares = 0.0;
    walk(gaps, spans, |ns| {
        let v = secs(ns);
        squares += (v - mean) * (v - mean);
    });
    let at = percentiles(gaps, spans, &[50.0, 90.0, 95.0, 99.0]);
    out.count = n;
    out.mean = mean;
    out.std = (squares / n as f64).sqrt();
    [out.p50, out.p90, out.p95, out.p99] =
        [at[0], at[1], at[2], at[3]].map(Option::unwrap_or_default);
    out.max = max;
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use tokenmeter::report::percentile;

    use super::*;

    /// Requests of random gaps: short, long, equal, some over 4.29 s, some with none; when
    /// `fast`, most of them under 65.5 µs (one bucket, as the chunks of a fast stream).
    fn run(seed: u64, requests: usize, fast: bool) -> (Gaps, Vec<GapSpan>, Vec<Vec<Duration>>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut gaps = Gaps::new();
        let (mut spans, mut all) = (Vec::new(), Vec::new());
        for _ in 0..requests {
            let n = rng.random_range(0..400);
            let mine: Vec<Duration> = (0..n)
                .map(|_| match rng.random_range(0..100) {
                    0 => Duration::from_nanos(rng.random_range(4_000_000_000..9_000_000_000)),
                    1..10 => Duration::from_millis(20),
                    10..80 if fast => Duration::from_nanos(rng.random_range(0..65_536)),
                    _ => Duration::from_nanos(rng.random_range(0..300_000_000)),
                })
                .collect();
            spans.push(gaps.add(mine.clone()));
            all.push(mine);
        }
        (gaps, spans, all)
    }

    #[test]
    fn the_summary_is_the_cores_bit_for_bit() {
        for (seed, fast) in (0..6).zip([false, true].into_iter().cycle()) {
            let (gaps, spans, all) = run(seed, 1_000, fast);
            // Every other request: a subset, as the summaries of successes take.
            let some: Vec<GapSpan> = spans.iter().copied().step_by(2).collect();
            let some_all = all.iter().step_by(2).flatten().copied();
            assert_eq!(
                summary(&gaps, &spans),
                Summary::of_durations(all.iter().flatten().copied())
            );
            assert_eq!(summary(&gaps, &some), Summary::of_durations(some_all));
        }
        assert_eq!(summary(&Gaps::new(), &[]), Summary::of_durations([]));
    }

    #[test]
    fn percentiles_are_the_cores() {
        for fast in [false, true] {
            let (gaps, spans, all) = run(9, 300, fast);
            let mut seconds: Vec<f64> = all.iter().flatten().map(Duration::as_secs_f64).collect();
            seconds.sort_by(f64::total_cmp);
            let ps = [0.0, 0.1, 25.0, 50.0, 69.9, 99.9, 99.99, 100.0];
            let ours = percentiles(&gaps, &spans, &ps);
            let core: Vec<Option<f64>> = ps.iter().map(|&p| percentile(&seconds, p)).collect();
            assert_eq!(ours, core);
        }
        assert_eq!(percentiles(&Gaps::new(), &[], &[50.0]), vec![None]);
    }

    #[test]
    fn the_walk_is_ascending_and_complete() {
        for fast in [false, true] {
            let (gaps, spans, all) = run(3, 2_000, fast);
            let mut walked = Vec::new();
            let n = walk(&gaps, &spans, |ns| walked.push(ns));
            let mut expected: Vec<u64> =
                all.iter().flatten().map(|d| d.as_nanos() as u64).collect();
            expected.sort_unstable();
            assert_eq!((n as usize, walked), (expected.len(), expected));
        }
    }

    /// Issue 17: the walk holds at most a sixteenth of the gaps at once (a quarter of a byte
    /// per gap), also when most of them are in one bucket (70% here, under 65.5 µs).
    #[test]
    fn a_walk_holds_at_most_a_sixteenth_of_the_gaps() {
        let (gaps, spans, _) = run(5, 6_000, true);
        let mut n = 0_u64;
        let (total, most) = walk_batched(&gaps, &spans, |_| n += 1);
        assert!(total > 16 * MIN_BATCH, "{total} gaps: too few to tell");
        assert!(
            most as u64 <= total / BATCHES,
            "{most} of {total} gaps held at once"
        );
    }
}
