//! [`Request`]: the lifecycle of one request, from start to its one outcome.
//!
//! ```text
//! arrival ──queue──▶ scheduled ──prefill──▶ first token ──decode──▶ last token ──▶ end
//! ```
//!
//! A request starts on a [`Series`] ([`Series::start`]), may be marked
//! [`mark_scheduled`](Request::mark_scheduled), records token-bearing items with
//! [`record_tokens`](Request::record_tokens), and ends exactly once with one of the ending
//! verbs — [`succeed`](Request::succeed), [`fail`](Request::fail), [`cancel`](Request::cancel),
//! [`end`](Request::end) — or when dropped (cancelled; an error if a panic is unwinding). The
//! [`Metered`](crate::Metered) stream drives the same methods.
//!
//! Mutators are verbs (`record_*`, `mark_*`, `set_*`); getters are nouns
//! ([`output_tokens`](Request::output_tokens), [`ttft`](Request::ttft)).
//!
//! Gauges: a request counts as `waiting` from its start until it is scheduled (or, if it never is,
//! until its first token), then as `running` until it ends.

mod observation;

pub use crate::slo_targets::{
    MAX_TARGET_MS, SloTargets, TPOT_HEADER, TTFT_HEADER, TargetError, TargetProblem,
};
pub use observation::Observation;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::outcome::{Degradation, ErrorClass, FinishReason, Outcome};
use crate::record::{ItemTime, RequestRecord};
use crate::series::Series;
use crate::sink::{FirstToken, Gauge, Pending, guarded};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Ended,
}

/// One request being measured. Ends exactly once, on every path.
///
/// # Examples
///
/// A server that emits tokens from a loop (no stream):
///
/// ```
/// use tokenmeter::{FinishReason, Labels, Meter, sink::InMemorySink};
///
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().sink(memory.clone()).build();
/// let series = meter.series(&Labels::server("chat").request_model("m"));
///
/// let mut request = series.start(); // the request arrived
/// request.set_input_tokens(12);
/// request.mark_scheduled(); // it left the queue
/// for _ in 0..4 {
///     request.record_tokens(1); // one token generated
/// }
/// request.set_finish_reason(FinishReason::Stop);
/// request.succeed();
///
/// let record = &memory.records()[0];
/// assert_eq!(record.output_tokens, 4);
/// assert!(record.queue.is_some() && record.prefill.is_some());
/// ```
#[must_use = "a request dropped without an outcome is recorded as cancelled"]
pub struct Request {
    id: u64,
    series: Series,
    arrival: Duration,
    scheduled: Option<Duration>,
    first: Option<Duration>,
    /// The first answer token's time: `None` while only reasoning tokens came.
    first_output: Option<Duration>,
    /// The second token's time.
    second: Option<Duration>,
    /// True while reasoning tokens came and no answer token yet.
    reasoning: bool,
    /// Reasoning tokens recorded ([`Request::record_reasoning_tokens`]): a part of the output.
    reasoning_tokens: u64,
    reuse: Reuse,
    /// The last token's time in nanoseconds; meaningful once `first` is set.
    last_ns: u64,
    input_tokens: Option<u64>,
    output_tokens: u64,
    output_override: Option<u64>,
    items: u64,
    frames: u64,
    finish_reason: Option<FinishReason>,
    degraded: Option<Degradation>,
    state: State,
    /// Items after the first not yet handed to the sink.
    pending: Pending,
    /// Every token-bearing item's time, when a sink asked for them; `None` otherwise.
    times: Option<Vec<ItemTime>>,
}

