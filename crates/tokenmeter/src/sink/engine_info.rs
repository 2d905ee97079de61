//! What a gateway's endpoint picker reads from an engine besides its queue and KV-cache usage
//! (the Gateway API Inference Extension's model-server protocol): the KV-cache configuration,
//! the LoRA adapters running and waiting, the waiting requests by reason and the admission
//! rejections, recorded through [`EngineRecorder`](super::EngineRecorder) (its methods are in
//! `engine_info_recorder.rs`).
//!
//! The adapters are label values, so they are bounded here, before any sink sees them: at most
//! [`MAX_LORA_ADAPTERS`] names per list, each cut to [`MAX_LORA_NAME_BYTES`] bytes (a comma,
//! whitespace or control character in a name becomes `_`), and at most
//! [`MAX_LORA_COMBINATIONS`] distinct (running, waiting) pairs per engine; past that, a new pair
//! is published as `_OTHER` for both lists. A flood of adapter names cannot grow an exposition.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};

/// Most adapter names published per list (running, waiting); the first ones in sorted order
/// are kept.
pub const MAX_LORA_ADAPTERS: usize = 16;
/// Longest adapter name published, in bytes; a longer name is cut at a character boundary.
pub const MAX_LORA_NAME_BYTES: usize = 64;
/// Most distinct (running, waiting) label pairs one engine publishes; past that a new pair is
/// published as `_OTHER`.
pub const MAX_LORA_COMBINATIONS: usize = 32;

/// An engine's KV-cache configuration (vLLM's `cache_config_info` labels).
///
/// # Examples
///
/// ```
/// use tokenmeter::sink::CacheConfig;
///
/// let config = CacheConfig::new(16, 25_000);
/// assert_eq!(config.capacity_tokens(), 400_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheConfig {
    /// Tokens per KV-cache block.
    pub block_size: u32,
    /// Blocks in the KV cache.
    pub num_gpu_blocks: u64,
}

impl CacheConfig {
    /// A configuration of `num_gpu_blocks` blocks of `block_size` tokens.
    pub const fn new(block_size: u32, num_gpu_blocks: u64) -> Self {
        Self {
            block_size,
            num_gpu_blocks,
        }
    }

    /// Tokens the cache holds: blocks × block size.
    pub const fn capacity_tokens(&self) -> u64 {
        self.num_gpu_blocks.saturating_mul(self.block_size as u64)
    }
}

/// The LoRA adapters an engine runs and queues, as a sink gets them: already bounded (see the
/// module docs), comma-separated, sorted.
///
/// # Examples
///
/// A sink reads one in [`EngineSink::lora_adapters`](super::EngineSink::lora_adapters):
///
/// ```
/// use tokenmeter::sink::{EngineSink, LoraInfo};
///
/// struct Print;
/// impl EngineSink for Print {
///     fn lora_adapters(&self, info: &LoraInfo<'_>) {
///         println!("{} of {} running: {}", info.running, info.max_lora, info.waiting);
///     }
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct LoraInfo<'a> {
    /// Most adapters the engine can hold at once (vLLM's `max_loras`).
    pub max_lora: u32,
    /// Adapters loaded and serving requests, comma-separated (empty for none).
    pub running: &'a str,
    /// Adapters that requests in the queue wait for, comma-separated (empty for none).
    pub waiting: &'a str,
    /// When they last changed, in seconds since the Unix epoch: the info gauge's value, so a
    /// reader picks the newest series.
    pub changed_at: f64,
}

/// Why requests wait in an engine's queue (vLLM's `num_requests_waiting_by_reason`).
///
/// # Examples
///
/// ```
/// use tokenmeter::sink::WaitingReason;
///
/// assert_eq!(WaitingReason::Capacity.as_str(), "capacity");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WaitingReason {
    /// No room in the batch or the KV cache.
    Capacity,
    /// Held back for another cause (a remote KV transfer, a grammar being compiled, …).
    Deferred,
}

impl WaitingReason {
    /// `capacity` or `deferred`.
    pub const fn as_str(self) -> &'static str {
        match self {
            WaitingReason::Capacity => "capacity",
            WaitingReason::Deferred => "deferred",
        }
    }
}

