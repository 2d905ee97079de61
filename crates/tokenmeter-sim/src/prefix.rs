//! Automatic prefix caching, as vLLM does it: a prompt is cut into blocks of
//! [`BLOCK_TOKENS`] tokens, each full block named by a hash chained over every block before it,
//! and the engine keeps the blocks of past prompts (least recently used first out) so that a
//! later prompt with the same beginning skips the prefill of its cached blocks.

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

/// Tokens per KV-cache block: only whole blocks are cached (vLLM's default block size).
pub const BLOCK_TOKENS: u32 = 16;

/// Bytes of prompt text per token when cutting blocks: the 4 characters a token that `serve`
/// estimates without a tokenizer.
pub const BLOCK_BYTES_PER_TOKEN: usize = 4;

/// The chained block hashes of a prompt of `prompt_tokens` tokens whose text is `text`: one
/// hash per *whole* block of [`BLOCK_TOKENS`] tokens, a block being the next
/// `BLOCK_TOKENS × BLOCK_BYTES_PER_TOKEN` bytes of text (extended to a character boundary).
/// Where a block starts depends only on the text before it, so two prompts share their first
/// `k` hashes exactly when their first `k` blocks of text are equal, as with vLLM's hashes of
/// token ids; the hit is counted in tokens (`k × BLOCK_TOKENS`).
///
/// # Examples
///
/// ```
/// use tokenmeter_sim::{BLOCK_TOKENS, prompt_blocks};
///
/// let system = "You are a careful assistant. ".repeat(20); // 580 bytes: 9 whole blocks
/// let a = prompt_blocks(&format!("{system}What is two plus two? Explain each step slowly and clearly, please."), 200);
/// let b = prompt_blocks(&format!("{system}Name a prime number, then name the next prime number after it."), 200);
/// assert_eq!((a.len(), b.len()), (10, 10));
/// assert_eq!(a[..9], b[..9]); // the shared system prompt
/// assert_ne!(a[9], b[9]);
/// ```
pub fn prompt_blocks(text: &str, prompt_tokens: u32) -> Arc<[u64]> {
    let width = BLOCK_TOKENS as usize * BLOCK_BYTES_PER_TOKEN;
    let blocks = (prompt_tokens / BLOCK_TOKENS) as usize;
    let mut out = Vec::with_capacity(blocks.min(text.len() / width));
    let mut chain = 0u64;
    let mut start = 0usize;
    while out.len() < blocks && text.len() - start >= width {
        let mut end = start + width;
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
        let b = prompt_blocks(&format!("{shared}{}", "b".repeat(300)), 240);
        assert_eq!(cache.lookup(&a), 0);
        assert_eq!(cache.lookup(&a), 12, "all 12 whole blocks");
        // the first 640 bytes (10 blocks of 64) are shared, whatever follows
        assert_eq!(cache.lookup(&b), 10);
    }

    #[test]
    fn the_least_recently_used_blocks_leave_first() {
        let mut cache = PrefixCache::new(4);
        let a = prompt_blocks(&"a".repeat(256), 64);
        let b = prompt_blocks(&"b".repeat(256), 64);
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
        assert!(
            prompt_blocks(&"short".repeat(10), 64).is_empty(),
            "50 bytes: no whole block"
        );
        let mut off = PrefixCache::new(0);
        let a = prompt_blocks(&"a".repeat(256), 64);
        off.lookup(&a);
        assert_eq!(off.lookup(&a), 0);
    }

    #[test]
    fn multibyte_text_splits_on_character_boundaries() {
        let blocks = prompt_blocks(&"é".repeat(200), 64);
        assert_eq!(blocks.len(), 4);
        assert_eq!(
            blocks,
            prompt_blocks(&format!("{}ü", "é".repeat(200)), 70)[..4].into()
        );
    }
}
