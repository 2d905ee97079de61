//! The scheduler: a FIFO waiting queue, admission into the running batch, and the hang-ups.
//!
//! Admission reserves a sequence's whole KV cache up front (prompt + `max_tokens` positions):
//! a request is admitted, in arrival order, while the batch has fewer than `max_batch`
//! sequences and the reservation fits what is left of the `--kv-tokens` budget. So a running
//! sequence can never run out of cache and is never preempted (the preemption counter stays 0,
//! truthfully). The head of the queue waits until it fits: no request overtakes another.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::job::Job;
use crate::kv_cache::SeqCache;
use crate::model::Model;

/// A running sequence: its job, its cache, the latest token and how many were emitted.
#[derive(Debug)]
pub struct Sequence {
    /// The job (and so the request's measurement).
    pub job: Job,
    /// Its KV cache.
    pub cache: SeqCache,
    /// The latest token (the next decode step's input).
    pub last: u32,
    /// Output tokens emitted so far.
    pub emitted: usize,
}

impl Sequence {
    /// KV positions reserved: prompt + `max_tokens`.
    pub fn reserved(&self) -> usize {
        reservation(&self.job)
    }
}

fn reservation(job: &Job) -> usize {
    job.prompt.len() + job.max_tokens
}

/// The waiting queue and the running batch.
#[derive(Debug)]
pub struct Scheduler {
    waiting: VecDeque<Job>,
    /// The running sequences (the batch).
    pub running: Vec<Sequence>,
    max_batch: usize,
    kv_tokens: usize,
    reserved: usize,
    /// Requests queued: the handlers' admission counter (they refuse past the queue limit).
    queued: Arc<AtomicUsize>,
}

impl Scheduler {
    /// A scheduler of at most `max_batch` running sequences within `kv_tokens` KV positions;
    /// `queued` is decremented as jobs leave the queue.
    pub fn new(max_batch: usize, kv_tokens: usize, queued: Arc<AtomicUsize>) -> Self {
        Self {
            waiting: VecDeque::new(),
            running: Vec::new(),
            max_batch: max_batch.max(1),
            kv_tokens,
            reserved: 0,
            queued,
        }
    }

    /// Adds a job at the back of the queue.
    pub fn push(&mut self, job: Job) {
        self.waiting.push_back(job);
    }

    /// True when nothing waits and nothing runs.
    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.running.is_empty()
    }

    /// Requests waiting.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Ends every request whose client went away (its stream's receiver was dropped) as
    /// cancelled, with the tokens it was sent, and frees its KV cache: called at each step
    /// boundary, so a hang-up frees its cache before the next step. Returns how many.
    pub fn drop_hung_up(&mut self) -> usize {
        let mut ended = 0;
        let queued = &self.queued;
        self.waiting.retain_mut(|job| {
            let gone = job.events.is_closed();
            if gone {
                queued.fetch_sub(1, Ordering::AcqRel);
                job.request.cancel();
                ended += 1;
            }
            !gone
        });
        let mut freed = 0;
        self.running.retain_mut(|seq| {
            let gone = seq.job.events.is_closed();
            if gone {
                freed += seq.reserved();
                seq.job.request.cancel(); // with the tokens it was sent
                ended += 1;
            }
            !gone // dropping the sequence frees its cache
        });
        self.reserved -= freed;
        ended
    }

    /// Takes the jobs that may start now, in arrival order, marks each `scheduled` (it left the
    /// queue) and reserves its KV cache.
    pub fn admit(&mut self, model: &Model) -> Vec<Sequence> {
        let mut admitted = Vec::new();
        while self.running.len() + admitted.len() < self.max_batch {
            let Some(job) = self.waiting.front() else {
                break;
            };
            let need = reservation(job);
            if self.reserved + need > self.kv_tokens {
                break; // the head waits for room; nothing overtakes it
            }
            let mut job = self.waiting.pop_front().expect("front exists");
            self.queued.fetch_sub(1, Ordering::AcqRel);
            self.reserved += need;
            job.request.mark_scheduled();
            admitted.push(Sequence {
                cache: model.new_cache(need),
                job,
                last: 0,
                emitted: 0,
            });
        }
        admitted
    }

    /// Removes a finished or failed sequence's reservation.
    pub fn release(&mut self, seq: &Sequence) {
        self.reserved -= seq.reserved();
    }

    /// KV-cache bytes allocated by the running sequences.
    pub fn kv_bytes(&self) -> usize {
        self.running.iter().map(|s| s.cache.bytes()).sum()
    }
}
