//! [`EngineRows`]: an exporter's engine handles for the table's step and engine-signal rows,
//! and the one loop that feeds them: per step, each step row's value in the variant its
//! attributes pick; per signal, the rows of that signal. An exporter supplies only how one of
//! its handles records a value ([`RecordValue`]).

use crate::conventions::{AttrSet, EngineSignal, Feed, Row, StepField, Value};
use crate::sink::{AdmissionReason, CacheConfig, EngineSink, LoraInfo, Step, WaitingReason};

/// How an exporter's handle records one value, in one of its attribute variants.
pub trait RecordValue: Send + Sync + 'static {
    /// Records `value` in variant `variant` (0 when the row has one).
    fn record(&self, variant: usize, value: Value);

    /// Records the value of an info row ([`EngineSignal::is_info`]) with `attrs` besides the
    /// engine's: a handle for that attribute set, set to `value`. Info values change rarely
    /// (a configuration, the LoRA adapters); the core bounds their attributes. The default
    /// records nothing: an exporter that publishes info rows implements it.
    fn record_info(&self, attrs: &[(&'static str, &str)], value: Value) {
        let _ = (attrs, value);
    }
}

/// One engine's handles for the step and engine-signal rows of a conventions table.
///
/// # Examples
///
/// ```
/// use std::sync::Mutex;
/// use std::time::Duration;
/// use tokenmeter::conventions::{Conventions, Value};
/// use tokenmeter::sink::{EngineRows, EngineSink, RecordValue, Step, StepKind};
///
/// #[derive(Default)]
/// struct Seen(Mutex<Vec<(usize, Value)>>);
/// impl RecordValue for Seen {
///     fn record(&self, variant: usize, value: Value) {
///         self.0.lock().unwrap().push((variant, value));
///     }
/// }
///
/// let table = Conventions::default();
/// let engine = EngineRows::new(table.rows().iter().map(|row| (row, Seen::default())));
/// assert!(engine.rows() > 0);
/// engine.step(&Step::new(StepKind::Decode, 4, 4, Duration::from_millis(8)));
/// engine.kv_cache_usage(0.5);
/// ```
pub struct EngineRows<S> {
    steps: Box<[(StepField, AttrSet, S)]>,
    signals: Box<[(EngineSignal, S)]>,
}

impl<S> EngineRows<S> {
    /// The handles of the step and engine-signal rows among `rows` (each with its handle);
    /// the other rows are left out.
    pub fn new<'r>(rows: impl IntoIterator<Item = (&'r Row, S)>) -> Self {
        let (mut steps, mut signals) = (Vec::new(), Vec::new());
        for (row, slot) in rows {
            match row.feed {
                Feed::Step(field) => steps.push((field, row.attrs, slot)),
                Feed::Engine(signal) => signals.push((signal, slot)),
                _ => {}
            }
        }
        Self {
            steps: steps.into(),
            signals: signals.into(),
        }
    }

    /// Rows kept (step and signal rows).
    pub fn rows(&self) -> usize {
        self.steps.len() + self.signals.len()
    }
}

impl<S: RecordValue> EngineRows<S> {
    fn signal(&self, signal: EngineSignal, value: Value) {
        for (_, slot) in self.signals.iter().filter(|(s, _)| *s == signal) {
            slot.record(0, value);
        }
    }

    fn info(&self, signal: EngineSignal, attrs: &[(&'static str, &str)], value: Value) {
        for (_, slot) in self.signals.iter().filter(|(s, _)| *s == signal) {
            slot.record_info(attrs, value);
        }
    }
}

impl<S: RecordValue> EngineSink for EngineRows<S> {
    fn step(&self, step: &Step) {
        for (field, attrs, slot) in self.steps.iter() {
            slot.record(attrs.step_variant(step), field.read(step));
        }
    }

    fn kv_cache_usage(&self, fraction: f64) {
        self.signal(EngineSignal::KvCacheUsage, Value::Level(fraction));
    }

    fn preemptions(&self, count: u64) {
        self.signal(EngineSignal::Preemptions, Value::Count(count));
    }

    fn prefix_cache(&self, queries: u64, hits: u64) {
        self.signal(EngineSignal::PrefixCacheQueries, Value::Count(queries));
        self.signal(EngineSignal::PrefixCacheHits, Value::Count(hits));
    }

    fn speculation(&self, drafts: u64, draft_tokens: u64, accepted_tokens: u64) {
        self.signal(EngineSignal::SpecDrafts, Value::Count(drafts));
        self.signal(EngineSignal::SpecDraftTokens, Value::Count(draft_tokens));
        self.signal(
            EngineSignal::SpecAcceptedTokens,
            Value::Count(accepted_tokens),
        );
    }

    fn cache_config(&self, config: &CacheConfig) {
        let (block_size, blocks) = (
            config.block_size.to_string(),
            config.num_gpu_blocks.to_string(),
        );
        let attrs = [
            ("block_size", block_size.as_str()),
            ("num_gpu_blocks", &blocks),
        ];
        self.info(EngineSignal::CacheConfigInfo, &attrs, Value::Level(1.0));
    }

    fn lora_adapters(&self, info: &LoraInfo<'_>) {
        let max_lora = info.max_lora.to_string();
        let attrs = [
            ("max_lora", max_lora.as_str()),
            ("running_lora_adapters", info.running),
            ("waiting_lora_adapters", info.waiting),
        ];
        let value = Value::Level(info.changed_at);
        self.info(EngineSignal::LoraRequestsInfo, &attrs, value);
    }

    fn waiting_by_reason(&self, reason: WaitingReason, count: u64) {
        let signal = match reason {
            WaitingReason::Capacity => EngineSignal::WaitingCapacity,
            WaitingReason::Deferred => EngineSignal::WaitingDeferred,
        };
        self.signal(signal, Value::Level(count as f64));
    }

    fn admission_rejections(&self, reason: AdmissionReason, count: u64) {
        let signal = match reason {
            AdmissionReason::QueueFull => EngineSignal::RejectedQueueFull,
            AdmissionReason::TooLarge => EngineSignal::RejectedTooLarge,
        };
        self.signal(signal, Value::Count(count));
    }
}

impl<S> std::fmt::Debug for EngineRows<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineRows")
            .field("steps", &self.steps.len())
            .field("signals", &self.signals.len())
            .finish_non_exhaustive()
    }
}
