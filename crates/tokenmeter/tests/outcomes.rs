//! Every path ends a request exactly once, with the right outcome, and gauges follow.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use common::{Rig, Scripted, ns};
use futures_core::Stream;
use futures_executor::block_on;
use futures_util::{StreamExt, stream};
use tokenmeter::{
    Degradation, ErrorClass, FinishReason, Labels, Meter, MeterExt, Observation, Outcome,
};

#[test]
fn dropping_the_stream_early_is_cancelled() {
    let rig = Rig::server();
    let request = rig.series.start();
    let mut metered = Scripted::new(&rig.time, vec![(10, 1), (10, 1), (10, 1)], 0).meter(request);
    block_on(async {
        metered.next().await;
        metered.next().await;
    });
    rig.advance_ns(5);
    drop(metered);
    let r = rig.only_record();
    assert_eq!(r.outcome, Outcome::Cancelled);
    assert_eq!(r.e2e, ns(25));
    assert_eq!(r.output_tokens, 2);
    assert!(!r.panicked);
}

#[test]
fn a_panic_while_polling_is_an_error() {
    let rig = Rig::server();
    let request = rig.series.start();
    let panicking = stream::iter([1, 2, 3]).map(|i| if i == 2 { panic!("boom") } else { i });
    let metered = panicking.meter(request);
    let result = catch_unwind(AssertUnwindSafe(|| block_on(metered.collect::<Vec<_>>())));
    assert!(result.is_err(), "the panic propagates to the caller");
    let r = rig.only_record();
    assert_eq!(r.outcome, Outcome::Error(ErrorClass::Other));
    assert!(r.panicked);
    assert_eq!(rig.series.waiting() + rig.series.running(), 0);
}

#[test]
fn a_panic_in_the_classifier_is_an_error_and_propagates() {
    let rig = Rig::server();
    let results = stream::iter([Ok(1), Err("upstream said no"), Ok(2)]);
    let metered = results.meter(rig.series.start());
    let metered = metered.with_observer(tokenmeter::stream::Results::new().classify(|_: &&str| {
        panic!("a classifier bug");
    }));
    let result = catch_unwind(AssertUnwindSafe(|| block_on(metered.collect::<Vec<_>>())));
    assert!(
        result.is_err(),
        "the classifier's panic propagates to the caller"
    );
    let r = rig.only_record();
    assert_eq!(r.outcome, Outcome::Error(ErrorClass::Other));
    assert!(r.panicked);
    assert_eq!(r.output_tokens, 1, "the item before the error was counted");
    assert_eq!(rig.series.waiting() + rig.series.running(), 0);
}

#[test]
fn a_panic_in_an_observer_is_an_error_and_propagates() {
    let rig = Rig::server();
    let metered = stream::iter(["a", "b", "c"])
        .meter(rig.series.start())
        .with_observer(|item: &&str| {
            assert_ne!(*item, "b", "an observer bug");
            Observation::tokens(1)
        });
    let result = catch_unwind(AssertUnwindSafe(|| block_on(metered.collect::<Vec<_>>())));
    assert!(
        result.is_err(),
        "the observer's panic propagates to the caller"
    );
    let r = rig.only_record();
    assert_eq!(r.outcome, Outcome::Error(ErrorClass::Other));
    assert!(r.panicked);
    assert_eq!(r.output_tokens, 1);
}

#[test]
fn degraded_answers_are_not_successes() {
    let rig = Rig::server();
    let mut metered = stream::iter([1, 1]).meter(rig.series.start());
    metered.request_mut().mark_degraded(Degradation::OtherModel);
    let _ = block_on(metered.count());
    assert_eq!(
        rig.only_record().outcome,
        Outcome::Degraded(Degradation::OtherModel)
    );
}

#[test]
fn degraded_mark_does_not_hide_an_error() {
    let rig = Rig::server();
    let mut request = rig.series.start();
    request.mark_degraded(Degradation::Cached);
    request.fail(ErrorClass::Timeout);
    assert_eq!(
        rig.only_record().outcome,
        Outcome::Error(ErrorClass::Timeout)
    );
}

#[test]
fn finish_reasons_come_from_the_observer() {
    let rig = Rig::server();
    let chunks = stream::iter([("", None), ("hi", None), ("", Some("length"))]);
    let metered =
        chunks
            .meter(rig.series.start())
            .with_observer(|(text, finish): &(&str, Option<&str>)| {
                let observed = Observation::tokens(u32::from(!text.is_empty()));
                match finish {
                    Some(reason) => observed.with_finish(FinishReason::parse(reason)),
                    None => observed,
                }
            });
    let _ = block_on(metered.count());
    let r = rig.only_record();
    assert_eq!(r.finish_reason, Some(FinishReason::Length));
    assert_eq!(r.output_tokens, 1);
}

#[test]
fn usage_overrides_the_counted_tokens() {
    let rig = Rig::server();
    let mut request = rig.series.start();
    rig.advance_ns(10);
    request.record_tokens(1);
    rig.advance_ns(90);
    request.record_tokens(1);
    request.set_output_tokens(10);
    request.succeed();
    let r = rig.only_record();
    assert_eq!(r.output_tokens, 10);
    assert_eq!(r.tpot(), Some(ns(10)));
}

#[test]
fn size_hint_is_forwarded() {
    let rig = Rig::server();
    let metered = stream::iter([1, 2, 3]).meter(rig.series.start());
    assert_eq!(metered.size_hint(), (3, Some(3)));
}

