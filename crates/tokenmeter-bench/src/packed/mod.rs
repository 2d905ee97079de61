//! [`Packed`]: the settled requests of a run, each as a few dozen bytes in one shared buffer.
//!
//! A settled [`Measured`] is 224 bytes, whatever it holds: with 32-token answers, more than its
//! 31 gaps (124 bytes in [`crate::gaps::Gaps`]). Packed, a request keeps only what is present,
//! each number in as few bytes as it needs ([`crate::varint`]): a typical success is 50–70 bytes,
//! plus 5 for where it starts. Reading one ([`Packed::get`]) builds the same [`Measured`] again,
//! field for field (the round trip is tested on every field and on the edges of each), so
//! every figure computed from a run is unchanged; the outputs read a run one request at a
//! time (`crate::reqs`).
//!
//! The buffer grows by blocks of [`BLOCK`] bytes (no copy when it grows; a request never
//! straddles two blocks). The order of the requests is the order of their starts, which
//! [`Packed::sort_from`] sorts by id without moving the bytes.

mod encode;
#[cfg(test)]
mod tests;

use crate::measured::Measured;
use encode::Side;

/// Bytes per block of the buffer.
const BLOCK: usize = 1 << 16;

/// Where a request's bytes start: a 40-bit offset in 5 bytes (up to 1 TiB of requests).
#[derive(Clone, Copy, Debug)]
struct Start([u8; 5]);

impl Start {
    fn new(at: u64) -> Self {
        let b = at.to_le_bytes();
        Self([b[0], b[1], b[2], b[3], b[4]])
    }

    fn get(self) -> usize {
        let [a, b, c, d, e] = self.0;
        u64::from_le_bytes([a, b, c, d, e, 0, 0, 0]) as usize
    }
}

/// The settled requests of a run (see the module).
#[derive(Debug, Default)]
pub(crate) struct Packed {
    blocks: Vec<Vec<u8>>,
    starts: Vec<Start>,
    side: Side,
    /// One request's bytes while it is written.
    scratch: Vec<u8>,
}

impl Packed {
    /// Adds a settled request at the end.
    pub(crate) fn push(&mut self, measured: Measured) {
        let mut bytes = std::mem::take(&mut self.scratch);
        bytes.clear();
        encode::write(measured, &mut bytes, &mut self.side);
        let fits = self
            .blocks
            .last()
            .is_some_and(|b| b.len() + bytes.len() <= b.capacity());
        if !fits {
            self.blocks.push(Vec::with_capacity(BLOCK.max(bytes.len())));
        }
        let block = self.blocks.len() - 1;
        let at = self.blocks[block].len();
        self.blocks[block].extend_from_slice(&bytes);
        self.starts.push(Start::new((block * BLOCK + at) as u64));
        self.scratch = bytes;
    }

    /// Requests held.
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    fn bytes(&self, start: Start) -> &[u8] {
        let at = start.get();
        self.blocks
            .get(at / BLOCK)
            .and_then(|b| b.get(at % BLOCK..))
            .unwrap_or_default()
    }

    /// Every request, in order, each built again as it is read.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = Measured> + Clone + '_ {
        (0..self.len()).map(|k| self.get(k).expect("every request of a run reads back"))
    }

    /// The `k`-th request, built again.
    pub(crate) fn get(&self, k: usize) -> Option<Measured> {
        let start = *self.starts.get(k)?;
        let measured = encode::read(self.bytes(start), &self.side);
        debug_assert!(measured.is_some(), "request {k} of a run reads back");
        measured
    }

    /// Orders the requests from the `from`-th on by id (their bytes stay where they are).
    pub(crate) fn sort_from(&mut self, from: usize) {
        let Some(tail) = self.starts.get(from..) else {
            return;
        };
        let mut tail = tail.to_vec();
        tail.sort_unstable_by_key(|&s| encode::id(self.bytes(s)));
        self.starts[from..].copy_from_slice(&tail);
    }

    /// Adds every request of `other` (their gap spans still point into `other`'s gaps).
    pub(crate) fn extend(&mut self, other: &Packed) {
        for k in 0..other.len() {
            if let Some(m) = other.get(k) {
                self.push(m);
            }
        }
    }

    /// Bytes this store has allocated: its blocks (whole), the starts and the side lists.
    #[cfg(test)]
    pub(crate) fn retained_bytes(&self) -> usize {
        use std::mem::size_of;
        let blocks: usize = self.blocks.iter().map(Vec::capacity).sum();
        let rare: usize = self.side.rare.iter().map(|r| r.boxed_bytes()).sum();
        blocks
            + self.blocks.capacity() * size_of::<Vec<u8>>()
            + self.starts.capacity() * size_of::<Start>()
            + self.side.shared.retained_bytes()
            + self.side.rare.capacity() * size_of::<crate::rare::Rare>()
            + rare
            + self.side.whole.capacity() * size_of::<Measured>()
            + self.scratch.capacity()
    }
}

impl FromIterator<Measured> for Packed {
    fn from_iter<I: IntoIterator<Item = Measured>>(requests: I) -> Self {
        let mut packed = Packed::default();
        requests.into_iter().for_each(|m| packed.push(m));
        packed
    }
}
