//! [`RequestRecord`]: everything measured about one request, delivered once at its end.

use std::time::Duration;

use crate::outcome::{FinishReason, Outcome};
use crate::series::Series;
use crate::slo_targets::SloTargets;

/// The complete measurement of one request (`docs/src/reference/metrics.md` §1).
///
/// An interval whose start or end was never observed is `None`: it is never computed from a
/// zero. Derived values (TPOT, tokens per second) are methods.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::sink::InMemorySink;
/// use tokenmeter::{Clock, Labels, ManualClock, Meter};
///
/// let time = ManualClock::new();
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().clock(Clock::manual(&time)).sink(memory.clone()).build();
/// let mut request = meter.series(&Labels::server("chat")).start();
/// time.advance(Duration::from_millis(100));
/// request.record_tokens(1); // first token at 100 ms
/// time.advance(Duration::from_millis(10));
/// request.record_tokens(1);
/// time.advance(Duration::from_millis(10));
/// request.record_tokens(1); // last token at 120 ms
/// request.succeed();
///
/// let record = &memory.records()[0];
/// assert_eq!(record.ttft, Some(Duration::from_millis(100)));
/// assert_eq!(record.tpot(), Some(Duration::from_millis(10)));
/// assert_eq!(record.queue, None); // never marked scheduled
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RequestRecord {
    /// The request's id, unique within the process ([`Request::id`](crate::Request::id)).
    pub id: u64,
    /// The series the request ran on.
    pub series: Series,
    /// How it ended.
    pub outcome: Outcome,
    /// The finish reason the stream reported, if any.
    pub finish_reason: Option<FinishReason>,
    /// True when the request ended because a panic unwound through it.
    pub panicked: bool,
    /// Input (prompt) tokens, when known.
    pub input_tokens: Option<u64>,
    /// Input tokens served from the engine's own prefix cache rather than computed, when known
    /// ([`Request::set_cached_input_tokens`](crate::Request::set_cached_input_tokens); a client
    /// reads them from `usage.prompt_tokens_details.cached_tokens`).
    pub cached_input_tokens: Option<u64>,
    /// Input tokens whose KV cache came from outside the engine (a KV connector or transfer),
    /// when known ([`Request::set_external_input_tokens`](crate::Request::set_external_input_tokens)).
    pub external_input_tokens: Option<u64>,
    /// The request's `max_tokens` parameter, when it had one
    /// ([`Request::set_max_tokens`](crate::Request::set_max_tokens)).
    pub max_tokens: Option<u64>,
    /// The request's `n` parameter (choices asked for), when set
    /// ([`Request::set_choices`](crate::Request::set_choices)).
    pub choices: Option<u32>,
    /// The request's own latency objectives, when it carried any
    /// ([`Request::set_slo_targets`](crate::Request::set_slo_targets)).
    pub slo_targets: Option<SloTargets>,
    /// Output tokens: the sum over token-bearing items, or the count set by
    /// [`Request::set_output_tokens`](crate::Request::set_output_tokens) (a final `usage`).
    pub output_tokens: u64,
    /// The part of [`output_tokens`](Self::output_tokens) recorded as reasoning
    /// ([`Request::record_reasoning_tokens`](crate::Request::record_reasoning_tokens)); 0 when
    /// none was.
    pub reasoning_output_tokens: u64,
    /// Token-bearing items (chunks).
    pub items: u64,
    /// Every item seen, including frames that carried no token.
    pub frames: u64,
    /// The arrival (server) or send (client), read from the series' clock.
    pub arrival: Duration,
    /// Scheduled − arrival.
    pub queue: Option<Duration>,
    /// First token − scheduled.
    pub prefill: Option<Duration>,
    /// First token − arrival.
    pub ttft: Option<Duration>,
    /// First *output* token − arrival: the first token recorded with
    /// [`Request::record_tokens`](crate::Request::record_tokens), after any reasoning tokens
    /// ([`Request::record_reasoning_tokens`](crate::Request::record_reasoning_tokens)). Equal to
    /// [`ttft`](Self::ttft) when the request had no reasoning before its answer.
    pub first_output: Option<Duration>,
    /// The time at which the request's second token arrived − arrival (the TTFT when the first
    /// item already carried two tokens).
    pub second_token: Option<Duration>,
    /// Last token − first token.
    pub decode: Option<Duration>,
    /// Last token − scheduled.
    pub inference: Option<Duration>,
    /// End − arrival. The end is the stream's end, the error, or the drop: what the caller
    /// waited. The last token may come earlier ([`time_to_last_token`](Self::time_to_last_token)).
    pub e2e: Duration,
    /// Every token-bearing item, oldest first, when a sink of the series asked for them
    /// ([`SeriesSink::keeps_item_times`](crate::sink::SeriesSink::keeps_item_times)); `None`
    /// otherwise. One entry per item: bound the stream if its length is not trusted.
    pub item_times: Option<Vec<ItemTime>>,
}

/// When one token-bearing item arrived ([`RequestRecord::item_times`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ItemTime {
    /// Its time − arrival: the first item's offset is the TTFT.
    pub offset: Duration,
    /// Tokens it carried (≥ 1).
    pub tokens: u32,
}

