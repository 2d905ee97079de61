//! [`Feed`]: which event feeds an instrument and which field of that event it reads, and
//! [`Value`], what the field gives.

use std::time::Duration;

use crate::record::RequestRecord;
use crate::sink::{FirstToken, Gauge, Step};

/// A measured value, as an exporter records it.
///
/// # Examples
///
/// ```
/// use tokenmeter::conventions::Value;
///
/// assert_eq!(Value::Count(3).as_f64(), 3.0);
/// assert_eq!(Value::Delta(-1).as_f64(), -1.0);
/// assert_eq!(Value::Seconds(0.25).as_u64(), 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// Seconds (a duration).
    Seconds(f64),
    /// A count (tokens, requests, sequences).
    Count(u64),
    /// A change of an up-down counter.
    Delta(i64),
    /// A value that is set (a fraction, for KV-cache usage).
    Level(f64),
}

impl Value {
    /// The value as `f64` (what a Prometheus handle takes).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Seconds(v) | Value::Level(v) => v,
            Value::Count(n) => n as f64,
            Value::Delta(d) => d as f64,
        }
    }

    /// The value as `u64` (what a count instrument takes): negative and fractional values
    /// round down, saturating at 0.
    pub fn as_u64(self) -> u64 {
        match self {
            Value::Count(n) => n,
            Value::Delta(d) => u64::try_from(d).unwrap_or(0),
            Value::Seconds(v) | Value::Level(v) => v.max(0.0) as u64,
        }
    }

    /// The value as `i64` (what an up-down counter takes), saturating.
    pub fn as_i64(self) -> i64 {
        match self {
            Value::Delta(d) => d,
            Value::Count(n) => i64::try_from(n).unwrap_or(i64::MAX),
            Value::Seconds(v) | Value::Level(v) => v as i64,
        }
    }
}

fn secs(d: Duration) -> Value {
    Value::Seconds(d.as_secs_f64())
}

/// A field of [`FirstToken`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FirstTokenField {
    /// [`FirstToken::ttft`].
    Ttft,
    /// [`FirstToken::tokens`].
    Tokens,
}

impl FirstTokenField {
    /// The value of this field in `event`.
    pub fn read(self, event: &FirstToken) -> Option<Value> {
        Some(match self {
            FirstTokenField::Ttft => secs(event.ttft),
            FirstTokenField::Tokens => Value::Count(u64::from(event.tokens)),
        })
    }
}

/// A field of a later token-bearing item ([`Item`](crate::sink::Item)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ItemField {
    /// The gap since the previous token-bearing item: one ITL sample.
    Gap,
    /// The tokens the item carries.
    Tokens,
}

impl ItemField {
    /// The value of this field for an item `gap` after the previous one, carrying `tokens`.
    #[inline]
    pub fn read(self, gap: Duration, tokens: u32) -> Value {
        match self {
            ItemField::Gap => secs(gap),
            ItemField::Tokens => Value::Count(u64::from(tokens)),
        }
    }
}

/// A field of the [`RequestRecord`] delivered at a request's end. `None` when the request has
/// no such value (never marked scheduled, no token, …): nothing is recorded then.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecordField {
    /// [`RequestRecord::e2e`], for every request.
    E2e,
    /// [`RequestRecord::ttft`], when a token came.
    Ttft,
    /// [`RequestRecord::tpot`], with two or more output tokens.
    Tpot,
    /// [`RequestRecord::queue`].
    Queue,
    /// [`RequestRecord::prefill`].
    Prefill,
    /// [`RequestRecord::decode`].
    Decode,
    /// [`RequestRecord::inference`].
    Inference,
    /// [`RequestRecord::input_tokens`], when known.
    InputTokens,
    /// [`RequestRecord::output_tokens`], when more than 0.
    OutputTokens,
    /// [`RequestRecord::output_tokens`], 0 included.
    OutputCount,
    /// [`RequestRecord::items`]: token-bearing items.
    Items,
    /// [`RequestRecord::frames`]: every item, token-bearing or not.
    Frames,
    /// 1 for every request: what a request counter adds.
    Request,
    /// [`RequestRecord::first_output`]: the time to first output token (after reasoning).
    FirstOutput,
    /// [`RequestRecord::second_token`]: the time to second token.
    SecondToken,
    /// [`RequestRecord::normalized_tpot`]: E2E ÷ output tokens.
    NormalizedTpot,
    /// [`RequestRecord::computed_input_tokens`]: input − cached − external, when the input is
    /// known.
    ComputedInputTokens,
    /// [`RequestRecord::cached_input_tokens`]: served from the engine's prefix cache.
    CachedInputTokens,
    /// [`RequestRecord::external_input_tokens`]: KV cache from outside the engine.
    ExternalInputTokens,
    /// [`RequestRecord::max_tokens`]: the `max_tokens` parameter.
    MaxTokens,
    /// [`RequestRecord::choices`]: the `n` parameter.
    Choices,
    /// [`RequestRecord::reasoning_output_tokens`], when more than 0.
    ReasoningTokens,
}

