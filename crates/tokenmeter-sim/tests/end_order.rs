//! A request ends after the engine has published the state without it: the sink that records
//! its end, and the consumer that sees its stream end, both see an engine that no longer holds
//! it (not running, its KV cache freed).

use std::sync::{Arc, Mutex, OnceLock};

use futures_util::StreamExt;
use futures_util::future::join_all;
use tokenmeter::sink::{InMemorySink, SeriesSink, Sink};
use tokenmeter::{Clock, Labels, Meter, Outcome, RequestRecord};
use tokenmeter_sim::{Engine, Faults, GenerateRequest, SimConfig, Snapshot};

/// A sink that reads the engine's snapshot when a request's end is recorded.
#[derive(Clone, Default)]
struct EndWatch {
    engine: Arc<OnceLock<Engine>>,
    seen: Arc<Mutex<Vec<(Outcome, Snapshot)>>>,
}

impl Sink for EndWatch {
    fn series(&self, _labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(self.clone())
    }
}

impl SeriesSink for EndWatch {
    fn end(&self, record: &RequestRecord) {
        let snapshot = self.engine.get().expect("engine set").snapshot();
        let mut seen = self.seen.lock().expect("not poisoned");
        seen.push((record.outcome, snapshot));
    }
}

fn watched(config: SimConfig) -> (Engine, EndWatch) {
    let watch = EndWatch::default();
    let meter = Meter::builder()
        .clock(Clock::tokio())
        .sink(watch.clone())
        .sink(InMemorySink::new())
        .build();
    let engine = Engine::builder()
        .meter(meter)
        .config(config)
        .build()
        .expect("valid config");
    watch.engine.set(engine.clone()).expect("set once");
    (engine, watch)
}

#[tokio::test(start_paused = true)]
async fn a_finished_request_is_out_of_the_snapshot_when_its_end_is_recorded() {
    let (engine, watch) = watched(SimConfig::default());
    // Three requests in one batch, ending one after another.
    let prompt = 100;
    let streams: Vec<_> = [3, 6, 9]
        .into_iter()
        .map(|output| {
            engine
                .submit(GenerateRequest::chat(prompt, output))
                .expect("accepted")
        })
        .collect();
    join_all(streams.into_iter().map(|s| s.collect::<Vec<_>>())).await;
    let seen = watch.seen.lock().expect("not poisoned").clone();
    assert_eq!(seen.len(), 3);
    // At each end, the requests still running are the longer ones, with their prompt and the
    // tokens they have emitted so far in the cache.
    let expected = [(2, 2 * prompt + 3 + 3), (1, prompt + 6), (0, 0)];
    for ((outcome, snapshot), (running, kv_used)) in seen.iter().zip(expected) {
        assert_eq!(*outcome, Outcome::Success);
        assert_eq!(snapshot.running, running, "{snapshot:?}");
        assert_eq!(snapshot.kv_used_tokens, u64::from(kv_used), "{snapshot:?}");
    }
    assert_eq!(seen[2].1.kv_reserved_tokens, 0);
}

#[tokio::test(start_paused = true)]
async fn a_failed_request_is_out_of_the_snapshot_when_its_end_is_recorded() {
    let config = SimConfig::default().faults(Faults::default().error_rate(1.0));
    let (engine, watch) = watched(config);
    let tokens: Vec<_> = engine
        .submit(GenerateRequest::chat(50, 20))
        .expect("accepted")
        .collect()
        .await;
    assert!(tokens.last().expect("an item").is_err(), "{tokens:?}");
    let seen = watch.seen.lock().expect("not poisoned").clone();
    assert_eq!(seen.len(), 1);
    assert!(matches!(seen[0].0, Outcome::Error(_)), "{seen:?}");
    assert_eq!(seen[0].1.running, 0);
    assert_eq!(seen[0].1.kv_reserved_tokens, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_whose_stream_ended_sees_the_engine_without_it() {
    let (engine, _watch) = watched(SimConfig::default());
    for _ in 0..20 {
        let tokens: Vec<_> = engine
            .submit(GenerateRequest::chat(10, 2))
            .expect("accepted")
            .collect()
            .await;
        assert_eq!(tokens.len(), 2);
        let snapshot = engine.snapshot();
        assert_eq!((snapshot.running, snapshot.kv_reserved_tokens), (0, 0));
    }
}
