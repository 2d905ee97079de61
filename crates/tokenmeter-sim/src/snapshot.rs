//! [`Snapshot`] and [`StepStats`]: what the engine is doing.

use std::time::Duration;

/// The engine's state at one moment: queue depth, batch size and KV-cache use.
///
/// # Examples
///
/// ```
/// use tokenmeter_sim::Snapshot;
/// # fn show(snapshot: Snapshot) {
/// println!(
///     "{} waiting, {} running, KV cache {:.0}% used",
///     snapshot.waiting,
///     snapshot.running,
///     snapshot.kv_usage() * 100.0
/// );
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Snapshot {
    /// Requests submitted and not yet admitted (the queue depth).
    pub waiting: usize,
    /// Requests admitted and not yet ended (the batch size, stalled ones included).
    pub running: usize,
    /// KV-cache tokens in use: prompt plus tokens generated so far, over the running batch.
    pub kv_used_tokens: u64,
    /// KV-cache tokens reserved: prompt plus whole output, over the running batch.
    pub kv_reserved_tokens: u64,
    /// KV-cache capacity in tokens.
    pub kv_capacity_tokens: u64,
    /// Steps run so far.
    pub steps: u64,
    /// The last step, once one has run.
    pub last_step: Option<StepStats>,
    /// Engine counters since the start: the ground truth of the engine's signals.
    pub totals: EngineTotals,
}

/// What the engine has counted since it started: the values its engine signals report
/// (preemptions, prefix-cache lookups, speculative decoding).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EngineTotals {
    /// Requests preempted (their KV cache freed and the request put back in the queue).
    pub preemptions: u64,
    /// Prompt tokens looked up in the prefix cache.
    pub prefix_queries: u64,
    /// Prompt tokens found there (prefill skipped).
    pub prefix_hits: u64,
    /// Speculative drafts proposed.
    pub drafts: u64,
    /// Draft tokens proposed.
    pub draft_tokens: u64,
    /// Draft tokens accepted.
    pub accepted_tokens: u64,
}

impl Snapshot {
    /// KV-cache tokens in use over the capacity: a fraction from 0 to 1 (vLLM's
    /// `kv_cache_usage_perc`).
    pub fn kv_usage(&self) -> f64 {
        if self.kv_capacity_tokens == 0 {
            return 0.0;
        }
        (self.kv_used_tokens as f64 / self.kv_capacity_tokens as f64).clamp(0.0, 1.0)
    }
}

/// What one engine step did. Given to the hook set with
/// [`EngineBuilder::on_step`](crate::EngineBuilder::on_step) and kept in [`Snapshot::last_step`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StepStats {
    /// The step's number, from 0.
    pub index: u64,
    /// When the step started, since the engine started (tokio time).
    pub started: Duration,
    /// How long it took (its cost; the wake-up may be later by the timer's resolution).
    pub duration: Duration,
    /// Requests admitted and prefilled in this step.
    pub prefill_requests: usize,
    /// Prompt tokens prefilled in this step.
    pub prefill_tokens: u64,
    /// Requests that ran a decode step (the decode batch).
    pub decode_requests: usize,
    /// Tokens and errors put in the requests' output queues at the end of the step.
    pub emitted: usize,
    /// Requests still waiting after admission.
    pub waiting: usize,
}

impl StepStats {
    /// What kind of step it was.
    pub fn kind(&self) -> StepKind {
        match (self.prefill_requests > 0, self.decode_requests > 0) {
            (true, true) => StepKind::Mixed,
            (true, false) => StepKind::Prefill,
            _ => StepKind::Decode,
        }
    }
}

/// Prefill only, decode only, or both in one step: the core's step kind, the one the meter's
/// engine recorder takes.
pub use tokenmeter::sink::StepKind;
