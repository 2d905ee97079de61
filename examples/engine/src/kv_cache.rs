//! One sequence's KV cache: per layer, the keys and values of every position so far, in
//! tensors allocated once for the sequence's whole reservation (prompt + `max_tokens`), so a
//! decode step appends in place instead of copying the cache.
//!
//! Its size in bytes is real memory: what the engine reports as KV-cache usage is the sum of
//! these allocations over the running sequences, divided by the budget (`--kv-tokens` tokens of
//! this size).

use candle_core::{Result, Tensor};
use candle_nn::kv_cache::KvCache;

/// The KV cache of one sequence.
#[derive(Debug)]
pub struct SeqCache {
    layers: Vec<KvCache>,
    capacity: usize,
    bytes_per_token: usize,
}

impl SeqCache {
    /// A cache of `capacity` positions for a model of `layers` layers whose keys and values
    /// take `bytes_per_token` bytes per position in all layers. Nothing is allocated before the
    /// first append.
    pub fn new(layers: usize, capacity: usize, bytes_per_token: usize) -> Self {
        Self {
            // Keys and values are [1, heads, positions, head_dim]: positions are dimension 2.
            layers: (0..layers).map(|_| KvCache::new(2, capacity)).collect(),
            capacity,
            bytes_per_token,
        }
    }

    /// Appends this step's keys and values of `layer` ([1, heads, new positions, head_dim]) and
    /// returns every position's, this step's included.
    pub fn append(&mut self, layer: usize, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        self.layers[layer].append(k, v)
    }

    /// Positions held (the same in every layer once a step has gone through all of them).
    pub fn len(&self) -> usize {
        self.layers.last().map_or(0, KvCache::current_seq_len)
    }

    /// Bytes allocated: the whole reservation once the first position was written, else 0.
    pub fn bytes(&self) -> usize {
        if self.layers.first().is_some_and(|l| l.current_seq_len() > 0) {
            self.capacity * self.bytes_per_token
        } else {
            0
        }
    }
}