#[test]
fn gauges_follow_the_lifecycle() {
    let rig = Rig::server();
    let gauges = |s: &tokenmeter::Series| (s.waiting(), s.running());
    let mut a = rig.series.start();
    let mut b = rig.series.start();
    assert_eq!(gauges(&rig.series), (2, 0));
    a.mark_scheduled();
    assert_eq!(gauges(&rig.series), (1, 1));
    b.record_tokens(1); // first token without scheduled: leaves the queue
    assert_eq!(gauges(&rig.series), (0, 2));
    a.succeed();
    drop(b);
    assert_eq!(gauges(&rig.series), (0, 0));
}

#[test]
fn ending_twice_records_once() {
    let rig = Rig::server();
    let mut request = rig.series.start();
    request.end(Outcome::Success);
    request.end(Outcome::Cancelled);
    request.record_tokens(5);
    drop(request);
    let r = rig.only_record();
    assert_eq!(r.outcome, Outcome::Success);
    assert_eq!(r.output_tokens, 0);
}

#[test]
fn into_parts_leaves_the_ending_to_the_caller() {
    let rig = Rig::server();
    let metered = stream::iter([1, 2]).meter(rig.series.start());
    let (inner, request) = metered.into_parts();
    assert_eq!(block_on(inner.collect::<Vec<_>>()), vec![1, 2]);
    assert!(rig.memory.records().is_empty(), "into_parts ends nothing");
    drop(request); // the caller's choice: a dropped request ends as cancelled
    assert_eq!(rig.only_record().outcome, Outcome::Cancelled);
}

#[test]
fn series_past_the_cap_fold_into_other() {
    let memory = tokenmeter::sink::InMemorySink::new();
    let meter = Meter::builder().sink(memory.clone()).max_series(3).build();
    for i in 0..10 {
        let name = format!("model-{i}");
        meter
            .series(&Labels::server("chat").request_model(name.as_str()))
            .start()
            .succeed();
    }
    assert_eq!(meter.series_count(), 3);
    assert_eq!(meter.folded_count(), 7);
    assert_eq!(memory.folded(), 7);
    let folded: Vec<_> = memory
        .records()
        .into_iter()
        .filter(|r| r.series.labels().is_folded())
        .collect();
    assert_eq!(
        folded.len(),
        7,
        "folded requests are still recorded, under _OTHER"
    );
    assert!(folded.windows(2).all(|w| w[0].series.same(&w[1].series)));
}

#[test]
fn label_values_are_sanitised_and_bounded() {
    let meter = Meter::builder().build();
    let long = "x\n".repeat(500);
    let series = meter.series(&Labels::client("chat").request_model(long.as_str()));
    let value = series.labels().request_model_name();
    assert!(value.len() <= tokenmeter::series::MAX_LABEL_LEN);
    assert!(!value.contains('\n'));
    let again = meter.series(&Labels::client("chat").request_model(long.as_str()));
    assert!(
        series.same(&again),
        "the same raw value resolves to the same series"
    );
}

// `Clock::tokio` exists only with the `tokio` feature; the other tests run without it.
#[cfg(feature = "tokio")]
#[tokio::test(start_paused = true)]
async fn tokio_paused_time_drives_the_clock() {
    use std::time::Duration;
    let memory = tokenmeter::sink::InMemorySink::new();
    let meter = Meter::builder()
        .clock(tokenmeter::Clock::tokio())
        .sink(memory.clone())
        .build();
    let series = meter.series(&Labels::client("chat"));
    let tokens = stream::iter(0..5).then(|i| async move {
        let wait = if i == 0 { 250 } else { 20 };
        tokio::time::sleep(Duration::from_millis(wait)).await;
        i
    });
    let _ = tokens.meter(series.start()).count().await;
    let r = &memory.records()[0];
    assert_eq!(r.ttft, Some(Duration::from_millis(250)));
    assert_eq!(r.tpot(), Some(Duration::from_millis(20)));
}

/// A sink that panics on every event.
struct Exploding;
struct ExplodingSeries;

impl tokenmeter::sink::Sink for Exploding {
    fn series(&self, _labels: &Labels<'_>) -> Box<dyn tokenmeter::sink::SeriesSink> {
        Box::new(ExplodingSeries)
    }
}

impl tokenmeter::sink::SeriesSink for ExplodingSeries {
    fn first_token(&self, _event: &tokenmeter::sink::FirstToken) {
        panic!("sink bug: first token");
    }
    fn item(&self, _gap: std::time::Duration, _tokens: u32) {
        panic!("sink bug: item");
    }
    fn end(&self, _record: &tokenmeter::RequestRecord) {
        panic!("sink bug: end");
    }
    fn gauge(&self, _gauge: tokenmeter::sink::Gauge, _delta: i64) {
        panic!("sink bug: gauge");
    }
}

#[test]
fn a_panicking_sink_poisons_neither_the_other_sinks_nor_the_stream() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {})); // keep the expected panics out of the output
    let before = tokenmeter::sink::sink_panics();
    let memory = tokenmeter::sink::InMemorySink::new();
    let meter = Meter::builder()
        .sink(Exploding)
        .sink(memory.clone())
        .build();
    let series = meter.series(&Labels::server("chat").request_model("exploding"));
    let items: Vec<u32> = block_on(stream::iter([1u32, 2, 3]).meter(series.start()).collect());
    std::panic::set_hook(previous);
    assert_eq!(items, vec![1, 2, 3], "the stream flows through the panics");
    let records = memory.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, Outcome::Success);
    assert_eq!(records[0].output_tokens, 3);
    assert_eq!(memory.gaps().len(), 2, "the other sink saw every item");
    // start (gauge), leave queue (2 gauges), first token, the 2 later items (one batch, which
    // panics at its first), end gauge, end: 7 panics.
    assert!(tokenmeter::sink::sink_panics() - before >= 7);
    assert_eq!((series.waiting(), series.running()), (0, 0));
}
