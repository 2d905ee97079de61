//! `metered_script`: a script of items, frames, finish reasons, errors, `Pending`s and panics,
//! played by an inner stream on a [`ManualClock`] and measured through one of the four
//! [`MeterExt`] entry points, then ended by draining, dropping early or
//! [`Metered::into_parts`] with both parts dropped (a cancel).
//!
//! [`check`] replays the same script on a model and compares every field of every
//! [`RequestRecord`] with it: one record per request, the outcome, `panicked`, the token, item
//! and frame counts, the finish reason, every interval to the nanosecond, every inter-token gap,
//! and both gauges back at zero.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use arbitrary::Arbitrary;
use futures_util::{Stream, StreamExt};
use tokenmeter::stream::{Observe, Results};
use tokenmeter::{
    Degradation, ErrorClass, FinishReason, Labels, ManualClock, Meter, MeterExt, Metered,
    Observation, Outcome, RequestRecord, Series,
};

/// At most this many requests per input, one after the other on the same series.
pub const MAX_REQUESTS: usize = 4;

const REASONS: [FinishReason; 5] = [
    FinishReason::Stop,
    FinishReason::Length,
    FinishReason::ToolCalls,
    FinishReason::ContentFilter,
    FinishReason::Other,
];

const DEGRADATIONS: [Degradation; 4] = [
    Degradation::OtherModel,
    Degradation::Cached,
    Degradation::Truncated,
    Degradation::Other,
];

/// Which observer [`MeterExt::meter`] is given to wrap the inner stream.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `meter`: every item is one token; errors and finish reasons are not seen.
    Meter,
    /// `meter(..).with_observer(|i| i.tokens)`: an item carries its own token count (0 for a frame).
    MeterTokens,
    /// `meter(..).with_observer(Results::new())`: items are `Result<Item, ErrorClass>`; `Ok` is one token, `Err` ends
    /// the request with its class.
    MeterResults,
    /// `meter(..).with_observer(|i| Observation)`: a full [`Observation`] per item (tokens, finish reason, error).
    MeterWith,
}

/// One step of the inner stream. Gaps are microseconds the clock advances before the step.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// An item carrying `tokens` tokens (0: a frame such as a role-only delta).
    Item {
        /// Microseconds before it.
        gap_us: u16,
        /// Its tokens.
        tokens: u8,
    },
    /// An item with a finish reason (`REASONS[reason % 5]`).
    Finish {
        /// Microseconds before it.
        gap_us: u16,
        /// Its tokens.
        tokens: u8,
        /// Index of the finish reason.
        reason: u8,
    },
    /// An error item of class `ErrorClass::ALL[class % 7]`.
    Error {
        /// Microseconds before it.
        gap_us: u16,
        /// Index of the class.
        class: u8,
    },
    /// `Poll::Pending` once (the stream wakes itself).
    Pending,
    /// A panic inside the inner stream's `poll_next`.
    Panic {
        /// Microseconds before it.
        gap_us: u16,
    },
}

/// How the consumer stops.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Poll until the stream ends.
    Drain,
    /// Drop the metered stream after at most this many polls.
    DropAfter(u8),
    /// Take the parts back with [`Metered::into_parts`] (and drop them) after at most this many polls.
    IntoParts(u8),
}

/// One request's script.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// The wrapper.
    pub api: Api,
    /// Microseconds the clock advances before the request starts.
    pub start_us: u16,
    /// Microseconds after the start at which the request is marked scheduled, if it is.
    pub scheduled_us: Option<u16>,
    /// The input tokens set on the request.
    pub input_tokens: Option<u16>,
    /// An authoritative output token count (a final `usage`), set before polling.
    pub usage: Option<u16>,
    /// Marks the request degraded (`DEGRADATIONS[d % 4]`) before polling.
    pub degraded: Option<u8>,
    /// The inner stream's steps.
    pub ops: Vec<Op>,
    /// Microseconds the clock advances when the inner stream reports its end.
    pub end_us: u16,
    /// Microseconds the clock advances after the last poll, before the drop.
    pub stop_us: u16,
    /// How the consumer stops.
    pub ending: Ending,
}

/// The payload of a scripted panic, so the panic hook can keep it quiet.
#[derive(Debug)]
pub struct ScriptedPanic;

/// One item of the inner stream.
#[derive(Clone, Copy, Debug)]
pub struct Item {
    tokens: u32,
    finish: Option<FinishReason>,
    error: Option<ErrorClass>,
}

fn us(n: u16) -> Duration {
    Duration::from_micros(u64::from(n))
}

