//! In paused time, the measured inter-token latency of N concurrent requests is the decode
//! table's step time for a batch of N, and prefill time grows with the prompt.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::join_all;
use tokenmeter::sink::InMemorySink;
use tokenmeter::{Meter, Outcome};
use tokenmeter_sim::{
    CostModel, Engine, GenerateRequest, H100_8B_DECODE, SimConfig, StepKind, StepStats,
};

mod common;

use common::{measured, ms};

/// Runs `n` requests submitted at the same instant; returns the server-side sink and the steps.
async fn run_batch(n: usize, prompt: u32, output: u32) -> (InMemorySink, Vec<StepStats>) {
    let steps = Arc::new(Mutex::new(Vec::new()));
    let seen = steps.clone();
    let (builder, memory) = measured(SimConfig::default().max_batch(64));
    let engine = builder
        .on_step(move |step| seen.lock().expect("not poisoned").push(*step))
        .build()
        .expect("valid config");
    let streams: Vec<_> = (0..n)
        .map(|_| {
            engine
                .submit(GenerateRequest::chat(prompt, output))
                .expect("accepted")
        })
        .collect();
    let outputs = join_all(streams.into_iter().map(|s| s.collect::<Vec<_>>())).await;
    for tokens in outputs {
        assert_eq!(tokens.len(), output as usize);
        assert!(tokens.iter().all(Result::is_ok));
    }
    let steps = steps.lock().expect("not poisoned").clone();
    (memory, steps)
}

