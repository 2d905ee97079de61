//! The engine thread: a blocking `std::thread` loop beside the tokio runtime. Each iteration
//! (one scheduler step):
//!
//! 1. takes the jobs the handlers sent (blocking only when it has nothing to do);
//! 2. drops the sequences whose client hung up (cancelled, their KV cache freed);
//! 3. admits what fits (each request marked `scheduled`) and prefills each admitted sequence
//!    alone (one prompt per forward pass: no chunked prefill, so a long prompt delays the running
//!    sequences' next token, as it does in an engine without chunking);
//! 4. runs one batched decode step for every running sequence;
//! 5. records each pass through [`EngineRecorder`] (kind, batch size, tokens, its duration),
//!    the KV-cache usage from the caches' real bytes, and the waiting requests.
//!
//! Each token is recorded on its request the moment the engine hands it to the handler, so the
//! server's TTFT and inter-token gaps are the engine's.

use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::Instant;

use tokenmeter::sink::{EngineRecorder, Step, StepKind, WaitingReason};
use tokenmeter::{ErrorClass, FinishReason};
use tokenmeter_openai::chunk::ServerMetrics;

use crate::job::{Event, Job};
use crate::model::Model;
use crate::scheduler::{Scheduler, Sequence};

/// The engine: the model, the scheduler and the recorder of its steps.
#[derive(Debug)]
pub struct Engine {
    model: Model,
    scheduler: Scheduler,
    recorder: Arc<EngineRecorder>,
    kv_budget_bytes: f64,
}

impl Engine {
    /// An engine running `model` with `scheduler`, recording to `recorder`; `kv_tokens` is
    /// the KV budget in positions (the denominator of the usage).
    pub fn new(
        model: Model,
        scheduler: Scheduler,
        recorder: Arc<EngineRecorder>,
        kv_tokens: usize,
    ) -> Self {
        let kv_budget_bytes = (kv_tokens * model.config().kv_bytes_per_token()) as f64;
        Self {
            model,
            scheduler,
            recorder,
            kv_budget_bytes,
        }
    }

    /// Runs until every sender of `jobs` is gone and the work in hand is done.
    pub fn run(mut self, jobs: Receiver<Job>) {
        loop {
            if self.scheduler.is_idle() {
                match jobs.recv() {
                    Ok(job) => self.scheduler.push(job),
                    Err(_) => return, // the server stopped
                }
            }
            // Then whatever else came, without waiting.
            while let Ok(job) = jobs.try_recv() {
                self.scheduler.push(job);
            }
            self.step();
        }
    }

    /// One scheduler iteration: hang-ups, admission and prefills, one decode step.
    fn step(&mut self) {
        self.scheduler.drop_hung_up();
        for seq in self.scheduler.admit(&self.model) {
            self.prefill(seq);
        }
        self.publish();
        if !self.scheduler.running.is_empty() {
            self.decode();
            self.publish();
        }
    }

    fn prefill(&mut self, mut seq: Sequence) {
        let started = Instant::now();
        let first = self.model.prefill(&seq.job.prompt, &mut seq.cache);
        let tokens = seq.job.prompt.len() as u32;
        self.recorder
            .record(&Step::new(StepKind::Prefill, 1, tokens, started.elapsed()));
        match first {
            Ok(token) => {
                if emit(&mut seq, token) {
                    self.scheduler.running.push(seq);
                } else {
                    self.scheduler.release(&seq);
                }
            }
            Err(e) => {
                self.scheduler.release(&seq);
                fail(seq, &e);
            }
        }
    }

    fn decode(&mut self) {
        let mut running = std::mem::take(&mut self.scheduler.running);
        let tokens: Vec<u32> = running.iter().map(|s| s.last).collect();
        let batch = tokens.len() as u32;
        let started = Instant::now();
        let next = {
            let mut caches: Vec<_> = running.iter_mut().map(|s| &mut s.cache).collect();
            self.model.decode(&tokens, &mut caches)
        };
        self.recorder.record(&Step::new(
            StepKind::Decode,
            batch,
            batch,
            started.elapsed(),
        ));
        match next {
            Ok(next) => {
                for (mut seq, token) in running.into_iter().zip(next) {
                    if emit(&mut seq, token) {
                        self.scheduler.running.push(seq);
                    } else {
                        self.scheduler.release(&seq);
                    }
                }
            }
            Err(e) => {
                for seq in running {
                    self.scheduler.release(&seq);
                    fail(seq, &e);
                }
            }
        }
    }

    /// The KV-cache usage (allocated bytes over the budget) and the waiting requests.
    fn publish(&self) {
        let usage = self.scheduler.kv_bytes() as f64 / self.kv_budget_bytes;
        self.recorder.set_kv_cache_usage(usage);
        self.recorder
            .set_waiting_by_reason(WaitingReason::Capacity, self.scheduler.waiting() as u64);
    }
}

/// Hands one token to the handler and records it on the request; ends the request when it
/// reached `max_tokens`. Returns true while the sequence goes on.
fn emit(seq: &mut Sequence, token: u32) -> bool {
    if seq.job.events.send(Event::Token(token)).is_err() {
        seq.job.request.cancel(); // the client went away: the tokens it was sent are counted
        return false;
    }
    seq.job.request.record_tokens(1);
    seq.emitted += 1;
    seq.last = token;
    if seq.emitted < seq.job.max_tokens {
        return true;
    }
    let request = &mut seq.job.request;
    request.set_finish_reason(FinishReason::Length);
    let metrics = ServerMetrics::of(request).map(|m| m.to_json());
    let _ = seq.job.events.send(Event::Done {
        prompt_tokens: seq.job.prompt.len(),
        completion_tokens: seq.emitted,
        metrics,
    });
    request.succeed();
    false
}

fn fail(mut seq: Sequence, error: &candle_core::Error) {
    seq.job.request.fail(ErrorClass::ServerError);
    let _ = seq.job.events.send(Event::Failed(error.to_string()));
}
