//! Fault knobs, cancellation, refusals and determinism, in paused time.

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::join_all;
use tokenmeter::{ErrorClass, FinishReason, Outcome};
use tokenmeter_sim::{
    ConfigError, Engine, Faults, GenerateRequest, SimConfig, StreamError, SubmitError, TokenResult,
};

mod common;

use common::{engine, ms};

async fn run(engine: &Engine, n: usize, output: u32) -> Vec<Vec<TokenResult>> {
    let streams: Vec<_> = (0..n)
        .map(|_| {
            engine
                .submit(GenerateRequest::chat(50, output))
                .expect("accepted")
        })
        .collect();
    join_all(streams.into_iter().map(|s| s.collect::<Vec<_>>())).await
}

#[tokio::test(start_paused = true)]
async fn every_request_fails_at_error_rate_one() {
    let faults = Faults::default().error_rate(1.0);
    let (engine, memory) = engine(SimConfig::default().faults(faults));
    let outputs = run(&engine, 20, 10).await;
    let mut records = memory.records();
    records.sort_by_key(|r| r.id); // in submission order, like the outputs
    for (tokens, record) in outputs.iter().zip(records) {
        let last = tokens.last().expect("an item");
        let Err(StreamError::Injected { after_tokens }) = last else {
            panic!("the stream ends with the injected error: {last:?}");
        };
        assert_eq!(tokens.len(), *after_tokens as usize + 1);
        assert!(tokens[..tokens.len() - 1].iter().all(Result::is_ok));
        assert_eq!(record.outcome, Outcome::Error(ErrorClass::ServerError));
        assert_eq!(record.output_tokens, u64::from(*after_tokens));
    }
}

#[tokio::test(start_paused = true)]
async fn failures_come_before_and_during_streams_at_the_given_rate() {
    let faults = Faults::default().error_rate(0.3);
    let (engine, memory) = engine(SimConfig::default().seed(3).faults(faults));
    run(&engine, 200, 8).await;
    let records = memory.records();
    let failed: Vec<_> = records
        .iter()
        .filter(|r| r.outcome == Outcome::Error(ErrorClass::ServerError))
        .collect();
    assert!((40..=80).contains(&failed.len()), "{} failed", failed.len());
    assert!(
        failed.iter().any(|r| r.ttft.is_none()),
        "some before a token"
    );
    assert!(
        failed.iter().any(|r| r.output_tokens > 0),
        "some mid-stream"
    );
    let ok = records.len() - failed.len();
    assert_eq!(memory.report().outcomes.success, ok as u64);
}

#[tokio::test(start_paused = true)]
async fn the_same_seed_gives_the_same_run() {
    async fn texts(seed: u64) -> (Vec<String>, Vec<Outcome>) {
        let faults = Faults::default()
            .error_rate(0.2)
            .stalls(0.2, Duration::from_millis(50));
        let (engine, memory) = engine(SimConfig::default().seed(seed).faults(faults));
        let outputs = run(&engine, 30, 12).await;
        let texts = outputs
            .iter()
            .map(|items| items.iter().flatten().map(|t| t.text).collect())
            .collect();
        let mut records = memory.records();
        records.sort_by_key(|r| r.id);
        (texts, records.iter().map(|r| r.outcome).collect())
    }
    let a = texts(11).await;
    assert_eq!(a, texts(11).await);
    assert_ne!(a.0, texts(12).await.0);
}