fn item(op: Op) -> Option<Item> {
    let (tokens, finish, error) = match op {
        Op::Item { tokens, .. } => (tokens, None, None),
        Op::Finish { tokens, reason, .. } => (tokens, Some(REASONS[usize::from(reason) % 5]), None),
        Op::Error { class, .. } => (0, None, Some(ErrorClass::ALL[usize::from(class) % 7])),
        Op::Pending | Op::Panic { .. } => return None,
    };
    Some(Item {
        tokens: u32::from(tokens),
        finish,
        error,
    })
}

fn gap(op: Op) -> Duration {
    match op {
        Op::Item { gap_us, .. }
        | Op::Finish { gap_us, .. }
        | Op::Error { gap_us, .. }
        | Op::Panic { gap_us } => us(gap_us),
        Op::Pending => Duration::ZERO,
    }
}

/// What `api` tells the request about `item`.
fn observation(api: Api, item: Item) -> Observation {
    match (api, item.error) {
        (Api::Meter, _) => Observation::tokens(1),
        (Api::MeterTokens, _) => Observation::tokens(item.tokens),
        (Api::MeterResults, Some(class)) => Observation::error(class),
        (Api::MeterResults, None) => Observation::tokens(1),
        (Api::MeterWith, Some(class)) => Observation::error(class),
        (Api::MeterWith, None) => {
            let observation = Observation::tokens(item.tokens);
            match item.finish {
                Some(reason) => observation.with_finish(reason),
                None => observation,
            }
        }
    }
}

/// The inner stream: plays the ops on the clock.
#[derive(Debug)]
struct Player {
    clock: ManualClock,
    ops: VecDeque<Op>,
    end: Duration,
    ended: bool,
}

impl Stream for Player {
    type Item = Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        let Some(op) = self.ops.pop_front() else {
            if !self.ended {
                self.ended = true;
                self.clock.advance(self.end);
            }
            return Poll::Ready(None);
        };
        self.clock.advance(gap(op));
        match op {
            Op::Pending => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Op::Panic { .. } => std::panic::panic_any(ScriptedPanic),
            op => Poll::Ready(item(op)),
        }
    }
}

/// Keeps scripted panics quiet; every other panic goes to the hook that was there before
/// (libFuzzer's, which aborts and reports the crash).
pub fn quiet_scripted_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<ScriptedPanic>().is_none() {
                previous(info);
            }
        }));
    });
}

/// Polls `metered` as the script's ending says, then lets it go (drop or `into_parts`).
fn consume<St, O>(mut metered: Metered<St, O>, script: &Script, clock: &ManualClock)
where
    St: Stream + Unpin,
    O: Observe<St::Item>,
{
    if let Some(d) = script.degraded {
        metered
            .request_mut()
            .mark_degraded(DEGRADATIONS[usize::from(d) % 4]);
    }
    if let Some(usage) = script.usage {
        metered.request_mut().set_output_tokens(u64::from(usage));
    }
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..limit(script.ending) {
        if let Poll::Ready(None) = Pin::new(&mut metered).poll_next(&mut cx) {
            break;
        }
    }
    clock.advance(us(script.stop_us));
    match script.ending {
        Ending::IntoParts(_) => drop(metered.into_parts()),
        Ending::Drain | Ending::DropAfter(_) => drop(metered),
    }
}

fn limit(ending: Ending) -> usize {
    match ending {
        Ending::Drain => usize::MAX,
        Ending::DropAfter(n) | Ending::IntoParts(n) => usize::from(n),
    }
}

/// Runs one script on `series`, catching the scripted panic the way a caller would.
fn play(script: &Script, series: &Series, clock: &ManualClock) {
    clock.advance(us(script.start_us));
    let mut request = series.start();
    if let Some(s) = script.scheduled_us {
        clock.advance(us(s));
        request.mark_scheduled();
    }
    if let Some(n) = script.input_tokens {
        request.set_input_tokens(u64::from(n));
    }
    let player = Player {
        clock: clock.clone(),
        ops: script.ops.iter().copied().collect(),
        end: us(script.end_us),
        ended: false,
    };
    let _ = catch_unwind(AssertUnwindSafe(move || match script.api {
        Api::Meter => consume(player.meter(request), script, clock),
        Api::MeterTokens => consume(
            player.meter(request).with_observer(|i: &Item| i.tokens),
            script,
            clock,
        ),
        Api::MeterResults => {
            let results = player.map(|i: Item| match i.error {
                Some(class) => Err(class),
                None => Ok(i),
            });
            consume(
                results.meter(request).with_observer(Results::new()),
                script,
                clock,
            );
        }
        Api::MeterWith => consume(
            player
                .meter(request)
                .with_observer(|i: &Item| observation(Api::MeterWith, *i)),
            script,
            clock,
        ),
    }));
}

