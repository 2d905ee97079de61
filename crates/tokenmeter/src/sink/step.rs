//! Engine signals: the steps a batching server does once per iteration (for the batch-size
//! trade-off), its KV-cache usage and its preemptions, through one [`EngineRecorder`].

use std::fmt;
use std::time::Duration;

use super::Sink;
use super::engine_info::{AdmissionReason, CacheConfig, LoraInfo, LoraState, WaitingReason};
use crate::series::Labels;

/// What an engine step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StepKind {
    /// Prompt processing only.
    Prefill,
    /// One token for each running sequence.
    Decode,
    /// Prefill and decode in one step (chunked prefill).
    Mixed,
}

impl StepKind {
    /// Every kind, in [`index`](StepKind::index) order: exporters keep one prepared handle per
    /// kind in an array of this length and pick it with `index`, with no lookup per step.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::sink::StepKind;
    ///
    /// for (slot, kind) in StepKind::ALL.into_iter().enumerate() {
    ///     assert_eq!(kind.index(), slot);
    /// }
    /// ```
    pub const ALL: [StepKind; 3] = [StepKind::Prefill, StepKind::Decode, StepKind::Mixed];

    /// This kind's position in [`ALL`](StepKind::ALL).
    pub const fn index(self) -> usize {
        match self {
            StepKind::Prefill => 0,
            StepKind::Decode => 1,
            StepKind::Mixed => 2,
        }
    }

    /// `prefill`, `decode` or `mixed`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StepKind::Prefill => "prefill",
            StepKind::Decode => "decode",
            StepKind::Mixed => "mixed",
        }
    }
}

/// One engine step (one scheduler iteration).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::sink::{Step, StepKind};
/// let step = Step::new(StepKind::Decode, 32, 32, Duration::from_millis(12));
/// assert_eq!(step.tokens_per_second(), Some(32.0 / 0.012));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Step {
    /// Prefill, decode or both.
    pub kind: StepKind,
    /// Sequences in the batch.
    pub batch_size: u32,
    /// Tokens processed: prompt tokens for a prefill, one per sequence for a decode.
    pub tokens: u32,
    /// How long the step took.
    pub duration: Duration,
}

impl Step {
    /// A step.
    pub const fn new(kind: StepKind, batch_size: u32, tokens: u32, duration: Duration) -> Self {
        Self {
            kind,
            batch_size,
            tokens,
            duration,
        }
    }

    /// Tokens per second over the step: the engine's (one GPU's) throughput.
    pub fn tokens_per_second(&self) -> Option<f64> {
        let s = self.duration.as_secs_f64();
        (s > 0.0).then(|| f64::from(self.tokens) / s)
    }
}

/// A sink's handle for one engine's signals. Every method has an empty default.
pub trait EngineSink: Send + Sync + 'static {
    /// One step ended.
    fn step(&self, step: &Step) {
        let _ = step;
    }

    /// The KV-cache usage is now `fraction`, from 0 (empty) to 1 (full): already clamped to
    /// that range, never NaN.
    fn kv_cache_usage(&self, fraction: f64) {
        let _ = fraction;
    }

    /// `count` more requests were preempted (their KV cache evicted).
    fn preemptions(&self, count: u64) {
        let _ = count;
    }

    /// `queries` prompt tokens were looked up in the prefix cache and `hits` of them found
    /// (`hits` ≤ `queries`).
    fn prefix_cache(&self, queries: u64, hits: u64) {
        let _ = (queries, hits);
    }

    /// Speculative decoding proposed `drafts` drafts of `draft_tokens` tokens in all, of which
    /// the target model accepted `accepted_tokens` (≤ `draft_tokens`).
    fn speculation(&self, drafts: u64, draft_tokens: u64, accepted_tokens: u64) {
        let _ = (drafts, draft_tokens, accepted_tokens);
    }

    /// The engine's KV-cache configuration (once per engine).
    fn cache_config(&self, config: &CacheConfig) {
        let _ = config;
    }

    /// The LoRA adapters running and waiting changed (already bounded).
    fn lora_adapters(&self, info: &LoraInfo<'_>) {
        let _ = info;
    }

    /// `count` requests now wait in the queue for `reason`.
    fn waiting_by_reason(&self, reason: WaitingReason, count: u64) {
        let _ = (reason, count);
    }

    /// `count` more requests were refused admission for `reason`.
    fn admission_rejections(&self, reason: AdmissionReason, count: u64) {
        let _ = (reason, count);
    }
}

/// Records one engine's signals (steps, KV-cache usage, preemptions) to every sink that wants
/// them. Build it once per engine with [`Meter::engine`](crate::Meter::engine) and keep it:
/// each call then goes to handles the sinks prepared for that engine.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::sink::{Step, StepKind};
/// use tokenmeter::{Labels, Meter};
///
/// let meter = Meter::builder().build();
/// let engine = meter.engine(&Labels::server("").request_model("llama-3-8b"));
/// engine.record(&Step::new(StepKind::Decode, 8, 8, Duration::from_millis(8)));
/// engine.set_kv_cache_usage(0.42);
/// engine.add_preemptions(1);
/// ```
pub struct EngineRecorder {
    pub(super) handles: Box<[Box<dyn EngineSink>]>,
    pub(super) lora: LoraState,
    pub(super) cache_config_set: std::sync::atomic::AtomicBool,
}

