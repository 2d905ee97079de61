//! Delivery accounting, in paused time: a request's tokens and outcome are what its consumer
//! took; a consumer that stops taking stalls its own request only, within a bounded output
//! queue, and the stall limit cuts it.

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::join_all;
use tokenmeter::{ErrorClass, Outcome};
use tokenmeter_sim::{GenerateRequest, SimConfig, StreamError, TokenStream};

mod common;

use common::{engine, ms};

/// Takes `n` tokens, each one expected.
async fn take(tokens: &mut TokenStream, n: usize) {
    for i in 0..n {
        let item = tokens.next().await.unwrap_or_else(|| panic!("token {i}"));
        item.unwrap_or_else(|e| panic!("token {i}: {e}"));
    }
}

#[tokio::test(start_paused = true)]
async fn a_stalled_consumer_stalls_only_its_own_request() {
    let prompt = 100;
    let output = 200;
    let config = SimConfig::default().output_queue(8);
    // The others' run on their own: the reference schedule.
    let (alone, alone_memory) = engine(config.clone());
    let streams: Vec<_> = (0..3)
        .map(|_| alone.submit(GenerateRequest::chat(prompt, output)))
        .collect::<Result<_, _>>()
        .expect("accepted");
    join_all(streams.into_iter().map(|s| s.collect::<Vec<_>>())).await;
    let reference = alone_memory.records()[0].e2e;

    let (engine, memory) = engine(config);
    let mut stalled = engine
        .submit(GenerateRequest::chat(prompt, output))
        .expect("accepted");
    let others: Vec<_> = (0..3)
        .map(|_| engine.submit(GenerateRequest::chat(prompt, output)))
        .collect::<Result<_, _>>()
        .expect("accepted");
    take(&mut stalled, 2).await;
    // The stalled one never reads while the others run to their end.
    let outputs = join_all(others.into_iter().map(|s| s.collect::<Vec<_>>())).await;
    assert!(outputs.iter().all(|o| o.len() == output as usize));
    let records = memory.records();
    assert_eq!(records.len(), 3, "only the others ended");
    for record in &records {
        assert_eq!(record.outcome, Outcome::Success);
        // On schedule: no slower than without the stalled request (a batch of 3 or 4 costs
        // about the same; the stalled one left the decode batch early).
        assert!(
            record.e2e <= reference + ms(10),
            "{:?} vs {reference:?}",
            record.e2e
        );
    }
    // The stalled request holds its batch slot and KV cache, with what it produced before its
    // queue filled: the 2 taken and the 8 queued, and no more.
    let before = engine.snapshot();
    assert_eq!(before.running, 1, "{before:?}");
    assert_eq!(before.kv_used_tokens, u64::from(prompt) + 2 + 8);
    // The engine idles meanwhile: no step runs while nothing can decode.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = engine.snapshot();
    assert_eq!(
        after.steps, before.steps,
        "the engine waits, it does not spin"
    );
    assert_eq!(after.kv_used_tokens, before.kv_used_tokens);
    // Reading again, it gets everything and succeeds.
    let rest: Vec<_> = stalled.collect().await;
    assert_eq!(rest.len(), output as usize - 2);
    assert!(rest.iter().all(Result::is_ok));
    let record = memory
        .records()
        .into_iter()
        .find(|r| r.e2e > reference * 2)
        .expect("the stalled request's record");
    assert_eq!(
        (record.outcome, record.output_tokens),
        (Outcome::Success, 200)
    );
    assert!(record.decode.expect("decoded") >= Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn the_stall_limit_cuts_and_ends_a_consumer_that_stopped_taking() {
    let limit = Duration::from_secs(2);
    let config = SimConfig::default().output_queue(4).stall_limit(limit);
    let (engine, memory) = engine(config);
    let mut tokens = engine
        .submit(GenerateRequest::chat(10, 1_000))
        .expect("accepted");
    take(&mut tokens, 3).await;
    // The queue fills within a few steps; the request then waits for its reader.
    tokio::time::sleep(ms(100)).await;
    assert_eq!(engine.snapshot().running, 1);
    tokio::time::sleep(limit - ms(200)).await;
    assert_eq!(engine.snapshot().running, 1, "not cut before the limit");
    assert!(memory.records().is_empty(), "not ended before the limit");
    tokio::time::sleep(ms(200)).await;
    let snapshot = engine.snapshot();
    assert_eq!(
        (snapshot.running, snapshot.kv_reserved_tokens),
        (0, 0),
        "cut at the limit: its slot and cache are free"
    );
    // Ended by the engine at the limit, though the consumer has not looked since: cancelled
    // with the 3 tokens it took.
    let record = &memory.records()[0];
    assert_eq!(
        (record.outcome, record.output_tokens),
        (Outcome::Cancelled, 3)
    );
    // The reader comes back: the cut, not the 4 tokens queued but never counted.
    let rest: Vec<_> = tokens.collect().await;
    assert_eq!(rest, vec![Err(StreamError::Stalled { limit })]);
    assert_eq!(memory.records().len(), 1, "recorded once");
}

#[tokio::test(start_paused = true)]
async fn a_consumer_cut_at_the_stall_limit_that_hangs_up_has_what_it_took() {
    let config = SimConfig::default()
        .output_queue(4)
        .stall_limit(Duration::from_secs(1));
    let (engine, memory) = engine(config);
    let mut tokens = engine
        .submit(GenerateRequest::chat(10, 1_000))
        .expect("accepted");
    take(&mut tokens, 5).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    drop(tokens);
    let record = &memory.records()[0];
    assert_eq!(
        (record.outcome, record.output_tokens),
        (Outcome::Cancelled, 5)
    );
}

#[tokio::test(start_paused = true)]
async fn a_consumer_dropping_after_k_tokens_is_cancelled_with_exactly_k() {
    for k in [0, 1, 5, 9] {
        for pause in [None, Some(ms(300))] {
            let (engine, memory) = engine(SimConfig::default().output_queue(4));
            let mut tokens = engine
                .submit(GenerateRequest::chat(10, 10))
                .expect("accepted");
            take(&mut tokens, k).await;
            if let Some(pause) = pause {
                // Long enough for the engine to produce every token it may queue.
                tokio::time::sleep(pause).await;
            }
            drop(tokens);
            // The engine lets go of it at its next turn (a request dropped before the engine
            // took it in is recorded then).
            tokio::time::sleep(ms(20)).await;
            assert_eq!(engine.snapshot().running, 0, "k={k} {pause:?}");
            let records = memory.records();
            assert_eq!(records.len(), 1, "k={k} {pause:?}");
            let record = &records[0];
            assert_eq!(record.outcome, Outcome::Cancelled, "k={k} {pause:?}");
            assert_eq!(record.output_tokens, k as u64, "k={k} {pause:?}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn success_comes_only_when_the_last_token_is_taken() {
    let (engine, memory) = engine(SimConfig::default());
    let mut tokens = engine
        .submit(GenerateRequest::chat(10, 10))
        .expect("accepted");
    take(&mut tokens, 9).await;
    // The engine has produced the last token and let go of the request...
    tokio::time::sleep(ms(100)).await;
    assert_eq!(engine.snapshot().running, 0);
    // ...but it is not taken: no outcome yet.
    assert!(memory.records().is_empty());
    take(&mut tokens, 1).await;
    let record = &memory.records()[0];
    assert_eq!(
        (record.outcome, record.output_tokens),
        (Outcome::Success, 10)
    );
    assert!(tokens.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_held_success_waits_for_delivered_and_is_cancelled_without_it() {
    let (engine, memory) = engine(SimConfig::default());
    for deliver in [true, false] {
        memory.clear();
        let mut tokens = engine
            .submit(GenerateRequest::chat(10, 4))
            .expect("accepted");
        tokens.hold_success();
        let all: Vec<_> = tokens.by_ref().collect().await;
        assert_eq!(all.len(), 4);
        assert!(memory.records().is_empty(), "held");
        if deliver {
            tokens.delivered();
        }
        drop(tokens);
        let record = &memory.records()[0];
        let expected = if deliver {
            Outcome::Success
        } else {
            Outcome::Cancelled
        };
        assert_eq!((record.outcome, record.output_tokens), (expected, 4));
    }
}

#[tokio::test(start_paused = true)]
async fn itl_is_measured_when_the_consumer_takes_each_token() {
    let (engine, memory) = engine(SimConfig::default());
    let mut tokens = engine
        .submit(GenerateRequest::chat(10, 6))
        .expect("accepted");
    take(&mut tokens, 1).await;
    // The engine makes a token every 7 ms; this consumer takes one every 50 ms.
    for _ in 0..5 {
        tokio::time::sleep(ms(50)).await;
        take(&mut tokens, 1).await;
    }
    let gaps = memory.gaps();
    assert_eq!(gaps.len(), 5);
    assert!(gaps.iter().all(|g| g.0 == ms(50)), "{gaps:?}");
}

#[tokio::test(start_paused = true)]
async fn peeking_counts_nothing_until_the_token_is_taken() {
    let (engine, memory) = engine(SimConfig::default());
    let mut tokens = engine
        .submit(GenerateRequest::chat(10, 3))
        .expect("accepted");
    assert!(matches!(tokens.peek().await, Some(Ok(_))));
    drop(tokens);
    let record = &memory.records()[0];
    assert_eq!(
        (record.outcome, record.output_tokens, record.ttft),
        (Outcome::Cancelled, 0, None)
    );
}

#[tokio::test(start_paused = true)]
async fn an_engine_failure_is_recorded_when_the_consumer_takes_it() {
    let faults = tokenmeter_sim::Faults::default().error_rate(1.0);
    let (engine, memory) = engine(SimConfig::default().seed(1).faults(faults));
    let mut tokens = engine
        .submit(GenerateRequest::chat(10, 50))
        .expect("accepted");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(memory.records().is_empty(), "not taken yet");
    let items: Vec<_> = tokens.by_ref().collect().await;
    assert!(items.last().expect("an item").is_err());
    assert_eq!(
        memory.records()[0].outcome,
        Outcome::Error(ErrorClass::ServerError)
    );
}

#[tokio::test]
async fn a_zero_output_queue_or_stall_limit_is_refused() {
    let queue = tokenmeter_sim::Engine::builder()
        .config(SimConfig::default().output_queue(0))
        .build()
        .expect_err("refused");
    assert!(queue.to_string().contains("output_queue"), "{queue}");
    let limit = tokenmeter_sim::Engine::builder()
        .config(SimConfig::default().stall_limit(Duration::ZERO))
        .build()
        .expect_err("refused");
    assert!(limit.to_string().contains("positive duration"), "{limit}");
}