#[tokio::test(start_paused = true)]
async fn a_stall_pauses_one_stream_for_its_length() {
    let faults = Faults::default().stalls(1.0, ms(300));
    let (engine, memory) = engine(SimConfig::default().faults(faults));
    run(&engine, 1, 10).await;
    let gaps = memory.gaps();
    assert_eq!(gaps.len(), 9);
    let long: Vec<_> = gaps.iter().filter(|g| g.0 > ms(7)).collect();
    assert_eq!(long.len(), 1, "{gaps:?}");
    // The stall, then the decode step that produced the token.
    assert_eq!(long[0].0, ms(307));
    assert_eq!(memory.records()[0].outcome, Outcome::Success);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_stream_leaves_the_batch_to_the_others() {
    let faults = Faults::default().stalls(0.5, ms(200));
    let (engine, memory) = engine(SimConfig::default().seed(5).faults(faults));
    run(&engine, 8, 20).await;
    let stalled = memory
        .records()
        .iter()
        .filter(|r| r.decode.expect("decoded") > ms(200))
        .count();
    assert!((1..8).contains(&stalled), "{stalled} of 8 stalled");
    // While some are stalled the others keep decoding: some gaps are shorter than the batch of
    // 8 takes (8 ms).
    assert!(memory.gaps().iter().any(|g| g.0 < ms(8)));
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_refuses_with_rate_limited() {
    let faults = Faults::default().queue_limit(2);
    let (engine, memory) = engine(SimConfig::default().max_batch(1).faults(faults));
    let a = engine
        .submit(GenerateRequest::chat(10, 5))
        .expect("1st waits");
    let b = engine
        .submit(GenerateRequest::chat(10, 5))
        .expect("2nd waits");
    let refused = engine.submit(GenerateRequest::chat(10, 5));
    assert_eq!(
        refused.expect_err("3rd refused"),
        SubmitError::QueueFull {
            waiting: 2,
            limit: 2
        }
    );
    assert_eq!(engine.queue_depth(), 2);
    let records = memory.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, Outcome::Error(ErrorClass::RateLimited));
    assert_eq!(
        SubmitError::QueueFull {
            waiting: 2,
            limit: 2
        }
        .http_status(),
        429
    );

    // Once the engine admits one, there is room again.
    tokio::time::sleep(ms(1)).await;
    assert_eq!(engine.queue_depth(), 1);
    let c = engine.submit(GenerateRequest::chat(10, 5)).expect("room");
    join_all([a, b, c].map(|s| s.collect::<Vec<_>>())).await;
    assert_eq!(memory.report().outcomes.success, 3);
}

#[tokio::test(start_paused = true)]
async fn a_request_larger_than_the_cache_is_refused() {
    let (engine, memory) = engine(SimConfig::default().kv_capacity_tokens(1_000));
    let error = engine
        .submit(GenerateRequest::completion(900, 200))
        .expect_err("too large");
    assert_eq!(
        error,
        SubmitError::TooLarge {
            needed: 1_100,
            capacity: 1_000
        }
    );
    assert_eq!(error.http_status(), 400);
    assert!(error.to_string().contains("shorten"));
    assert_eq!(
        memory.records()[0].outcome,
        Outcome::Error(ErrorClass::ClientError)
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_a_stream_cancels_and_frees_its_slot() {
    let (engine, memory) = engine(SimConfig::default().max_batch(1));
    let mut first = engine
        .submit(GenerateRequest::chat(100, 1_000))
        .expect("ok");
    let second = engine.submit(GenerateRequest::chat(100, 5)).expect("ok");
    for _ in 0..3 {
        first.next().await.expect("a token").expect("no error");
    }
    assert_eq!(engine.queue_depth(), 1);
    drop(first);
    // The second request gets the slot and finishes.
    let tokens: Vec<_> = second.collect().await;
    assert_eq!(tokens.len(), 5);
    let last = tokens.last().and_then(|t| t.as_ref().ok()).expect("token");
    assert_eq!(last.finish_reason, Some(FinishReason::Stop));

    let records = memory.records();
    assert_eq!(records[0].outcome, Outcome::Cancelled);
    assert_eq!(records[0].output_tokens, 3);
    assert_eq!(records[1].outcome, Outcome::Success);
    assert!(records[1].queue.expect("scheduled") > Duration::ZERO);
    assert_eq!(engine.snapshot().running, 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_waiting_stream_cancels_it_in_the_queue() {
    let (engine, memory) = engine(SimConfig::default().max_batch(1));
    let first = engine.submit(GenerateRequest::chat(10, 20)).expect("ok");
    let waiting = engine.submit(GenerateRequest::chat(10, 20)).expect("ok");
    tokio::time::sleep(ms(30)).await;
    drop(waiting);
    let _ = first.collect::<Vec<_>>().await;
    let records = memory.records();
    let cancelled = records
        .iter()
        .find(|r| r.outcome == Outcome::Cancelled)
        .expect("cancelled");
    assert_eq!((cancelled.queue, cancelled.ttft), (None, None));
    assert_eq!(engine.queue_depth(), 0);
    assert_eq!(engine.series(tokenmeter_sim::Operation::Chat).waiting(), 0);
}

#[tokio::test(start_paused = true)]
async fn length_finish_reasons_are_reported() {
    let (engine, memory) = engine(SimConfig::default());
    let request = GenerateRequest::completion(10, 2).finish_reason(FinishReason::Length);
    let tokens: Vec<_> = engine.submit(request).expect("ok").collect().await;
    let last = tokens[1].as_ref().expect("token");
    assert_eq!(
        (last.index, last.finish_reason),
        (1, Some(FinishReason::Length))
    );
    assert_eq!(
        memory.records()[0].finish_reason,
        Some(FinishReason::Length)
    );
}

#[tokio::test]
async fn bad_configurations_are_refused_with_a_fix() {
    let zero = Engine::builder()
        .config(SimConfig::default().max_batch(0))
        .build();
    assert_eq!(
        zero.expect_err("refused"),
        ConfigError::Zero { name: "max_batch" }
    );
    let rate = Engine::builder()
        .config(SimConfig::default().faults(Faults::default().error_rate(1.5)))
        .build()
        .expect_err("refused");
    assert!(rate.to_string().contains("between 0.0 and 1.0"), "{rate}");
}

#[test]
fn building_outside_a_runtime_is_an_error_not_a_panic() {
    let error = Engine::builder().build().expect_err("no runtime");
    assert_eq!(error, ConfigError::NoRuntime);
    assert!(error.to_string().contains("tokio runtime"));
}