/// Why an engine refused to admit a request.
///
/// # Examples
///
/// ```
/// use tokenmeter::sink::AdmissionReason;
///
/// assert_eq!(AdmissionReason::QueueFull.as_str(), "queue_full");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AdmissionReason {
    /// The waiting queue was at its limit (answered 429 or 503 by a server).
    QueueFull,
    /// The request can never fit (its KV cache is larger than the engine's).
    TooLarge,
}

impl AdmissionReason {
    /// `queue_full` or `too_large`.
    pub const fn as_str(self) -> &'static str {
        match self {
            AdmissionReason::QueueFull => "queue_full",
            AdmissionReason::TooLarge => "too_large",
        }
    }
}

/// What an engine recorder last published of its adapters, and every pair it published.
#[derive(Debug, Default)]
pub(super) struct LoraState {
    inner: Mutex<LoraSeen>,
}

#[derive(Debug, Default)]
struct LoraSeen {
    last: Option<(u32, String, String)>,
    pairs: HashSet<(String, String)>,
}

/// `names` bounded: sanitized, cut, sorted, deduplicated, at most [`MAX_LORA_ADAPTERS`],
/// comma-separated.
fn bounded<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut kept: Vec<String> = names
        .into_iter()
        .filter(|name| !name.is_empty())
        .map(|name| {
            let mut end = name.len().min(MAX_LORA_NAME_BYTES);
            while !name.is_char_boundary(end) {
                end -= 1;
            }
            name[..end]
                .chars()
                .map(|c| {
                    if c == ',' || c.is_whitespace() || c.is_control() {
                        '_'
                    } else {
                        c
                    }
                })
                .collect()
        })
        .collect();
    kept.sort_unstable();
    kept.dedup();
    kept.truncate(MAX_LORA_ADAPTERS);
    let mut out = String::new();
    for (i, name) in kept.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{name}");
    }
    out
}

impl LoraState {
    /// The info to publish for these adapters, or `None` when nothing changed.
    pub(super) fn update<'a>(
        &self,
        max_lora: u32,
        running: impl IntoIterator<Item = &'a str>,
        waiting: impl IntoIterator<Item = &'a str>,
    ) -> Option<(u32, String, String)> {
        let (mut running, mut waiting) = (bounded(running), bounded(waiting));
        let mut seen = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let pair = (running.clone(), waiting.clone());
        if !seen.pairs.contains(&pair) {
            if seen.pairs.len() < MAX_LORA_COMBINATIONS {
                seen.pairs.insert(pair);
            } else {
                running = crate::series::OTHER.to_owned();
                waiting = crate::series::OTHER.to_owned();
            }
        }
        let next = (max_lora, running, waiting);
        if seen.last.as_ref() == Some(&next) {
            return None;
        }
        seen.last = Some(next.clone());
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_sanitized_sorted_and_capped() {
        let long = "é".repeat(40); // 80 bytes
        let joined = bounded(["b", "a, x", "b", "", long.as_str()]);
        let names: Vec<&str> = joined.split(',').collect();
        assert_eq!(names[..2], ["a__x", "b"]);
        assert!(names[2].len() <= MAX_LORA_NAME_BYTES && names[2].starts_with('é'));
        let many: Vec<String> = (0..100).map(|i| format!("adapter-{i:03}")).collect();
        let joined = bounded(many.iter().map(String::as_str));
        assert_eq!(joined.split(',').count(), MAX_LORA_ADAPTERS);
    }

    #[test]
    fn an_unchanged_list_is_not_published_again_and_pairs_past_the_cap_fold() {
        let state = LoraState::default();
        assert!(state.update(2, ["a"], []).is_some());
        assert!(state.update(2, ["a"], []).is_none());
        let mut published = HashSet::new();
        for i in 0..200 {
            let name = format!("n{i}");
            if let Some((_, running, waiting)) = state.update(2, [name.as_str()], []) {
                published.insert((running, waiting));
            }
        }
        assert!(published.len() <= MAX_LORA_COMBINATIONS + 1);
        assert!(published.contains(&("_OTHER".to_owned(), "_OTHER".to_owned())));
    }
}
