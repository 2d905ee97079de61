//! Per-item times: kept only when a sink asks, exact with `tokens_at`, and the vLLM-style
//! derived values (`time_to_last_token`, `tpot_seconds`) they agree with.

use std::time::Duration;

use futures_executor::block_on;
use futures_util::{StreamExt, stream};
use tokenmeter::sink::{FanOut, InMemorySink, NoopSink};
use tokenmeter::{Clock, Labels, ManualClock, Meter, MeterExt, Observation};

fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}

fn meter(time: &ManualClock, sink: impl tokenmeter::sink::Sink) -> Meter {
    Meter::builder()
        .clock(Clock::manual(time))
        .sink(sink)
        .build()
}

#[test]
fn no_sink_asks_so_no_record_carries_item_times() {
    let time = ManualClock::new();
    let memory = InMemorySink::new();
    let mut request = meter(&time, memory.clone())
        .series(&Labels::client("chat"))
        .start();
    time.advance(ns(10));
    request.record_tokens(1);
    request.record_tokens(1);
    request.succeed();
    assert_eq!(memory.records()[0].item_times, None);
}

#[test]
fn one_asking_sink_in_a_fan_out_is_enough_and_offsets_are_exact() {
    let time = ManualClock::new();
    let memory = InMemorySink::with_item_times();
    let fan = FanOut::new().with(NoopSink).with(memory.clone());
    let series = meter(&time, fan).series(&Labels::client("chat"));
    time.advance(ns(1_000));
    let mut request = series.start(); // arrival at 1 µs
    time.advance(ns(7));
    request.record_tokens(0); // a frame: no entry
    time.advance(ns(100));
    request.record_tokens(2); // offset 107
    request.record_tokens_at(1, ns(1_150)); // parsed at 1_150: offset 150, whatever the clock says
    time.advance(ns(500));
    request.record_tokens(3); // offset 607
    time.advance(ns(40)); // frames after the last token
    request.succeed();
    let r = &memory.records()[0];
    let times: Vec<(Duration, u32)> = r
        .item_times
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|t| (t.offset, t.tokens))
        .collect();
    assert_eq!(times, [(ns(107), 2), (ns(150), 1), (ns(607), 3)]);
    assert_eq!(r.ttft, Some(ns(107)));
    assert_eq!(r.decode, Some(ns(500)));
    assert_eq!(r.time_to_last_token(), Some(ns(607)));
    assert_eq!(r.e2e, ns(647), "the end waits for the last frames");
    assert_eq!(r.tpot_seconds(), Some(500e-9 / 5.0));
    // The gaps the sinks saw are the gaps between the same instants.
    let gaps: Vec<Duration> = memory.gaps().iter().map(|g| g.0).collect();
    assert_eq!(gaps, [ns(43), ns(457)]);
}

#[test]
fn a_stream_observation_taken_at_an_instant_is_recorded_at_that_instant() {
    let time = ManualClock::new();
    let memory = InMemorySink::with_item_times();
    let request = meter(&time, memory.clone())
        .series(&Labels::client("chat"))
        .start();
    time.advance(ns(1_000)); // the stream is read late; each item says when it was parsed
    let items = stream::iter([(0u32, 10u64), (1, 20), (1, 35)]);
    let metered = items
        .meter(request)
        .with_observer(|&(tokens, at): &(u32, u64)| Observation::tokens(tokens).at(ns(at)));
    let _ = block_on(metered.count());
    let r = &memory.records()[0];
    let offsets: Vec<Duration> = r
        .item_times
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|t| t.offset)
        .collect();
    assert_eq!(offsets, [ns(20), ns(35)]);
    assert_eq!((r.ttft, r.frames, r.e2e), (Some(ns(20)), 3, ns(1_000)));
}

#[test]
fn tpot_seconds_is_the_unrounded_tpot() {
    let time = ManualClock::new();
    let memory = InMemorySink::new();
    let mut request = meter(&time, memory.clone())
        .series(&Labels::client("chat"))
        .start();
    request.record_tokens(1);
    time.advance(ns(10));
    request.record_tokens(1);
    request.set_output_tokens(4); // 10 ns over 3 steps
    request.succeed();
    let r = &memory.records()[0];
    assert_eq!(r.tpot(), Some(ns(3)), "rounded down to a whole nanosecond");
    assert_eq!(r.tpot_seconds(), Some(10e-9 / 3.0));
}
