//! Sinks: what every consumer of measurements implements.
//!
//! A [`Sink`] is asked once per series for a [`SeriesSink`]: the handles it will update for that
//! label set (histogram handles, attribute sets, ...). After that, every event goes straight to
//! those handles: the per-token path does no lookup and no allocation in tokenmeter, and should do
//! none in a sink either.
//!
//! | Event | When | Carries |
//! |---|---|---|
//! | [`SeriesSink::first_token`] | the first item that carries at least one token | TTFT, queue and prefill when known, tokens in that item |
//! | [`SeriesSink::items`] | later token-bearing items, in batches of up to [`Items::CAPACITY`] (the hot path; see [`Items`] for when a batch goes) | for each, the gap since the previous token-bearing item (one ITL sample) and its tokens; by default each goes to [`SeriesSink::item`] |
//! | [`SeriesSink::end`] | exactly once per request, on every path | the complete [`RequestRecord`] |
//! | [`SeriesSink::gauge`] | a request enters or leaves `waiting` or `running` | the change |
//! | [`Sink::series_folded`] | a label set past the cap was folded into `_OTHER` | the role |
//! | [`EngineSink::step`] | a batching engine finished a step ([`Meter::engine`](crate::Meter::engine)) | kind, batch size, tokens, duration |
//! | [`EngineSink::kv_cache_usage`] | the engine's KV-cache usage changed | the fraction, 0–1 |
//! | [`EngineSink::preemptions`] | the engine preempted requests | how many |
//! | [`EngineSink::cache_config`] | once, [`EngineRecorder::set_cache_config`] | block size, blocks |
//! | [`EngineSink::lora_adapters`] | the adapters changed ([`EngineRecorder::set_lora_adapters`]) | [`LoraInfo`], bounded: at most [`MAX_LORA_ADAPTERS`] names of [`MAX_LORA_NAME_BYTES`] bytes per list and [`MAX_LORA_COMBINATIONS`] pairs per engine, then `_OTHER` |
//! | [`EngineSink::waiting_by_reason`] | [`EngineRecorder::set_waiting_by_reason`] | the reason, the count |
//! | [`EngineSink::admission_rejections`] | [`EngineRecorder::add_admission_rejections`] | the reason, how many |
//!
//! Sinks provided here: [`NoopSink`], [`FanOut`] (several sinks as one) and [`InMemorySink`]
//! (exact values, for tests and reports).

mod engine_info;
mod engine_info_recorder;
mod engine_rows;
mod fanout;
mod guard;
mod items;
mod memory;
mod noop;
mod step;

pub use engine_info::{
    AdmissionReason, CacheConfig, LoraInfo, MAX_LORA_ADAPTERS, MAX_LORA_COMBINATIONS,
    MAX_LORA_NAME_BYTES, WaitingReason,
};
pub use engine_rows::{EngineRows, RecordValue};
pub use fanout::FanOut;
pub(crate) use guard::guarded;
pub use guard::sink_panics;
pub(crate) use items::Pending;
pub use items::{Item, Items, ItemsIter};
pub use memory::InMemorySink;
pub use noop::NoopSink;
pub use step::{EngineRecorder, EngineSink, Step, StepKind};

use std::time::Duration;

use crate::record::RequestRecord;
use crate::series::{Labels, Role};

/// A consumer of measurements: an exporter, an SLO evaluator, a test recorder.
///
/// # Examples
///
/// A sink that counts tokens per series with one atomic:
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
/// use tokenmeter::sink::{FirstToken, SeriesSink, Sink};
/// use tokenmeter::{Labels, Meter};
///
/// #[derive(Debug, Default)]
/// struct Tokens(Arc<AtomicU64>);
/// struct TokensHandle(Arc<AtomicU64>);
///
/// impl Sink for Tokens {
///     fn series(&self, _labels: &Labels<'_>) -> Box<dyn SeriesSink> {
///         Box::new(TokensHandle(self.0.clone()))
///     }
/// }
/// impl SeriesSink for TokensHandle {
///     fn first_token(&self, event: &FirstToken) {
///         self.0.fetch_add(u64::from(event.tokens), Ordering::Relaxed);
///     }
///     fn item(&self, _gap: Duration, tokens: u32) {
///         self.0.fetch_add(u64::from(tokens), Ordering::Relaxed);
///     }
/// }
///
/// let total = Arc::new(AtomicU64::new(0));
/// let meter = Meter::builder().sink(Tokens(total.clone())).build();
/// let mut request = meter.series(&Labels::client("chat")).start();
/// request.record_tokens(3);
/// request.record_tokens(2);
/// request.succeed();
/// assert_eq!(total.load(Ordering::Relaxed), 5);
/// ```
pub trait Sink: Send + Sync + 'static {
    /// Builds this sink's handles for a new series. Called once per series, under the meter's
    /// registry lock: may allocate, must not call back into the meter.
    fn series(&self, labels: &Labels<'_>) -> Box<dyn SeriesSink>;

    /// A label set past the cap was folded into the `_OTHER` series of `role`.
    fn series_folded(&self, role: Role) {
        let _ = role;
    }

    /// Builds this sink's handle for an engine's signals (steps, KV-cache usage, preemptions;
    /// labelled by model and provider), or `None` when the sink does not use them (the
    /// default). Called once per [`Meter::engine`](crate::Meter::engine).
    fn engine(&self, labels: &Labels<'_>) -> Option<Box<dyn EngineSink>> {
        let _ = labels;
        None
    }
}

