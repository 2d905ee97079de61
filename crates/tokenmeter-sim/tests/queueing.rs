//! In paused time: requests queue when the batch or the KV cache is full, the core's waiting
//! gauge shows it, and the waiting gauge rises before TTFT does.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::join_all;
use tokenmeter::RequestRecord;
use tokenmeter_sim::{Engine, GenerateRequest, Operation, SimConfig, Snapshot};

mod common;

use common::{engine, ms};

/// Samples the waiting gauge and the engine's snapshot every millisecond until `done` is set.
fn sample(
    engine: &Engine,
    done: Arc<Mutex<bool>>,
) -> tokio::task::JoinHandle<Vec<(Duration, i64, Snapshot)>> {
    let engine = engine.clone();
    let clock = engine.series(Operation::Chat).clock().clone();
    tokio::spawn(async move {
        let mut samples = Vec::new();
        while !*done.lock().expect("not poisoned") {
            let waiting = engine.series(Operation::Chat).waiting();
            samples.push((clock.now(), waiting, engine.snapshot()));
            tokio::time::sleep(ms(1)).await;
        }
        samples
    })
}

async fn run_all(engine: &Engine, requests: &[GenerateRequest]) {
    let streams: Vec<_> = requests
        .iter()
        .map(|r| engine.submit(r.clone()).expect("accepted"))
        .collect();
    join_all(streams.into_iter().map(|s| s.collect::<Vec<_>>())).await;
}

fn queued(records: &[RequestRecord]) -> usize {
    records
        .iter()
        .filter(|r| r.queue.expect("scheduled") > Duration::ZERO)
        .count()
}

#[tokio::test(start_paused = true)]
async fn a_full_batch_makes_requests_wait() {
    let (engine, memory) = engine(SimConfig::default().max_batch(4));
    let done = Arc::new(Mutex::new(false));
    let sampler = sample(&engine, done.clone());
    run_all(&engine, &vec![GenerateRequest::chat(100, 10); 10]).await;
    *done.lock().expect("not poisoned") = true;
    let samples = sampler.await.expect("sampler ran");

    let records = memory.records();
    assert_eq!(records.len(), 10);
    // 4 run at once; the other 6 wait for a slot.
    assert_eq!(queued(&records), 6);
    let max_queue = records.iter().filter_map(|r| r.queue).max().expect("some");
    assert!(
        max_queue >= ms(100),
        "the last waited two batches: {max_queue:?}"
    );
    // The gauges saw it: 6 waiting while 4 ran, never more than 4 running.
    assert_eq!(samples.iter().map(|s| s.1).max(), Some(6));
    assert!(samples.iter().all(|s| s.2.running <= 4));
    assert!(samples.iter().any(|s| s.2.waiting == 6 && s.2.running == 4));
    let series = engine.series(Operation::Chat);
    assert_eq!((series.waiting(), series.running()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_full_kv_cache_makes_requests_wait() {
    // Each request reserves 300 + 100 tokens: two fit in 1,000.
    let (engine, memory) = engine(SimConfig::default().kv_capacity_tokens(1_000));
    let done = Arc::new(Mutex::new(false));
    let sampler = sample(&engine, done.clone());
    run_all(&engine, &vec![GenerateRequest::chat(300, 100); 6]).await;
    *done.lock().expect("not poisoned") = true;
    let samples = sampler.await.expect("sampler ran");

    let records = memory.records();
    assert_eq!(queued(&records), 4);
    assert!(samples.iter().all(|s| s.2.running <= 2));
    assert!(samples.iter().all(|s| s.2.kv_used_tokens <= 1_000));
    assert!(samples.iter().all(|s| s.2.kv_reserved_tokens <= 1_000));
    assert_eq!(samples.iter().map(|s| s.1).max(), Some(4));
    // Usage grows as tokens are generated: 2 × (300 + 100) = 0.8 at the end of a pair.
    let peak = samples.iter().map(|s| s.2.kv_usage()).fold(0.0, f64::max);
    assert!((0.79..=0.8).contains(&peak), "peak KV usage {peak}");
    assert!(samples.iter().any(|s| (0.6..0.7).contains(&s.2.kv_usage())));
    assert_eq!(engine.snapshot().kv_used_tokens, 0);
}

#[tokio::test(start_paused = true)]
async fn the_waiting_gauge_rises_before_ttft_does() {
    let (engine, memory) = engine(SimConfig::default().max_batch(8));
    let done = Arc::new(Mutex::new(false));
    let sampler = sample(&engine, done.clone());

    // Light load for a second (one request every 100 ms), then a burst far over capacity (one
    // every 2 ms for 400 ms), each request generating 64 tokens.
    let mut arrivals = Vec::new();
    arrivals.extend((0..10).map(|i| ms(100 * i)));
    arrivals.extend((0..200).map(|i| ms(1_000 + 2 * i)));
    let clients = arrivals.iter().map(|&at| {
        let engine = engine.clone();
        async move {
            tokio::time::sleep(at).await;
            let stream = engine
                .submit(GenerateRequest::chat(100, 64))
                .expect("accepted");
            stream.collect::<Vec<_>>().await
        }
    });
    join_all(clients).await;
    *done.lock().expect("not poisoned") = true;
    let samples = sampler.await.expect("sampler ran");
    let records = memory.records();
    assert_eq!(records.len(), 210);

    // TTFT under light load, and when a TTFT far above it is first seen (at that request's
    // first token).
    let light: Vec<_> = records.iter().filter(|r| r.arrival < ms(1_000)).collect();
    let baseline = light.iter().filter_map(|r| r.ttft).max().expect("ttft");
    let slow_seen = records
        .iter()
        .filter(|r| r.ttft.expect("ttft") > baseline * 3)
        .map(|r| r.arrival + r.ttft.expect("ttft"))
        .min()
        .expect("the burst made TTFT rise");
    // When the waiting gauge first shows a queue building.
    let queue_seen = samples
        .iter()
        .find(|s| s.1 >= 4)
        .map(|s| s.0)
        .expect("the waiting gauge rose");
    assert!(
        samples.iter().filter(|s| s.0 < ms(1_000)).all(|s| s.1 < 4),
        "no queue under light load"
    );
    assert!(
        queue_seen < slow_seen,
        "waiting gauge rose at {queue_seen:?}, TTFT > {:?} first seen at {slow_seen:?}",
        baseline * 3
    );
    eprintln!(
        "queue seen at {queue_seen:?}, slow TTFT seen at {slow_seen:?} (baseline {baseline:?})"
    );
    assert!(queue_seen >= ms(1_000));
}