impl RecordField {
    /// The value of this field in `record`.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::conventions::{RecordField, Value};
    /// use tokenmeter::sink::InMemorySink;
    /// use tokenmeter::{Labels, Meter};
    ///
    /// let memory = InMemorySink::new();
    /// let meter = Meter::builder().sink(memory.clone()).build();
    /// let mut request = meter.series(&Labels::server("chat")).start();
    /// request.record_tokens(2);
    /// request.succeed();
    /// let record = &memory.records()[0];
    /// assert_eq!(RecordField::OutputTokens.read(record), Some(Value::Count(2)));
    /// assert_eq!(RecordField::Queue.read(record), None); // never marked scheduled
    /// ```
    pub fn read(self, record: &RequestRecord) -> Option<Value> {
        match self {
            RecordField::E2e => Some(secs(record.e2e)),
            RecordField::Ttft => record.ttft.map(secs),
            RecordField::Tpot => record.tpot().map(secs),
            RecordField::Queue => record.queue.map(secs),
            RecordField::Prefill => record.prefill.map(secs),
            RecordField::Decode => record.decode.map(secs),
            RecordField::Inference => record.inference.map(secs),
            RecordField::InputTokens => record.input_tokens.map(Value::Count),
            RecordField::OutputTokens => {
                (record.output_tokens > 0).then_some(Value::Count(record.output_tokens))
            }
            RecordField::OutputCount => Some(Value::Count(record.output_tokens)),
            RecordField::Items => Some(Value::Count(record.items)),
            RecordField::Frames => Some(Value::Count(record.frames)),
            RecordField::Request => Some(Value::Count(1)),
            RecordField::FirstOutput => record.first_output.map(secs),
            RecordField::SecondToken => record.second_token.map(secs),
            RecordField::NormalizedTpot => record.normalized_tpot().map(secs),
            RecordField::ComputedInputTokens => record.computed_input_tokens().map(Value::Count),
            RecordField::CachedInputTokens => record.cached_input_tokens.map(Value::Count),
            RecordField::ExternalInputTokens => record.external_input_tokens.map(Value::Count),
            RecordField::MaxTokens => record.max_tokens.map(Value::Count),
            RecordField::Choices => record.choices.map(|n| Value::Count(u64::from(n))),
            RecordField::ReasoningTokens => (record.reasoning_output_tokens > 0)
                .then_some(Value::Count(record.reasoning_output_tokens)),
        }
    }
}

/// A field of an engine [`Step`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StepField {
    /// [`Step::duration`].
    Duration,
    /// [`Step::batch_size`].
    BatchSize,
    /// [`Step::tokens`].
    Tokens,
}

impl StepField {
    /// The value of this field in `step`.
    pub fn read(self, step: &Step) -> Value {
        match self {
            StepField::Duration => secs(step.duration),
            StepField::BatchSize => Value::Count(u64::from(step.batch_size)),
            StepField::Tokens => Value::Count(u64::from(step.tokens)),
        }
    }
}