/// The next request id: unique within the process.
/// What a request reused or asked for, set once and read at its end.
#[derive(Clone, Copy, Debug, Default)]
struct Reuse {
    cached: Option<u64>,
    external: Option<u64>,
    max_tokens: Option<u64>,
    choices: Option<u32>,
    slo_targets: Option<SloTargets>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Request {
    pub(crate) fn new(series: Series, arrival: Duration) -> Self {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        series.gauge(Gauge::Waiting, 1);
        guarded(|| series.sink().start(id));
        let pending = Pending::new(series.batch());
        let times = series.keeps_item_times().then(Vec::new);
        Self {
            id,
            series,
            arrival,
            scheduled: None,
            first: None,
            first_output: None,
            second: None,
            last_ns: 0,
            input_tokens: None,
            reuse: Reuse::default(),
            reasoning: false,
            reasoning_tokens: 0,
            output_tokens: 0,
            output_override: None,
            items: 0,
            frames: 0,
            finish_reason: None,
            degraded: None,
            state: State::Waiting,
            pending,
            times,
        }
    }

    /// An id unique within the process, also in the request's
    /// [`RequestRecord::id`](crate::RequestRecord::id): tie a record to your own request id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The series this request runs on.
    pub fn series(&self) -> &Series {
        &self.series
    }

    /// The arrival (or send) time, read from the series' clock.
    pub fn arrival(&self) -> Duration {
        self.arrival
    }

    /// Time to first token, once the first token has arrived.
    pub fn ttft(&self) -> Option<Duration> {
        self.first.map(|t| t.saturating_sub(self.arrival))
    }

    /// Time in the queue (scheduled − arrival), once marked
    /// [`mark_scheduled`](Request::mark_scheduled): what the record's
    /// [`queue`](crate::RequestRecord::queue) will hold.
    pub fn queue(&self) -> Option<Duration> {
        self.scheduled.map(|s| s.saturating_sub(self.arrival))
    }

    /// Time from arrival to the latest token so far, once a token has arrived: at the last
    /// token, what [`RequestRecord::time_to_last_token`](crate::RequestRecord::time_to_last_token)
    /// will give. A server reads it to report the request's own timings before it ends.
    ///
    /// ```
    /// use tokenmeter::{Labels, ManualClock, Meter};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let (meter, _memory) = Meter::manual(&clock);
    /// let mut request = meter.series(&Labels::server("chat")).start();
    /// clock.advance(Duration::from_millis(5));
    /// request.mark_scheduled();
    /// clock.advance(Duration::from_millis(20));
    /// request.record_tokens(1);
    /// clock.advance(Duration::from_millis(10));
    /// request.record_tokens(1);
    /// assert_eq!(request.queue(), Some(Duration::from_millis(5)));
    /// assert_eq!(request.ttft(), Some(Duration::from_millis(25)));
    /// assert_eq!(request.time_to_last_token(), Some(Duration::from_millis(35)));
    /// # request.succeed();
    /// ```
    pub fn time_to_last_token(&self) -> Option<Duration> {
        self.first
            .map(|_| Duration::from_nanos(self.last_ns).saturating_sub(self.arrival))
    }

    /// Output tokens counted so far.
    pub fn output_tokens(&self) -> u64 {
        self.output_tokens
    }

    /// True once the request has its outcome.
    pub fn is_ended(&self) -> bool {
        self.state == State::Ended
    }

    /// Marks that the request left the queue now. Only the first call counts.
    pub fn mark_scheduled(&mut self) {
        let now = self.series.clock().now();
        self.mark_scheduled_at(now);
    }

    /// Marks that the request left the queue at `at` (read from the series' clock).
    pub fn mark_scheduled_at(&mut self, at: Duration) {
        if self.scheduled.is_some() || self.first.is_some() || self.state == State::Ended {
            return;
        }
        self.scheduled = Some(at.max(self.arrival));
        self.leave_queue();
    }

    /// Marks that the request left the queue now.
    #[deprecated(since = "0.2.0", note = "use `mark_scheduled`; removed in 0.3.0")]
    pub fn scheduled(&mut self) {
        self.mark_scheduled();
    }

    /// Marks that the request left the queue at `at`.
    #[deprecated(since = "0.2.0", note = "use `mark_scheduled_at`; removed in 0.3.0")]
    pub fn scheduled_at(&mut self, at: Duration) {
        self.mark_scheduled_at(at);
    }

    /// Sets the input (prompt) token count.
    pub fn set_input_tokens(&mut self, tokens: u64) {
        self.input_tokens = Some(tokens);
    }

    /// Sets the input tokens served from the engine's own prefix cache (not computed): an
    /// engine sets what its cache matched, a client what `usage.prompt_tokens_details.cached_tokens`
    /// reports. Published as the cached part of the prompt and subtracted from the computed
    /// prefill tokens ([`RequestRecord::computed_input_tokens`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use tokenmeter::{Labels, ManualClock, Meter};
    /// let time = ManualClock::new();
    /// let (meter, memory) = Meter::manual(&time);
    /// let mut request = meter.series(&Labels::server("chat")).start();
    /// request.set_input_tokens(1000);
    /// request.set_cached_input_tokens(768);
    /// request.succeed();
    /// assert_eq!(memory.records()[0].computed_input_tokens(), Some(232));
    /// ```
    pub fn set_cached_input_tokens(&mut self, tokens: u64) {
        self.reuse.cached = Some(tokens);
    }

    /// Sets the input tokens whose KV cache came from outside the engine (a KV connector,
    /// another instance): vLLM's `external_kv_transfer` source.
    pub fn set_external_input_tokens(&mut self, tokens: u64) {
        self.reuse.external = Some(tokens);
    }

    /// Sets the request's `max_tokens` parameter (the most output tokens it asked for).
    pub fn set_max_tokens(&mut self, tokens: u64) {
        self.reuse.max_tokens = Some(tokens);
    }

    /// Sets the request's `n` parameter: how many choices it asked for.
    pub fn set_choices(&mut self, n: u32) {
        self.reuse.choices = Some(n);
    }

    /// Sets the request's own latency objectives (read from its `x-slo-ttft-ms` and
    /// `x-slo-tpot-ms` headers, see [`SloTargets`]), carried to its record for an SLO monitor
    /// to judge it by. Empty targets are not recorded.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter::request::SloTargets;
    /// use tokenmeter::{Labels, Meter, sink::InMemorySink};
    ///
    /// let memory = InMemorySink::new();
    /// let meter = Meter::builder().sink(memory.clone()).build();
    /// let mut request = meter.series(&Labels::server("chat")).start();
    /// request.set_slo_targets(SloTargets::new(Some(Duration::from_millis(200)), None));
    /// request.succeed();
    /// let targets = memory.records()[0].slo_targets.unwrap();
    /// assert_eq!(targets.ttft, Some(Duration::from_millis(200)));
    /// ```
    pub fn set_slo_targets(&mut self, targets: SloTargets) {
        self.reuse.slo_targets = (!targets.is_empty()).then_some(targets);
    }

    /// Sets the output token count authoritatively (for example from a final `usage` object);
    /// it replaces the sum over items in the record and in TPOT.
    pub fn set_output_tokens(&mut self, tokens: u64) {
        self.output_override = Some(tokens);
    }

    /// Sets the finish reason the stream reported.
    pub fn set_finish_reason(&mut self, reason: FinishReason) {
        self.finish_reason = Some(reason);
    }

    /// Marks the answer as produced by a fallback: a success becomes
    /// [`Outcome::Degraded`].
    pub fn mark_degraded(&mut self, how: Degradation) {
        self.degraded = Some(how);
    }

    /// Records an item that carried `tokens` tokens, now. An item with zero tokens (a role-only
    /// frame, a keep-alive, an empty delta) is counted as a frame and sets no timestamp.
    ///
    /// The first token-bearing item goes to the sink at once; later ones go in batches (see
    /// [`Items`](crate::sink::Items) for when), each with the gap taken now.
    ///
    /// The per-token path: no allocation, no lock, no lookup, and a sink call only once per
    /// batch.
    #[inline]
    pub fn record_tokens(&mut self, tokens: u32) {
        if self.state == State::Ended {
            return;
        }
        self.frames += 1;
        if tokens == 0 {
            return;
        }
        let now = self.series.clock().now_nanos();
        self.push_tokens(tokens, now);
    }

    /// Records an item that carried `tokens` tokens at `at`, an instant the caller already
    /// read from the series' clock: the time its reader parsed the item, which the I/O layer
    /// knows best. Otherwise the same as [`record_tokens`](Self::record_tokens), and as cheap without the
    /// clock read. Instants should not go backwards; a gap that would is taken as zero.
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
    /// clock.advance(Duration::from_millis(50));
    /// request.record_tokens_at(1, Duration::from_millis(42)); // parsed at 42 ms, recorded at 50 ms
    /// request.succeed();
    /// assert_eq!(memory.records()[0].ttft, Some(Duration::from_millis(42)));
    /// ```
    #[inline]
    pub fn record_tokens_at(&mut self, tokens: u32, at: Duration) {
        if self.state == State::Ended {
            return;
        }
        self.frames += 1;
        if tokens == 0 {
            return;
        }
        self.push_tokens(tokens, u64::try_from(at.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Records `tokens` of *reasoning* (thinking) output: they count as output tokens, in the
    /// TTFT and the inter-token latency like any other, but the time to first *output* token
    /// ([`RequestRecord::first_output`]) waits for the first [`record_tokens`](Self::record_tokens)
    /// after them: the answer a user reads.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use tokenmeter::{Labels, ManualClock, Meter};
    /// let time = ManualClock::new();
    /// let (meter, memory) = Meter::manual(&time);
    /// let mut request = meter.series(&Labels::server("chat")).start();
    /// time.advance(Duration::from_millis(50));
    /// request.record_reasoning_tokens(1); // thinking starts: the TTFT
    /// time.advance(Duration::from_millis(400));
    /// request.record_tokens(1); // the answer starts
    /// request.succeed();
    /// let record = &memory.records()[0];
    /// assert_eq!(record.ttft, Some(Duration::from_millis(50)));
    /// assert_eq!(record.first_output, Some(Duration::from_millis(450)));
    /// ```
    pub fn record_reasoning_tokens(&mut self, tokens: u32) {
        let now = self.series.clock().now();
        self.record_reasoning_tokens_at(tokens, now);
    }

    /// [`record_reasoning_tokens`](Self::record_reasoning_tokens) at a time read from the
    /// series' clock earlier.
    pub fn record_reasoning_tokens_at(&mut self, tokens: u32, at: Duration) {
        let still_pending = self.first.is_none() || self.reasoning;
        if self.state != State::Ended {
            self.reasoning_tokens = self.reasoning_tokens.saturating_add(u64::from(tokens));
        }
        self.record_tokens_at(tokens, at);
        if still_pending && tokens > 0 && self.first.is_some() && self.state != State::Ended {
            // no answer token yet: the first output token is still to come
            self.first_output = None;
            self.reasoning = true;
        }
    }

    /// Records an item that carried `tokens` tokens, now.
    #[deprecated(since = "0.2.0", note = "use `record_tokens`; removed in 0.3.0")]
    #[inline]
    pub fn tokens(&mut self, tokens: u32) {
        self.record_tokens(tokens);
    }

    /// Records an item that carried `tokens` tokens at `at`.
    #[deprecated(since = "0.2.0", note = "use `record_tokens_at`; removed in 0.3.0")]
    #[inline]
    pub fn tokens_at(&mut self, tokens: u32, at: Duration) {
        self.record_tokens_at(tokens, at);
    }

    #[inline]
    fn push_tokens(&mut self, tokens: u32, now: u64) {
        self.items += 1;
        if let Some(times) = &mut self.times {
            times.push(ItemTime {
                offset: Duration::from_nanos(now).saturating_sub(self.arrival),
                tokens,
            });
        }
        self.output_tokens = self.output_tokens.saturating_add(u64::from(tokens));
        let previous = std::mem::replace(&mut self.last_ns, now);
        if self.first.is_some() {
            if self.second.is_none() || self.reasoning {
                self.later_first(Duration::from_nanos(now));
            }
            if self.pending.push(now, now.saturating_sub(previous), tokens) {
                self.flush();
            }
        } else {
            self.first_token(Duration::from_nanos(now), tokens);
        }
    }

    /// The second token, or the first output token after reasoning: rare, out of the hot path.
    #[cold]
    fn later_first(&mut self, now: Duration) {
        if self.second.is_none() {
            self.second = Some(now);
        }
        if self.reasoning {
            // set here for an answer token; record_reasoning_tokens_at clears it again
            self.first_output = Some(now);
            self.reasoning = false;
        }
    }

    /// Hands the items recorded so far and not yet sent to the sink now, instead of with the
    /// batch they would go with (see [`Items`](crate::sink::Items)). A request ends with a
    /// flush of its own; call this only to make items visible sooner, for example before
    /// reading a sink in the middle of a long request.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::{Labels, ManualClock, Meter};
    ///
    /// let clock = ManualClock::new();
    /// let (meter, memory) = Meter::manual(&clock);
    /// let mut request = meter.series(&Labels::server("chat")).start();
    /// request.record_tokens(1);
    /// request.record_tokens(1);
    /// assert!(memory.gaps().is_empty(), "the second item waits in the request's batch");
    /// request.flush();
    /// assert_eq!(memory.gaps().len(), 1);
    /// request.succeed();
    /// ```
    #[cold]
    pub fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let items = self.pending.take();
        let sink = self.series.sink();
        guarded(|| sink.items(items));
    }

    /// Applies what a stream item said: its tokens, its finish reason, and an error, which ends
    /// the request.
    #[inline]
    pub fn observe(&mut self, observation: Observation) {
        let tokens = observation.token_count();
        match (observation.instant(), observation.is_reasoning()) {
            (Some(at), false) => self.record_tokens_at(tokens, at),
            (None, false) => self.record_tokens(tokens),
            (Some(at), true) => self.record_reasoning_tokens_at(tokens, at),
            (None, true) => self.record_reasoning_tokens(tokens),
        }
        if let Some(reason) = observation.finish_reason() {
            self.finish_reason = Some(reason);
        }
        if let Some(class) = observation.error_class() {
            self.close(Outcome::Error(class), false);
        }
    }

    /// Ends with success (or [`Outcome::Degraded`] if marked).
    ///
    /// The ending verbs ([`succeed`](Self::succeed), [`fail`](Self::fail),
    /// [`cancel`](Self::cancel) and [`end`](Self::end)) take `&mut self`, so a wrapper that
    /// holds the request (a [`Metered`](crate::Metered) stream, through
    /// [`request_mut`](crate::Metered::request_mut)) ends it the same way as its owner. The
    /// first ending counts; later ones, and the drop, do nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::{ErrorClass, Labels, ManualClock, Meter, Outcome};
    ///
    /// let (meter, memory) = Meter::manual(&ManualClock::new());
    /// let mut request = meter.series(&Labels::client("chat")).start();
    /// request.succeed();
    /// request.fail(ErrorClass::Timeout); // already ended: does nothing
    /// drop(request); // nor does the drop
    /// assert_eq!(memory.records()[0].outcome, Outcome::Success);
    /// ```
    pub fn succeed(&mut self) {
        self.close(Outcome::Success, false);
    }

    /// Ends with an error of `class`.
    pub fn fail(&mut self, class: ErrorClass) {
        self.close(Outcome::Error(class), false);
    }

    /// Ends as cancelled: the consumer gave up. Dropping a request that has not ended does the
    /// same.
    pub fn cancel(&mut self) {
        self.close(Outcome::Cancelled, false);
    }

    /// Ends with `outcome` ([`Outcome::Success`] becomes [`Outcome::Degraded`] if marked).
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::{ErrorClass, Labels, ManualClock, Meter, Outcome};
    ///
    /// let (meter, memory) = Meter::manual(&ManualClock::new());
    /// let mut request = meter.series(&Labels::server("chat")).start();
    /// request.end(Outcome::Error(ErrorClass::Overloaded));
    /// assert_eq!(memory.records()[0].outcome, Outcome::Error(ErrorClass::Overloaded));
    /// ```
    pub fn end(&mut self, outcome: Outcome) {
        self.close(outcome, false);
    }

    /// Ends with `outcome`.
    #[deprecated(since = "0.2.0", note = "use `end`; removed in 0.3.0")]
    pub fn finish(mut self, outcome: Outcome) {
        self.end(outcome);
    }

    /// Ends in place with `outcome`.
    #[deprecated(
        since = "0.2.0",
        note = "use `end`, which also takes `&mut self`; removed in 0.3.0"
    )]
    pub fn end_with(&mut self, outcome: Outcome) {
        self.end(outcome);
    }

    #[cold]
    fn first_token(&mut self, now: Duration, tokens: u32) {
        self.first = Some(now);
        self.first_output = Some(now);
        if tokens >= 2 {
            self.second = Some(now);
        }
        if self.state == State::Waiting {
            self.leave_queue();
        }
        let event = FirstToken {
            id: self.id,
            ttft: now.saturating_sub(self.arrival),
            queue: self.scheduled.map(|s| s.saturating_sub(self.arrival)),
            prefill: self.scheduled.map(|s| now.saturating_sub(s)),
            tokens,
        };
        guarded(|| self.series.sink().first_token(&event));
    }

    fn leave_queue(&mut self) {
        self.state = State::Running;
        self.series.gauge(Gauge::Waiting, -1);
        self.series.gauge(Gauge::Running, 1);
    }

    fn close(&mut self, outcome: Outcome, panicked: bool) {
        let held = match self.state {
            State::Ended => return,
            State::Waiting => Gauge::Waiting,
            State::Running => Gauge::Running,
        };
        self.flush();
        self.state = State::Ended;
        let end = self.series.clock().now().max(self.arrival);
        let outcome = match (outcome, self.degraded) {
            (Outcome::Success, Some(how)) => Outcome::Degraded(how),
            (other, _) => other,
        };
        let since = |from: Option<Duration>, to: Option<Duration>| Some(to?.saturating_sub(from?));
        let last = self.first.map(|_| Duration::from_nanos(self.last_ns));
        let record = RequestRecord {
            id: self.id,
            series: self.series.clone(),
            outcome,
            finish_reason: self.finish_reason,
            panicked,
            input_tokens: self.input_tokens,
            cached_input_tokens: self.reuse.cached,
            external_input_tokens: self.reuse.external,
            max_tokens: self.reuse.max_tokens,
            choices: self.reuse.choices,
            slo_targets: self.reuse.slo_targets,
            output_tokens: self.output_override.unwrap_or(self.output_tokens),
            reasoning_output_tokens: self.reasoning_tokens,
            items: self.items,
            frames: self.frames,
            arrival: self.arrival,
            queue: since(Some(self.arrival), self.scheduled),
            prefill: since(self.scheduled, self.first),
            ttft: since(Some(self.arrival), self.first),
            first_output: since(Some(self.arrival), self.first_output),
            second_token: since(Some(self.arrival), self.second),
            decode: since(self.first, last),
            inference: since(self.scheduled, last),
            e2e: end - self.arrival,
            item_times: self.times.take(),
        };
        self.series.gauge(held, -1);
        guarded(|| self.series.sink().end(&record));
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        if self.state == State::Ended {
            return;
        }
        if std::thread::panicking() {
            self.close(Outcome::Error(ErrorClass::Other), true);
        } else {
            self.close(Outcome::Cancelled, false);
        }
    }
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("id", &self.id)
            .field("series", self.series.labels())
            .field("state", &self.state)
            .field("arrival", &self.arrival)
            .field("ttft", &self.ttft())
            .field("output_tokens", &self.output_tokens)
            .finish()
    }
}
