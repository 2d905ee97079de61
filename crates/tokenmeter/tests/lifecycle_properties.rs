//! Property test: over random scripts of items, errors, gaps, drops and panics, every request
//! started ends exactly once with the expected outcome, nothing is lost, and gauges return to 0.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use common::{Rig, Scripted};
use futures_executor::block_on;
use futures_util::StreamExt;
use proptest::prelude::*;
use tokenmeter::stream::Results;
use tokenmeter::{ErrorClass, Metered, Outcome};

#[derive(Clone, Debug)]
enum Op {
    Tokens(u64, u32),
    Error(u64, ErrorClass),
    Panic(u64),
}

#[derive(Clone, Debug)]
enum Ending {
    /// Poll to the end of the stream.
    Drain,
    /// Drop after polling this many items.
    DropAfter(usize),
}

#[derive(Clone, Debug)]
struct Script {
    scheduled_after: Option<u64>,
    ops: Vec<Op>,
    ending: Ending,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..1_000_000u64, 0..5u32).prop_map(|(g, k)| Op::Tokens(g, k)),
        1 => (0..1_000_000u64, proptest::sample::select(ErrorClass::ALL.to_vec()))
            .prop_map(|(g, c)| Op::Error(g, c)),
        1 => (0..1_000_000u64).prop_map(Op::Panic),
    ]
}

fn script() -> impl Strategy<Value = Script> {
    (
        proptest::option::of(0..1_000u64),
        proptest::collection::vec(op(), 0..16),
        prop_oneof![
            Just(Ending::Drain),
            (0..16usize).prop_map(Ending::DropAfter)
        ],
    )
        .prop_map(|(scheduled_after, ops, ending)| Script {
            scheduled_after,
            ops,
            ending,
        })
}

/// What the request should end with, and the tokens it should have counted.
fn expected(script: &Script) -> (Outcome, bool, u64) {
    let limit = match script.ending {
        Ending::Drain => script.ops.len(),
        Ending::DropAfter(n) => n.min(script.ops.len()),
    };
    let mut tokens = 0;
    for op in &script.ops[..limit] {
        match op {
            Op::Tokens(_, k) => tokens += u64::from(*k),
            Op::Error(_, class) => return (Outcome::Error(*class), false, tokens),
            Op::Panic(_) => return (Outcome::Error(ErrorClass::Other), true, tokens),
        }
    }
    // Dropped before the stream's end was polled: even after the last item, the end was not seen.
    match script.ending {
        Ending::DropAfter(n) if n <= script.ops.len() => (Outcome::Cancelled, false, tokens),
        _ => (Outcome::Success, false, tokens),
    }
}

/// Keeps the scripted panics out of the test output; every other panic is reported as usual.
fn quiet_scripted_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&"scripted panic") {
                default(info);
            }
        }));
    });
}

fn run(rig: &Rig, scripts: &[Script]) {
    quiet_scripted_panics();
    // Start every request first, so the gauges see them all at once.
    let mut requests: Vec<_> = scripts.iter().map(|_| rig.series.start()).collect();
    assert_eq!(rig.series.waiting(), scripts.len() as i64);
    for (script, request) in scripts.iter().zip(requests.iter_mut()) {
        if let Some(after) = script.scheduled_after {
            rig.advance_ns(after);
            request.mark_scheduled();
        }
    }
    for (script, request) in scripts.iter().zip(requests) {
        let steps = script
            .ops
            .iter()
            .map(|op| match *op {
                Op::Tokens(g, k) => (g, Ok(Some(k))),
                Op::Error(g, c) => (g, Err(c)),
                Op::Panic(g) => (g, Ok(None)),
            })
            .collect();
        let stream =
            Scripted::new(&rig.time, steps, 3).map(|item: Result<Option<u32>, ErrorClass>| {
                match item {
                    Ok(None) => panic!("scripted panic"),
                    Ok(Some(k)) => Ok(k),
                    Err(c) => Err(c),
                }
            });
        let observer = Results::new().observe_ok(|k: &u32| *k);
        let mut metered = Metered::new(stream, request, observer);
        let _ = catch_unwind(AssertUnwindSafe(|| {
            block_on(async {
                match script.ending {
                    Ending::Drain => while metered.next().await.is_some() {},
                    Ending::DropAfter(n) => {
                        for _ in 0..n {
                            if metered.next().await.is_none() {
                                break;
                            }
                        }
                    }
                }
            });
            drop(metered);
        }));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(256) })]

    #[test]
    fn every_request_ends_exactly_once(scripts in proptest::collection::vec(script(), 1..8)) {
        let rig = Rig::server();
        run(&rig, &scripts);
        let records = rig.memory.records();
        prop_assert_eq!(records.len(), scripts.len(), "one record per request, none lost");
        for (script, record) in scripts.iter().zip(&records) {
            let (outcome, panicked, tokens) = expected(script);
            prop_assert_eq!(record.outcome, outcome, "script {:?}", script);
            prop_assert_eq!(record.panicked, panicked);
            prop_assert_eq!(record.output_tokens, tokens);
            prop_assert_eq!(record.ttft.is_some(), tokens > 0);
            prop_assert_eq!(record.queue.is_some(), script.scheduled_after.is_some());
            if let (Some(ttft), Some(decode)) = (record.ttft, record.decode) {
                prop_assert!(ttft + decode <= record.e2e);
            }
        }
        let gaps = rig.memory.gaps().len() as u64;
        let items: u64 = records.iter().map(|r| r.items.saturating_sub(1)).sum();
        prop_assert_eq!(gaps, items, "one ITL sample per token-bearing item after the first");
        prop_assert_eq!((rig.series.waiting(), rig.series.running()), (0, 0));
    }
}
