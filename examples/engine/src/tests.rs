//! The engine thread end to end on a tiny model: what its requests' records say.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use tokenmeter::sink::InMemorySink;
use tokenmeter::{FinishReason, Labels, Meter, Outcome};
use tokio::sync::mpsc::unbounded_channel;

use crate::engine::Engine;
use crate::job::{Event, Job};
use crate::model::{Model, ModelConfig};
use crate::scheduler::Scheduler;

fn tiny() -> ModelConfig {
    ModelConfig::tiny(4096)
}

struct Running {
    meter: Meter,
    memory: InMemorySink,
    jobs: mpsc::Sender<Job>,
    queued: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

fn start(max_batch: usize, kv_tokens: usize) -> Running {
    let memory = InMemorySink::new();
    let meter = Meter::builder().sink(memory.clone()).build();
    let recorder = Arc::new(meter.engine(&Labels::server("")));
    let queued = Arc::new(AtomicUsize::new(0));
    let model = Model::random(tiny(), 1).expect("model");
    let scheduler = Scheduler::new(max_batch, kv_tokens, queued.clone());
    let engine = Engine::new(model, scheduler, recorder, kv_tokens);
    let (jobs, inbox) = mpsc::channel();
    let thread = std::thread::spawn(move || engine.run(inbox));
    Running {
        meter,
        memory,
        jobs,
        queued,
        thread,
    }
}

impl Running {
    fn send(
        &self,
        prompt: usize,
        max_tokens: usize,
    ) -> tokio::sync::mpsc::UnboundedReceiver<Event> {
        let (events, rx) = unbounded_channel();
        let mut request = self.meter.series(&Labels::server("chat")).start();
        request.set_input_tokens(prompt as u64);
        self.queued.fetch_add(1, Ordering::AcqRel);
        let job = Job {
            prompt: (0..prompt as u32).collect(),
            max_tokens,
            request,
            events,
        };
        self.jobs.send(job).expect("engine runs");
        rx
    }

    fn stop(self) -> InMemorySink {
        drop(self.jobs);
        self.thread
            .join()
            .expect("the engine thread ends without a panic");
        self.memory
    }
}

#[test]
fn each_request_is_scheduled_gets_its_tokens_and_ends_with_its_usage() {
    let engine = start(2, 64);
    // Three requests, a batch of two: the third waits for a slot.
    let mut answers: Vec<_> = [(5, 4), (3, 6), (8, 2)]
        .into_iter()
        .map(|(p, m)| engine.send(p, m))
        .collect();
    for (rx, (prompt, max)) in answers.iter_mut().zip([(5, 4), (3, 6), (8, 2)]) {
        let mut tokens = 0;
        loop {
            match rx.blocking_recv().expect("the engine answers") {
                Event::Token(_) => tokens += 1,
                Event::Done {
                    prompt_tokens,
                    completion_tokens,
                    metrics,
                } => {
                    assert_eq!((prompt_tokens, completion_tokens), (prompt, max));
                    let metrics = metrics.expect("the per-request metrics");
                    assert!(metrics["queue_time_ms"].as_f64().is_some(), "{metrics}");
                    break;
                }
                Event::Failed(e) => panic!("{e}"),
            }
        }
        assert_eq!(tokens, max);
    }
    let queued = engine.queued.clone();
    let records = engine.stop().records();
    assert_eq!(
        queued.load(Ordering::Acquire),
        0,
        "every job left the queue"
    );
    assert_eq!(records.len(), 3);
    for r in &records {
        assert_eq!(r.outcome, Outcome::Success);
        assert_eq!(r.finish_reason, Some(FinishReason::Length));
        assert!(r.queue.is_some() && r.prefill.is_some(), "{r:?}");
    }
    let mut outputs: Vec<u64> = records.iter().map(|r| r.output_tokens).collect();
    outputs.sort_unstable();
    assert_eq!(outputs, [2, 4, 6]);
}

#[test]
fn a_client_that_hangs_up_is_cancelled_with_the_tokens_it_was_sent() {
    // 2,000 tokens asked: the engine is still generating (hundreds of milliseconds of steps
    // left) when the client drops its receiver after 3.
    let engine = start(4, 4096);
    let mut rx = engine.send(4, 2000);
    for _ in 0..3 {
        assert!(matches!(rx.blocking_recv(), Some(Event::Token(_))));
    }
    drop(rx); // the client went away
    // A second request runs to its end after it: the engine went on.
    let mut other = engine.send(2, 3);
    while let Some(event) = other.blocking_recv() {
        if matches!(event, Event::Done { .. }) {
            break;
        }
    }
    let records = engine.stop().records();
    let cancelled = records
        .iter()
        .find(|r| r.outcome == Outcome::Cancelled)
        .expect("the hang-up is recorded as cancelled");
    assert!(
        (3..2000).contains(&cancelled.output_tokens),
        "at least the 3 tokens read, fewer than asked: {}",
        cancelled.output_tokens
    );
    assert!(records.iter().any(|r| r.outcome == Outcome::Success));
}

#[test]
fn a_request_waits_until_its_kv_reservation_fits() {
    // 40 positions of budget: the first takes 10 + 20, the second (10 + 20) must wait for it.
    let engine = start(8, 40);
    let mut first = engine.send(10, 20);
    let mut second = engine.send(10, 20);
    for rx in [&mut first, &mut second] {
        while let Some(event) = rx.blocking_recv() {
            if matches!(event, Event::Done { .. }) {
                break;
            }
        }
    }
    let records = engine.stop().records();
    let (a, b) = (&records[0], &records[1]);
    let a_last = a.arrival + a.ttft.expect("first token") + a.decode.expect("decoded");
    let b_scheduled = b.arrival + b.queue.expect("scheduled");
    assert!(
        b_scheduled >= a_last,
        "the second left the queue only after the first's last token: {b_scheduled:?} < {a_last:?}"
    );
}