/// What the record of one script must say, computed from the script alone.
#[derive(Debug, PartialEq)]
struct Expected {
    outcome: Outcome,
    panicked: bool,
    input_tokens: Option<u64>,
    output_tokens: u64,
    items: u64,
    frames: u64,
    finish_reason: Option<FinishReason>,
    arrival: Duration,
    queue: Option<Duration>,
    prefill: Option<Duration>,
    ttft: Option<Duration>,
    decode: Option<Duration>,
    inference: Option<Duration>,
    e2e: Duration,
}

impl Expected {
    fn of(record: &RequestRecord) -> Self {
        Self {
            outcome: record.outcome,
            panicked: record.panicked,
            input_tokens: record.input_tokens,
            output_tokens: record.output_tokens,
            items: record.items,
            frames: record.frames,
            finish_reason: record.finish_reason,
            arrival: record.arrival,
            queue: record.queue,
            prefill: record.prefill,
            ttft: record.ttft,
            decode: record.decode,
            inference: record.inference,
            e2e: record.e2e,
        }
    }
}

/// The model: plays `script` on a simulated clock starting at `now`, without tokenmeter.
/// Returns the record it must produce and pushes its inter-token gaps onto `gaps`.
fn model(script: &Script, now: &mut Duration, gaps: &mut Vec<(Duration, u32)>) -> Expected {
    *now += us(script.start_us);
    let arrival = *now;
    let scheduled = script.scheduled_us.map(|s| {
        *now += us(s);
        *now
    });
    let (mut first, mut last) = (None::<Duration>, None::<Duration>);
    let (mut tokens, mut items, mut frames) = (0u64, 0u64, 0u64);
    let mut finish = None;
    let mut end: Option<(Outcome, bool, Duration)> = None;
    let success = match script.degraded {
        Some(d) => Outcome::Degraded(DEGRADATIONS[usize::from(d) % 4]),
        None => Outcome::Success,
    };
    let mut ops = script.ops.iter().copied();
    let mut panicked = false;
    for _ in 0..limit(script.ending) {
        let Some(op) = ops.next() else {
            *now += us(script.end_us);
            end.get_or_insert((success, false, *now));
            break;
        };
        *now += gap(op);
        if let Op::Panic { .. } = op {
            end.get_or_insert((Outcome::Error(ErrorClass::Other), true, *now));
            panicked = true;
            break;
        }
        let Some(item) = item(op) else { continue }; // Pending
        if end.is_some() {
            continue; // items pass through after the end, unmeasured
        }
        let seen = observation(script.api, item);
        frames += 1;
        let k = seen.token_count();
        if k > 0 {
            items += 1;
            tokens += u64::from(k);
            match last {
                Some(previous) => gaps.push((*now - previous, k)),
                None => first = Some(*now),
            }
            last = Some(*now);
        }
        if let Some(reason) = seen.finish_reason() {
            finish = Some(reason);
        }
        if let Some(class) = seen.error_class() {
            end = Some((Outcome::Error(class), false, *now));
        }
    }
    if !panicked {
        *now += us(script.stop_us);
        end.get_or_insert((Outcome::Cancelled, false, *now));
    }
    let (outcome, panicked, end) = end.expect("every path above ends the request");
    let since = |from: Option<Duration>, to: Option<Duration>| Some(to? - from?);
    Expected {
        outcome,
        panicked,
        input_tokens: script.input_tokens.map(u64::from),
        output_tokens: script.usage.map_or(tokens, u64::from),
        items,
        frames,
        finish_reason: finish,
        arrival,
        queue: since(Some(arrival), scheduled),
        prefill: since(scheduled, first),
        ttft: since(Some(arrival), first),
        decode: since(first, last),
        inference: since(scheduled, last),
        e2e: end - arrival,
    }
}

