//! The gaps of a set of requests counted, not copied: [`Buckets`] counts them by their top 16
//! bits, and [`in_bucket`] counts those of one bucket value by value (its low 16 bits), which
//! is that bucket in ascending order. Either is a fixed 512 KiB, however many gaps there are:
//! what lets [`super::sorted`] visit the gaps in order when most of them share a bucket (the
//! gaps of a stream whose chunks arrive several to a read are a few microseconds: all in
//! bucket 0, under 65.5 µs).

use super::{GapSpan, Gaps, LONG};

/// Buckets, and values in a bucket: 2¹⁶.
pub(super) const BUCKETS: usize = 1 << 16;

/// The gaps of a set of requests, counted by their top 16 bits.
pub(super) struct Buckets {
    /// Gaps (under [`LONG`]) per bucket.
    pub(super) counts: Vec<u64>,
    /// The long gaps (4.29 s or more), ascending: few, kept whole.
    pub(super) long: Vec<u64>,
}

impl Buckets {
    /// Counts the gaps of `spans` (one pass).
    pub(super) fn of(gaps: &Gaps, spans: &[GapSpan]) -> Self {
        let mut counts = vec![0_u64; BUCKETS];
        let mut long = Vec::new();
        for &span in spans {
            for (small, at) in gaps.small(span).zip(span.start()..) {
                if small == LONG {
                    long.push(gaps.long_at(at));
                } else {
                    counts[(small >> 16) as usize] += 1;
                }
            }
        }
        long.sort_unstable();
        Self { counts, long }
    }
}

/// The gaps of `spans` in bucket `bucket`, counted by their low 16 bits (one pass): the
/// bucket's values ascending, each with how many times it occurs.
pub(super) fn in_bucket(
    gaps: &Gaps,
    spans: &[GapSpan],
    bucket: usize,
) -> impl Iterator<Item = (u64, u64)> {
    let mut counts = vec![0_u64; BUCKETS];
    for &span in spans {
        for small in gaps.small(span) {
            if small != LONG && (small >> 16) as usize == bucket {
                counts[(small & 0xffff) as usize] += 1;
            }
        }
    }
    let base = (bucket as u64) << 16;
    counts
        .into_iter()
        .zip(base..)
        .filter(|&(count, _)| count > 0)
        .map(|(count, value)| (value, count))
}