impl<S: Sink + ?Sized> Sink for std::sync::Arc<S> {
    fn series(&self, labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        (**self).series(labels)
    }

    fn series_folded(&self, role: Role) {
        (**self).series_folded(role);
    }

    fn engine(&self, labels: &Labels<'_>) -> Option<Box<dyn EngineSink>> {
        (**self).engine(labels)
    }
}

/// One sink's handles for one series. Every method has an empty default.
///
/// Methods are called from whatever thread polls the stream; they must not block.
pub trait SeriesSink: Send + Sync + 'static {
    /// A request with this process-unique `id` started (the id is also in
    /// [`FirstToken::id`] and [`RequestRecord::id`]). Called on the thread that called
    /// [`Series::start`](crate::Series::start), so a sink can capture context that is current
    /// there (a tracing span, a task-local).
    fn start(&self, id: u64) {
        let _ = id;
    }

    /// The first token-bearing item of a request arrived.
    fn first_token(&self, event: &FirstToken) {
        let _ = event;
    }

    /// A later token-bearing item arrived `gap` after the previous one, carrying `tokens`.
    /// Called for each item by the default [`items`](Self::items); a sink that implements
    /// `items` itself need not implement this.
    fn item(&self, gap: Duration, tokens: u32) {
        let _ = (gap, tokens);
    }

    /// Later token-bearing items of one request, oldest first, in a batch (see [`Items`] for
    /// when a batch goes: always before the request's [`end`](Self::end)). The hot path: no
    /// allocation, no lock, no lookup. The default calls [`item`](Self::item) for each; a sink
    /// implements this to pay its per-call costs once per batch.
    fn items(&self, items: Items<'_>) {
        for item in items {
            self.item(item.gap, item.tokens);
        }
    }

    /// The request ended. Called exactly once per request.
    fn end(&self, record: &RequestRecord) {
        let _ = record;
    }

    /// A lifecycle gauge of this series changed by `delta`.
    fn gauge(&self, gauge: Gauge, delta: i64) {
        let _ = (gauge, delta);
    }

    /// Whether this handle wants the time of every token-bearing item in the records it gets
    /// ([`RequestRecord::item_times`]). Asked once, when the series is created. `false` by
    /// default: a request then keeps no per-item list and the per-token path allocates nothing.
    fn keeps_item_times(&self) -> bool {
        false
    }
}

/// What is known when the first token arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FirstToken {
    /// The request's process-unique id ([`Request::id`](crate::Request::id)).
    pub id: u64,
    /// First token − arrival (server) or send (client).
    pub ttft: Duration,
    /// Scheduled − arrival, when the request was marked scheduled.
    pub queue: Option<Duration>,
    /// First token − scheduled, when the request was marked scheduled.
    pub prefill: Option<Duration>,
    /// Tokens carried by the first token-bearing item (≥ 1).
    pub tokens: u32,
}

/// The lifecycle gauges the core keeps per series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Gauge {
    /// Started and not yet scheduled: in the queue (server) or waiting for the first token
    /// (client, or a server that never marks `scheduled`).
    Waiting,
    /// Scheduled or past the first token, and not yet ended.
    Running,
}

impl Gauge {
    /// `waiting` or `running`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Gauge::Waiting => "waiting",
            Gauge::Running => "running",
        }
    }
}