/// Plays up to [`MAX_REQUESTS`] scripts through tokenmeter and panics (a crash, for libFuzzer)
/// at the first difference from the model.
pub fn check(scripts: &[Script]) {
    quiet_scripted_panics();
    let scripts = &scripts[..scripts.len().min(MAX_REQUESTS)];
    let clock = ManualClock::new();
    let (meter, memory) = Meter::manual(&clock);
    let series = meter.series(&Labels::server("chat").request_model("m"));

    let mut now = clock.now();
    let mut gaps = Vec::new();
    let mut expected = Vec::new();
    for script in scripts {
        play(script, &series, &clock);
        expected.push(model(script, &mut now, &mut gaps));
        assert_eq!(clock.now(), now, "the model's clock drifted: {script:?}");
    }

    let records = memory.records();
    assert_eq!(
        records.len(),
        scripts.len(),
        "one record per request, none lost or doubled: {scripts:?}"
    );
    for ((script, record), want) in scripts.iter().zip(&records).zip(&expected) {
        assert_eq!(&Expected::of(record), want, "script {script:?}");
        // The same facts, as relations between intervals that hold for every record.
        if let (Some(queue), Some(prefill), Some(ttft)) =
            (record.queue, record.prefill, record.ttft)
        {
            assert_eq!(queue + prefill, ttft, "queue + prefill = TTFT: {record:?}");
        }
        if let (Some(prefill), Some(decode), Some(inference)) =
            (record.prefill, record.decode, record.inference)
        {
            assert_eq!(
                prefill + decode,
                inference,
                "prefill + decode = inference: {record:?}"
            );
        }
        if let (Some(ttft), Some(decode)) = (record.ttft, record.decode) {
            assert!(
                ttft + decode <= record.e2e,
                "TTFT + decode <= E2E: {record:?}"
            );
        }
        assert_eq!(
            record.ttft.is_some(),
            record.items > 0,
            "TTFT iff a token: {record:?}"
        );
    }
    assert_eq!(
        memory.gaps(),
        gaps,
        "one ITL sample per token-bearing item after the first"
    );
    assert_eq!(
        (series.waiting(), series.running()),
        (0, 0),
        "gauges back at zero: {scripts:?}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(api: Api, ops: Vec<Op>, ending: Ending) -> Script {
        Script {
            api,
            start_us: 5,
            scheduled_us: Some(10),
            input_tokens: Some(7),
            usage: None,
            degraded: None,
            ops,
            end_us: 7,
            stop_us: 3,
            ending,
        }
    }

    fn run_model(script: &Script) -> (Expected, Vec<(Duration, u32)>) {
        let mut gaps = Vec::new();
        let mut now = Duration::ZERO;
        let expected = model(script, &mut now, &mut gaps);
        (expected, gaps)
    }

    const OPS: [Op; 4] = [
        Op::Item {
            gap_us: 100,
            tokens: 0,
        },
        Op::Item {
            gap_us: 200,
            tokens: 2,
        },
        Op::Pending,
        Op::Finish {
            gap_us: 50,
            tokens: 1,
            reason: 1,
        },
    ];

    #[test]
    fn the_model_matches_a_hand_computed_record() {
        let drained = script(Api::MeterWith, OPS.to_vec(), Ending::Drain);
        let (expected, gaps) = run_model(&drained);
        let us = |n| Some(Duration::from_micros(n));
        // arrival 5, scheduled 15, frame 115, tokens at 315 and 365, end 372 (µs).
        assert_eq!(
            expected,
            Expected {
                outcome: Outcome::Success,
                panicked: false,
                input_tokens: Some(7),
                output_tokens: 3,
                items: 2,
                frames: 3,
                finish_reason: Some(FinishReason::Length),
                arrival: Duration::from_micros(5),
                queue: us(10),
                prefill: us(300),
                ttft: us(310),
                decode: us(50),
                inference: us(350),
                e2e: Duration::from_micros(367),
            }
        );
        assert_eq!(gaps, [(Duration::from_micros(50), 1)]);
        check(&[drained]);
    }

    #[test]
    fn drops_cancels_errors_and_panics() {
        // Dropped after the frame and the first token: cancelled at 315 + 3 µs.
        let dropped = script(Api::MeterTokens, OPS.to_vec(), Ending::DropAfter(2));
        let (expected, _) = run_model(&dropped);
        assert_eq!(expected.outcome, Outcome::Cancelled);
        assert_eq!((expected.output_tokens, expected.finish_reason), (2, None));
        assert_eq!(expected.e2e, Duration::from_micros(313));

        let mut ops = OPS.to_vec();
        ops.insert(
            2,
            Op::Error {
                gap_us: 1,
                class: 1,
            },
        );
        let failed = script(Api::MeterResults, ops.clone(), Ending::IntoParts(9));
        let (expected, _) = run_model(&failed);
        assert_eq!(expected.outcome, Outcome::Error(ErrorClass::RateLimited));
        assert_eq!(expected.output_tokens, 2); // the frame and one item, one token each

        ops.insert(1, Op::Panic { gap_us: 4 });
        let panicked = script(Api::Meter, ops, Ending::Drain);
        let (expected, _) = run_model(&panicked);
        assert_eq!(expected.outcome, Outcome::Error(ErrorClass::Other));
        assert!(expected.panicked);
        assert_eq!(expected.e2e, Duration::from_micros(114));

        check(&[dropped, failed, panicked]);
    }
}