/// An engine signal other than a step ([`EngineSink`](crate::sink::EngineSink)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EngineSignal {
    /// KV-cache usage, a fraction from 0 to 1 (set).
    KvCacheUsage,
    /// Requests preempted (added).
    Preemptions,
    /// Prompt tokens looked up in the prefix cache (added;
    /// [`EngineRecorder::add_prefix_cache`](crate::sink::EngineRecorder::add_prefix_cache)).
    PrefixCacheQueries,
    /// Prompt tokens the prefix cache had (added).
    PrefixCacheHits,
    /// Speculative-decoding drafts proposed (added;
    /// [`EngineRecorder::add_speculation`](crate::sink::EngineRecorder::add_speculation)).
    SpecDrafts,
    /// Draft tokens proposed (added).
    SpecDraftTokens,
    /// Draft tokens the target model accepted (added).
    SpecAcceptedTokens,
    /// The KV-cache configuration, an info value (set once;
    /// [`EngineRecorder::set_cache_config`](crate::sink::EngineRecorder::set_cache_config)).
    CacheConfigInfo,
    /// The LoRA adapters running and waiting, an info value (set on change;
    /// [`EngineRecorder::set_lora_adapters`](crate::sink::EngineRecorder::set_lora_adapters)).
    LoraRequestsInfo,
    /// Requests waiting for room in the batch or the KV cache (set;
    /// [`EngineRecorder::set_waiting_by_reason`](crate::sink::EngineRecorder::set_waiting_by_reason)).
    WaitingCapacity,
    /// Requests waiting for another cause (set).
    WaitingDeferred,
    /// Requests refused because the queue was full (added;
    /// [`EngineRecorder::add_admission_rejections`](crate::sink::EngineRecorder::add_admission_rejections)).
    RejectedQueueFull,
    /// Requests refused because they can never fit (added).
    RejectedTooLarge,
}

impl EngineSignal {
    /// Whether the signal is an info value: its attributes (beyond the engine's) come with
    /// each value ([`RecordValue::record_info`](crate::sink::RecordValue::record_info)) rather
    /// than from the row, and carry what it reports (a configuration, adapter names).
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::conventions::EngineSignal;
    ///
    /// assert!(EngineSignal::CacheConfigInfo.is_info());
    /// assert!(!EngineSignal::KvCacheUsage.is_info());
    /// ```
    pub const fn is_info(self) -> bool {
        matches!(
            self,
            EngineSignal::CacheConfigInfo | EngineSignal::LoraRequestsInfo
        )
    }
}

/// The event that feeds an instrument and the field of that event it reads: one column of a
/// [`Row`](super::Row).
///
/// | Variant | Event | Value |
/// |---|---|---|
/// | [`Feed::FirstToken`] | [`SeriesSink::first_token`](crate::sink::SeriesSink::first_token) | a [`FirstTokenField`] |
/// | [`Feed::Item`] | [`SeriesSink::items`](crate::sink::SeriesSink::items), once per item | an [`ItemField`] |
/// | [`Feed::End`] | [`SeriesSink::end`](crate::sink::SeriesSink::end) | a [`RecordField`] |
/// | [`Feed::Gauge`] | [`SeriesSink::gauge`](crate::sink::SeriesSink::gauge) of that [`Gauge`] | the delta |
/// | [`Feed::Step`] | [`EngineSink::step`](crate::sink::EngineSink::step) | a [`StepField`] |
/// | [`Feed::Engine`] | [`EngineSink::kv_cache_usage`](crate::sink::EngineSink::kv_cache_usage), [`EngineSink::preemptions`](crate::sink::EngineSink::preemptions), … ([`EngineSignal`]) | the value (and, for an info signal, its attributes) |
/// | [`Feed::Folded`] | [`Sink::series_folded`](crate::sink::Sink::series_folded) | 1 |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Feed {
    /// The first token-bearing item of a request.
    FirstToken(FirstTokenField),
    /// Each later token-bearing item (the per-token path).
    Item(ItemField),
    /// The request's end.
    End(RecordField),
    /// A lifecycle gauge's change.
    Gauge(Gauge),
    /// An engine step.
    Step(StepField),
    /// An engine signal.
    Engine(EngineSignal),
    /// A label set folded into `_OTHER`.
    Folded,
}

impl Feed {
    /// Whether the instrument belongs to a series (the request events and gauges) rather than
    /// to an engine or to the whole sink.
    pub const fn is_series(self) -> bool {
        matches!(
            self,
            Feed::FirstToken(_) | Feed::Item(_) | Feed::End(_) | Feed::Gauge(_)
        )
    }

    /// Whether the instrument belongs to an engine ([`Feed::Step`], [`Feed::Engine`]).
    pub const fn is_engine(self) -> bool {
        matches!(self, Feed::Step(_) | Feed::Engine(_))
    }
}