#[tokio::test(start_paused = true)]
async fn itl_is_the_table_step_time_at_every_table_point() {
    for (batch, step) in H100_8B_DECODE {
        let (memory, _) = run_batch(batch as usize, 100, 20).await;
        let gaps = memory.gaps();
        assert_eq!(gaps.len(), batch as usize * 19, "batch {batch}");
        for (gap, tokens) in gaps {
            assert_eq!(tokens, 1);
            assert_eq!(gap, step, "batch {batch}: every decode step takes {step:?}");
        }
        let report = memory.report();
        assert_eq!(report.outcomes.success, batch as u64);
        for record in memory.records() {
            assert_eq!(record.tpot(), Some(step), "batch {batch}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn itl_between_table_points_is_interpolated() {
    // 8 → 8 ms and 32 → 12 ms: a batch of 20 decodes in 10 ms.
    let (memory, _) = run_batch(20, 100, 10).await;
    assert!(memory.gaps().iter().all(|&(gap, _)| gap == ms(10)));

    // A batch of 4: 7 + 3/7 ms, not a whole millisecond. Wake-ups land on the next millisecond,
    // but steps are chained on their exact planned ends, so the mean keeps the table's value.
    let (memory, steps) = run_batch(4, 100, 50).await;
    let expected = CostModel::default().decode_step(4);
    let decode: Vec<_> = steps
        .iter()
        .filter(|s| s.kind() == StepKind::Decode)
        .collect();
    assert_eq!(decode.len(), 49);
    assert!(decode.iter().all(|s| s.duration == expected));
    for record in memory.records() {
        let tpot = record.tpot().expect("50 tokens").as_secs_f64();
        let error = (tpot - expected.as_secs_f64()).abs();
        assert!(error < 0.1e-3, "tpot {tpot} vs {expected:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn bigger_batches_decode_slower() {
    let mut previous = Duration::ZERO;
    for batch in [1, 16, 48, 64] {
        let (memory, _) = run_batch(batch, 10, 5).await;
        let report = memory.report();
        let itl = Duration::from_secs_f64(report.itl.p50);
        assert!(itl > previous, "batch {batch}: {itl:?} after {previous:?}");
        previous = itl;
    }
}

#[tokio::test(start_paused = true)]
async fn ttft_is_the_prefill_time_and_grows_with_the_prompt() {
    for (prompt, prefill) in [(100, ms(8)), (1_000, ms(53)), (4_000, ms(203))] {
        let (memory, steps) = run_batch(1, prompt, 3).await;
        let record = &memory.records()[0];
        assert_eq!(record.ttft, Some(prefill), "prompt {prompt}");
        assert_eq!(record.queue, Some(Duration::ZERO));
        assert_eq!(record.prefill, Some(prefill));
        assert_eq!(record.outcome, Outcome::Success);
        assert_eq!(record.input_tokens, Some(u64::from(prompt)));
        assert_eq!(steps[0].kind(), StepKind::Prefill);
        assert_eq!(steps[0].prefill_tokens, u64::from(prompt));
        assert_eq!(steps[1].kind(), StepKind::Decode);
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_arriving_mid_run_shares_a_mixed_step() {
    let steps = Arc::new(Mutex::new(Vec::new()));
    let seen = steps.clone();
    let (builder, _memory) = measured(SimConfig::default());
    let engine = builder
        .on_step(move |step| seen.lock().expect("not poisoned").push(*step))
        .build()
        .expect("valid config");
    let first = engine.submit(GenerateRequest::chat(100, 10)).expect("ok");
    let late = async {
        tokio::time::sleep(ms(20)).await;
        engine
            .submit(GenerateRequest::chat(100, 10))
            .expect("ok")
            .collect::<Vec<_>>()
            .await
    };
    let (a, b) = tokio::join!(first.collect::<Vec<_>>(), late);
    assert_eq!((a.len(), b.len()), (10, 10));
    let steps = steps.lock().expect("not poisoned").clone();
    let mixed: Vec<_> = steps
        .iter()
        .filter(|s| s.kind() == StepKind::Mixed)
        .collect();
    assert_eq!(mixed.len(), 1, "{steps:#?}");
    // Prefill of 100 tokens (8 ms) plus a decode step of a batch of one (7 ms).
    assert_eq!(mixed[0].duration, ms(15));
    assert_eq!(
        (mixed[0].prefill_requests, mixed[0].decode_requests),
        (1, 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_in_real_time() {
    let memory = InMemorySink::new();
    let meter = Meter::builder().sink(memory.clone()).build(); // monotonic clock
    let steps = Arc::new(Mutex::new(Vec::new()));
    let seen = steps.clone();
    let engine = Engine::builder()
        .meter(meter)
        .on_step(move |step| seen.lock().expect("not poisoned").push(*step))
        .build()
        .expect("valid");
    let streams: Vec<_> = (0..4)
        .map(|_| engine.submit(GenerateRequest::chat(100, 20)).expect("ok"))
        .collect();
    join_all(streams.into_iter().map(|s| s.collect::<Vec<_>>())).await;
    // The engine runs on another worker and may start its first step before the last request
    // is submitted, so the four prefills share one step (400 tokens) or are spread over several.
    // Either way a request's first token comes at the end of the step that prefilled it, which
    // started after the request was submitted: its TTFT is at least the shortest such step.
    let steps = steps.lock().expect("not poisoned").clone();
    let prefills: Vec<_> = steps.iter().filter(|s| s.prefill_requests > 0).collect();
    let prefilled: usize = prefills.iter().map(|s| s.prefill_requests).sum();
    assert_eq!(prefilled, 4, "{steps:#?}");
    let cost = CostModel::default();
    let shortest = prefills
        .iter()
        .map(|s| s.duration)
        .min()
        .expect("a prefill");
    assert!(shortest >= cost.prefill(100), "{steps:#?}");
    for record in memory.records() {
        assert_eq!(record.outcome, Outcome::Success);
        // Real timers wake late by up to a millisecond or so on a busy machine, never early
        // (a late first token can shorten the mean gap a little, hence the millisecond).
        // Every gap is one decode step of a batch of one to four (a mixed step is longer).
        let tpot = record.tpot().expect("20 tokens");
        let (fastest, slowest) = (cost.decode_step(1), cost.decode_step(4));
        assert!(
            tpot >= fastest - ms(1) && tpot < slowest + ms(10),
            "{tpot:?}"
        );
        let ttft = record.ttft.expect("ttft");
        assert!(
            ttft >= shortest,
            "TTFT {ttft:?} under its prefill step {shortest:?}"
        );
    }
}