impl RequestRecord {
    /// Time per output token: decode / (output tokens − 1). `None` when there were at most one
    /// output token or no token at all.
    pub fn tpot(&self) -> Option<Duration> {
        let decode = self.decode?;
        let steps = self.output_tokens.checked_sub(1).filter(|&n| n > 0)?;
        let per = decode.as_nanos() / u128::from(steps);
        Some(Duration::from_nanos(u64::try_from(per).unwrap_or(u64::MAX)))
    }

    /// [`tpot`](Self::tpot) in seconds, computed in floating point (decode in seconds / (output
    /// tokens − 1)) as `vllm bench serve` does, without the rounding to a whole nanosecond.
    pub fn tpot_seconds(&self) -> Option<f64> {
        let decode = self.decode?;
        let steps = self.output_tokens.checked_sub(1).filter(|&n| n > 0)?;
        Some(decode.as_secs_f64() / steps as f64)
    }

    /// Normalised time per output token: E2E ÷ output tokens, the whole wait spread over every
    /// token (queue and prefill included), as inference-perf and llm-d report it. `None` without
    /// output tokens.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use tokenmeter::{Labels, ManualClock, Meter};
    /// let time = ManualClock::new();
    /// let (meter, memory) = Meter::manual(&time);
    /// let mut request = meter.series(&Labels::server("chat")).start();
    /// time.advance(Duration::from_millis(300));
    /// request.record_tokens(3);
    /// request.succeed();
    /// assert_eq!(memory.records()[0].normalized_tpot(), Some(Duration::from_millis(100)));
    /// ```
    pub fn normalized_tpot(&self) -> Option<Duration> {
        let per = self.e2e.as_nanos() / u128::from(self.output_tokens).max(1);
        (self.output_tokens > 0)
            .then(|| Duration::from_nanos(u64::try_from(per).unwrap_or(u64::MAX)))
    }

    /// Input tokens the engine computed (prefilled) itself: input − cached − external. `None`
    /// unless the input tokens are known.
    pub fn computed_input_tokens(&self) -> Option<u64> {
        let reused = self
            .cached_input_tokens
            .unwrap_or(0)
            .saturating_add(self.external_input_tokens.unwrap_or(0));
        Some(self.input_tokens?.saturating_sub(reused))
    }

    /// Last token − arrival (TTFT + decode): the end of a request's latency in `vllm bench
    /// serve`, which stops at the last token-bearing chunk. `None` without a token. It is at
    /// most [`e2e`](Self::e2e), which also waits for the frames after the last token.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter::{Labels, ManualClock, Meter};
    ///
    /// let clock = ManualClock::new();
    /// let (meter, memory) = Meter::manual(&clock);
    /// let mut request = meter.series(&Labels::client("chat")).start();
    /// clock.advance(Duration::from_millis(30));
    /// request.record_tokens(1);
    /// clock.advance(Duration::from_millis(2)); // the finish and usage frames
    /// request.succeed();
    /// let record = &memory.records()[0];
    /// assert_eq!(record.time_to_last_token(), Some(Duration::from_millis(30)));
    /// assert_eq!(record.e2e, Duration::from_millis(32));
    /// ```
    pub fn time_to_last_token(&self) -> Option<Duration> {
        Some(self.ttft? + self.decode?)
    }

    /// The gaps between consecutive token-bearing items (one ITL sample each, as the sinks
    /// got them), from [`item_times`](Self::item_times); none when they were not kept.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter::{Clock, Labels, ManualClock, Meter, sink::InMemorySink};
    ///
    /// let clock = ManualClock::new();
    /// let memory = InMemorySink::with_item_times();
    /// let meter = Meter::builder().clock(Clock::manual(&clock)).sink(memory.clone()).build();
    /// let mut request = meter.series(&Labels::client("chat")).start();
    /// for gap_ms in [20, 5, 7] {
    ///     clock.advance(Duration::from_millis(gap_ms));
    ///     request.record_tokens(1);
    /// }
    /// request.succeed();
    /// let gaps: Vec<Duration> = memory.records()[0].item_gaps().collect();
    /// assert_eq!(gaps, [Duration::from_millis(5), Duration::from_millis(7)]);
    /// ```
    pub fn item_gaps(&self) -> impl Iterator<Item = Duration> + '_ {
        let times = self.item_times.as_deref().unwrap_or_default();
        times
            .windows(2)
            .map(|w| w[1].offset.saturating_sub(w[0].offset))
    }

    /// Output tokens per second over the whole request (output tokens / E2E). `None` for a zero
    /// E2E.
    pub fn output_tokens_per_second(&self) -> Option<f64> {
        let secs = self.e2e.as_secs_f64();
        (secs > 0.0).then(|| self.output_tokens as f64 / secs)
    }

    /// Decode speed as a user sees it: (output tokens − 1) / decode. `None` without a TPOT.
    pub fn decode_tokens_per_second(&self) -> Option<f64> {
        let tpot = self.tpot()?.as_secs_f64();
        (tpot > 0.0).then(|| 1.0 / tpot)
    }

    /// The end, read from the series' clock: arrival + E2E.
    pub fn end(&self) -> Duration {
        self.arrival + self.e2e
    }
}
