//! Every interval of `docs/src/reference/metrics.md` §1, checked to the nanosecond on scripted streams.

mod common;

use common::{Rig, Scripted, ns};
use futures_executor::block_on;
use futures_util::StreamExt;
use tokenmeter::{ErrorClass, MeterExt, Outcome};

#[test]
fn every_interval_to_the_nanosecond() {
    let rig = Rig::server();
    let mut request = rig.series.start(); // arrival at 0
    request.set_input_tokens(512);
    rig.advance_ns(1_000_003);
    request.mark_scheduled(); // queue = 1_000_003
    // items carry their token count: a 0-token frame, then 1, 3, a 0-token frame, 1.
    let script = Scripted::new(
        &rig.time,
        vec![(5, 0), (2_000_011, 1), (333, 3), (444, 0), (555, 1)],
        7,
    );
    let seen: Vec<u32> = block_on(script.meter(request).with_observer(|k: &u32| *k).collect());
    assert_eq!(seen, vec![0, 1, 3, 0, 1], "items pass through unchanged");

    let r = rig.only_record();
    // first token at 1_000_003 + 5 + 2_000_011 = 3_000_019; last at 3_001_351; end at 3_001_358.
    assert_eq!(r.outcome, Outcome::Success);
    assert_eq!(r.arrival, ns(0));
    assert_eq!(r.queue, Some(ns(1_000_003)));
    assert_eq!(r.prefill, Some(ns(2_000_016)));
    assert_eq!(r.ttft, Some(ns(3_000_019)));
    assert_eq!(r.decode, Some(ns(1_332)));
    assert_eq!(r.inference, Some(ns(2_001_348)));
    assert_eq!(r.e2e, ns(3_001_358));
    assert_eq!(r.tpot(), Some(ns(333))); // 1_332 / (5 − 1)
    assert_eq!(
        (r.input_tokens, r.output_tokens, r.items, r.frames),
        (Some(512), 5, 3, 5)
    );
    // ITL: one sample per token-bearing item after the first, with its tokens.
    assert_eq!(rig.memory.gaps(), vec![(ns(333), 3), (ns(999), 1)]);
}

#[test]
fn zero_token_frames_before_the_first_token_do_not_set_ttft() {
    let rig = Rig::server();
    let request = rig.series.start();
    let script = Scripted::new(&rig.time, vec![(10, 0), (20, 0), (30, 2)], 0);
    let _ = block_on(script.meter(request).with_observer(|k: &u32| *k).count());
    let r = rig.only_record();
    assert_eq!(r.ttft, Some(ns(60)));
    assert_eq!((r.frames, r.items, r.output_tokens), (3, 1, 2));
}

#[test]
fn multi_token_chunks_weight_tpot_and_itl() {
    let rig = Rig::server();
    let request = rig.series.start();
    let script = Scripted::new(&rig.time, vec![(100, 4), (40, 4), (40, 4)], 0);
    let _ = block_on(script.meter(request).with_observer(|k: &u32| *k).count());
    let r = rig.only_record();
    assert_eq!(r.decode, Some(ns(80)));
    assert_eq!(r.output_tokens, 12);
    assert_eq!(r.tpot(), Some(ns(80 / 11)));
    let report = rig.memory.report();
    assert_eq!(report.itl.count, 2); // per item
    assert_eq!(report.itl_token_weighted.count, 8); // per token: 40/4 recorded 4 times, twice
    assert!((report.itl_token_weighted.p50 - 10e-9).abs() < 1e-15);
}

#[test]
fn one_token_output_has_no_tpot() {
    let rig = Rig::server();
    let request = rig.series.start();
    let script = Scripted::new(&rig.time, vec![(100, 1)], 5);
    let _ = block_on(script.meter(request).count());
    let r = rig.only_record();
    assert_eq!(r.output_tokens, 1);
    assert_eq!(r.decode, Some(ns(0)));
    assert_eq!(r.tpot(), None);
    assert_eq!(r.e2e, ns(105));
    assert!(rig.memory.gaps().is_empty());
}

#[test]
fn no_token_at_all_leaves_every_token_interval_empty() {
    let rig = Rig::server();
    let request = rig.series.start();
    let script = Scripted::new(&rig.time, vec![(100, 0)], 5);
    let _ = block_on(script.meter(request).with_observer(|k: &u32| *k).count());
    let r = rig.only_record();
    assert_eq!((r.ttft, r.decode, r.tpot()), (None, None, None));
    assert_eq!(r.outcome, Outcome::Success);
    assert_eq!(r.e2e, ns(105));
}

#[test]
fn error_before_the_first_token() {
    let rig = Rig::server();
    let request = rig.series.start();
    let script = Scripted::new(
        &rig.time,
        vec![
            (10, Ok(0)),
            (25, Err(ErrorClass::RateLimited)),
            (1_000, Ok(1)),
        ],
        0,
    );
    let metered = script
        .meter(request)
        .with_observer(tokenmeter::stream::Results::new().observe_ok(|k: &u32| *k));
    let items: Vec<Result<u32, ErrorClass>> = block_on(metered.collect());
    assert_eq!(items.len(), 3, "items after the error still flow");
    let r = rig.only_record();
    assert_eq!(r.outcome, Outcome::Error(ErrorClass::RateLimited));
    assert_eq!(r.ttft, None);
    assert_eq!(
        r.e2e,
        ns(35),
        "the request ends at the error, not at the stream's end"
    );
    assert_eq!(r.output_tokens, 0, "items after the error are not measured");
}

#[test]
fn scheduled_never_marked_gives_no_queue_or_prefill() {
    let rig = Rig::server();
    let request = rig.series.start();
    let script = Scripted::new(&rig.time, vec![(70, 1), (10, 1)], 0);
    let _ = block_on(script.meter(request).count());
    let r = rig.only_record();
    assert_eq!((r.queue, r.prefill, r.inference), (None, None, None));
    assert_eq!((r.ttft, r.decode), (Some(ns(70)), Some(ns(10))));
}

#[test]
fn scheduled_after_the_first_token_is_ignored() {
    let rig = Rig::server();
    let mut request = rig.series.start();
    rig.advance_ns(10);
    request.record_tokens(1);
    rig.advance_ns(10);
    request.mark_scheduled();
    request.succeed();
    let r = rig.only_record();
    assert_eq!((r.queue, r.prefill), (None, None));
}
