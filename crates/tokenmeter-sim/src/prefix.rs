//! Automatic prefix caching, as vLLM does it: a prompt is cut into blocks of
//! [`BLOCK_TOKENS`] tokens, each full block named by a hash chained over every block before it,
//! and the engine keeps the blocks of past prompts (least recently used first out) so that a
//! later prompt with the same beginning skips the prefill of its cached blocks.

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

/// Tokens per KV-cache block: only whole blocks are cached (vLLM's default block size).
pub const BLOCK_TOKENS: u32 = 16;

/// The chained block hashes of a prompt of `prompt_tokens` tokens whose text is `text`: one
/// hash per *whole* block, the text split evenly by bytes (on character boundaries) over the
/// tokens. Two prompts share their first `k` hashes exactly when their first `k` blocks of
/// text are equal, as with vLLM's hashes of token ids.
///
/// # Examples
///
/// ```
/// use tokenmeter_sim::{BLOCK_TOKENS, prompt_blocks};
///
/// let system = "You are a careful assistant. ".repeat(20);
/// let a = prompt_blocks(&format!("{system}What is 2 + 2?"), 160);
/// let b = prompt_blocks(&format!("{system}Name a prime."), 160);
/// assert_eq!(a.len(), (160 / BLOCK_TOKENS) as usize);
/// assert_eq!(a[..8], b[..8]); // the shared system prompt
/// assert_ne!(a.last(), b.last());
/// ```
pub fn prompt_blocks(text: &str, prompt_tokens: u32) -> Arc<[u64]> {
    let blocks = prompt_tokens / BLOCK_TOKENS;
    if blocks == 0 || text.is_empty() {
        return Arc::from([]);
    }
    let bytes = text.len() as u64;
    let mut out = Vec::with_capacity(blocks as usize);
    let mut chain = 0u64;
    let mut start = 0usize;
    for block in 1..=u64::from(blocks) {
        let mut end =
            usize::try_from(bytes * block * u64::from(BLOCK_TOKENS) / u64::from(prompt_tokens))
                .unwrap_or(text.len())
                .min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let mut hasher = DefaultHasher::new();
        chain.hash(&mut hasher);
        text[start..end].hash(&mut hasher);
        chain = hasher.finish();
        out.push(chain);
        start = end;
    }
    Arc::from(out)
}

/// The engine's cache of prompt blocks, bounded in blocks, least recently used evicted first.
#[derive(Debug)]
pub(crate) struct PrefixCache {
    capacity: usize,
    /// Block hash → the tick it was last used.
    blocks: HashMap<u64, u64>,
    /// (tick, hash) in use order; stale entries (re-used since) are skipped on eviction.
    order: VecDeque<(u64, u64)>,
    tick: u64,
}

impl PrefixCache {
    /// A cache of at most `capacity` blocks (0 turns caching off).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            blocks: HashMap::new(),
            order: VecDeque::new(),
            tick: 0,
        }
    }

    /// Looks `blocks` up: the number of leading blocks the cache had (the hit), then stores
    /// them all as most recently used.
    pub(crate) fn lookup(&mut self, blocks: &[u64]) -> u32 {
        if self.capacity == 0 {
            return 0;
        }
        let hit = blocks
            .iter()
            .take_while(|hash| self.blocks.contains_key(hash))
            .count();
        for &hash in blocks {
            self.tick += 1;
            self.blocks.insert(hash, self.tick);
            self.order.push_back((self.tick, hash));
        }
        while self.blocks.len() > self.capacity {
            let Some((tick, hash)) = self.order.pop_front() else {
                break;
            };
            if self.blocks.get(&hash) == Some(&tick) {
                self.blocks.remove(&hash);
            }
        }
        // keep the order queue bounded too: drop stale entries at its front
        while self
            .order
            .front()
            .is_some_and(|(tick, hash)| self.blocks.get(hash) != Some(tick))
        {
            self.order.pop_front();
        }
        u32::try_from(hit).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_prefix_hits_its_whole_blocks_only() {
        let mut cache = PrefixCache::new(1000);
        let shared = "x".repeat(640);
        let a = prompt_blocks(&format!("{shared}{}", "a".repeat(160)), 200);
        let b = prompt_blocks(&format!("{shared}{}", "b".repeat(160)), 200);
        assert_eq!(cache.lookup(&a), 0);
        assert_eq!(cache.lookup(&a), 12, "all 12 whole blocks");
        // 640 of 800 bytes are shared: blocks 1..=10 cover bytes up to 640
        assert_eq!(cache.lookup(&b), 10);
    }

    #[test]
    fn the_least_recently_used_blocks_leave_first() {
        let mut cache = PrefixCache::new(4);
        let a = prompt_blocks(&"a".repeat(64), 64);
        let b = prompt_blocks(&"b".repeat(64), 64);
        assert_eq!(cache.lookup(&a), 0);
        assert_eq!(cache.lookup(&b), 0); // evicts a
        assert_eq!(cache.lookup(&b), 4);
        assert_eq!(cache.lookup(&a), 0);
        assert!(cache.order.len() <= 8, "{}", cache.order.len());
    }

    #[test]
    fn a_short_prompt_has_no_whole_block_and_caching_can_be_off() {
        assert!(prompt_blocks("hello", 15).is_empty());
        assert!(prompt_blocks("", 64).is_empty());
        let mut off = PrefixCache::new(0);
        let a = prompt_blocks(&"a".repeat(64), 64);
        off.lookup(&a);
        assert_eq!(off.lookup(&a), 0);
    }

    #[test]
    fn multibyte_text_splits_on_character_boundaries() {
        let blocks = prompt_blocks(&"é".repeat(100), 64);
        assert_eq!(blocks.len(), 4);
    }
}
