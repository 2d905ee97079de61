//! [`Gaps`]: every request's inter-token latencies (ITL) in one shared buffer, 4 bytes a gap.
//!
//! A run keeps, per token-bearing chunk after the first, the gap to the chunk before it, in
//! integer nanoseconds: exactly what the core measured, so every statistic read from here is
//! the one computed from the records (vLLM's numbers at nanosecond resolution). A gap is a
//! `u32` (up to 4.29 s); the rare longer one is kept whole on the side, so nothing saturates.
//!
//! The buffer grows by fixed blocks ([`BLOCK`] gaps): no copy when it grows, and at most one
//! block allocated beyond what is held. A request's gaps are added at once when it ends
//! ([`Gaps::add`]) and found again by the [`GapSpan`] it is given.
//!
//! [`sorted`] walks the gaps of a set of requests in ascending order without copying them
//! all, for the summaries' percentiles.

mod buckets;
pub(crate) mod sorted;

use std::time::Duration;

/// Gaps per block of the buffer (256 KiB).
pub(crate) const BLOCK: usize = 1 << 16;

/// Marks a gap too long for a `u32`: its value is in [`Gaps::long`].
const LONG: u32 = u32::MAX;

/// Where one request's gaps are in a [`Gaps`]: `len` gaps from `start` (in 12 bytes: the
/// start's halves are `u32`s, so a request keeps no padding for it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct GapSpan {
    start: [u32; 2],
    len: u32,
}

impl GapSpan {
    /// Where `len` gaps from index `start` are, as [`Gaps::add`] gave them (the packed
    /// requests keep a span as its two numbers: [`crate::packed`]).
    pub(crate) fn new(start: u64, len: u32) -> Self {
        Self {
            start: [start as u32, (start >> 32) as u32],
            len,
        }
    }

    /// Index of its first gap.
    pub(crate) fn start(self) -> u64 {
        u64::from(self.start[1]) << 32 | u64::from(self.start[0])
    }

    /// Gaps in the span.
    pub(crate) fn len(self) -> usize {
        self.len as usize
    }
}

/// The gaps of every request of a run (see the module).
#[derive(Debug, Default)]
pub(crate) struct Gaps {
    blocks: Vec<Vec<u32>>,
    len: u64,
    /// Gaps of `LONG` nanoseconds or more: (index, nanoseconds), by index.
    long: Vec<(u64, u64)>,
    /// The molds of the run's compact records ([`crate::kept_record`]), settled with their gaps.
    pub(crate) molds: crate::kept_record::Mold,
}

impl Gaps {
    /// An empty buffer.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Appends `gaps` (one request's, in order) and returns where they are.
    pub(crate) fn add(&mut self, gaps: impl IntoIterator<Item = Duration>) -> GapSpan {
        let start = self.len;
        for gap in gaps {
            self.push(u64::try_from(gap.as_nanos()).unwrap_or(u64::MAX));
        }
        let len = u32::try_from(self.len - start).unwrap_or(u32::MAX);
        GapSpan::new(start, len)
    }

    fn push(&mut self, ns: u64) {
        let small = match u32::try_from(ns) {
            Ok(n) if n < LONG => n,
            _ => {
                self.long.push((self.len, ns));
                LONG
            }
        };
        match self.blocks.last_mut() {
            Some(block) if block.len() < BLOCK => block.push(small),
            _ => {
                let mut block = Vec::with_capacity(BLOCK);
                block.push(small);
                self.blocks.push(block);
            }
        }
        self.len += 1;
    }

    /// The gaps of `span`, in order.
    pub(crate) fn of(&self, span: GapSpan) -> impl Iterator<Item = Duration> + '_ {
        self.raw(span).map(Duration::from_nanos)
    }

    /// The gaps of `span` in nanoseconds, in order.
    pub(crate) fn raw(&self, span: GapSpan) -> impl Iterator<Item = u64> + '_ {
        self.small(span)
            .zip(span.start()..)
            .map(|(small, at)| match small {
                LONG => self.long_at(at),
                n => u64::from(n),
            })
    }

    /// The stored `u32`s of `span` (`LONG` for a long gap), block by block.
    fn small(&self, span: GapSpan) -> impl Iterator<Item = u32> + '_ {
        let start = usize::try_from(span.start()).unwrap_or(usize::MAX);
        let end = start.saturating_add(span.len());
        let first = start / BLOCK;
        let last = end.div_ceil(BLOCK);
        self.blocks
            .get(first..last.min(self.blocks.len()))
            .unwrap_or_default()
            .iter()
            .enumerate()
            .flat_map(move |(k, block)| {
                let base = (first + k) * BLOCK;
                let from = start.saturating_sub(base).min(block.len());
                let to = (end - base).min(block.len());
                block[from..to].iter().copied()
            })
    }

    fn long_at(&self, at: u64) -> u64 {
        self.long
            .binary_search_by_key(&at, |&(i, _)| i)
            .map_or(u64::from(LONG), |k| self.long[k].1)
    }

    /// Gaps held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Bytes this buffer has allocated: its blocks (whole), the long gaps and the lists of
    /// both.
    #[cfg(test)]
    pub(crate) fn retained_bytes(&self) -> usize {
        use std::mem::size_of;
        let blocks: usize = self
            .blocks
            .iter()
            .map(|b| b.capacity() * size_of::<u32>())
            .sum();
        blocks
            + self.blocks.capacity() * size_of::<Vec<u32>>()
            + self.long.capacity() * size_of::<(u64, u64)>()
    }
}

#[cfg(test)]
mod tests;