impl EngineRecorder {
    pub(crate) fn new(sink: &dyn Sink, labels: &Labels<'_>) -> Self {
        Self {
            handles: sink.engine(labels).into_iter().collect(),
            lora: LoraState::default(),
            cache_config_set: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Records one step.
    pub fn record(&self, step: &Step) {
        for handle in self.handles.iter() {
            super::guarded(|| handle.step(step));
        }
    }

    /// Sets the KV-cache usage, a fraction from 0 (empty) to 1 (full). Values outside are
    /// clamped; NaN is ignored.
    pub fn set_kv_cache_usage(&self, fraction: f64) {
        if fraction.is_nan() {
            return;
        }
        let fraction = fraction.clamp(0.0, 1.0);
        for handle in self.handles.iter() {
            super::guarded(|| handle.kv_cache_usage(fraction));
        }
    }

    /// Counts `count` more preempted requests.
    pub fn add_preemptions(&self, count: u64) {
        for handle in self.handles.iter() {
            super::guarded(|| handle.preemptions(count));
        }
    }

    /// Adds a prefix-cache lookup: `queries` prompt tokens looked up, `hits` of them found
    /// (in tokens, as vLLM counts them). `hits` above `queries` is clamped to `queries`.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::{Labels, Meter};
    ///
    /// let meter = Meter::builder().build();
    /// let engine = meter.engine(&Labels::server("chat"));
    /// engine.add_prefix_cache(1024, 768); // 75 % of the looked-up prompt tokens were cached
    /// ```
    pub fn add_prefix_cache(&self, queries: u64, hits: u64) {
        let hits = hits.min(queries);
        for handle in self.handles.iter() {
            super::guarded(|| handle.prefix_cache(queries, hits));
        }
    }

    /// Adds speculative-decoding work: `drafts` drafts proposed, `draft_tokens` tokens in them,
    /// `accepted_tokens` of those accepted (clamped to `draft_tokens`). The acceptance rate is
    /// accepted ÷ draft tokens.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::{Labels, Meter};
    ///
    /// let meter = Meter::builder().build();
    /// let engine = meter.engine(&Labels::server("chat"));
    /// engine.add_speculation(1, 4, 3); // one draft of 4 tokens, 3 accepted
    /// ```
    pub fn add_speculation(&self, drafts: u64, draft_tokens: u64, accepted_tokens: u64) {
        let accepted_tokens = accepted_tokens.min(draft_tokens);
        for handle in self.handles.iter() {
            super::guarded(|| handle.speculation(drafts, draft_tokens, accepted_tokens));
        }
    }
}

impl fmt::Debug for EngineRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineRecorder")
            .field("sinks", &self.handles.len())
            .finish()
    }
}

/// Several engine sinks as one (what [`FanOut`](super::FanOut) hands out).
pub(crate) struct EngineFanOut(pub(crate) Box<[Box<dyn EngineSink>]>);

impl EngineSink for EngineFanOut {
    fn step(&self, step: &Step) {
        for handle in self.0.iter() {
            super::guarded(|| handle.step(step));
        }
    }

    fn kv_cache_usage(&self, fraction: f64) {
        for handle in self.0.iter() {
            super::guarded(|| handle.kv_cache_usage(fraction));
        }
    }

    fn preemptions(&self, count: u64) {
        for handle in self.0.iter() {
            super::guarded(|| handle.preemptions(count));
        }
    }

    fn prefix_cache(&self, queries: u64, hits: u64) {
        for handle in self.0.iter() {
            super::guarded(|| handle.prefix_cache(queries, hits));
        }
    }

    fn speculation(&self, drafts: u64, draft_tokens: u64, accepted_tokens: u64) {
        for handle in self.0.iter() {
            super::guarded(|| handle.speculation(drafts, draft_tokens, accepted_tokens));
        }
    }

    fn cache_config(&self, config: &CacheConfig) {
        for handle in self.0.iter() {
            super::guarded(|| handle.cache_config(config));
        }
    }

    fn lora_adapters(&self, info: &LoraInfo<'_>) {
        for handle in self.0.iter() {
            super::guarded(|| handle.lora_adapters(info));
        }
    }

    fn waiting_by_reason(&self, reason: WaitingReason, count: u64) {
        for handle in self.0.iter() {
            super::guarded(|| handle.waiting_by_reason(reason, count));
        }
    }

    fn admission_rejections(&self, reason: AdmissionReason, count: u64) {
        for handle in self.0.iter() {
            super::guarded(|| handle.admission_rejections(reason, count));
        }
    }
}
