//! The step loop: every iteration is one engine step. All scheduling happens here.
//!
//! One step:
//! 1. take the requests that arrived, drop the ones whose consumer went away, cut the ones
//!    whose output queue stayed full for the stall limit;
//! 2. admit waiting requests in arrival order while the batch has a slot and the KV cache can
//!    hold the request's prompt and whole output (first come, first served: the head of the
//!    queue blocks the rest);
//! 3. run the step: prefill the newly admitted requests and one decode step for the running
//!    batch (less the stalled requests and those whose output queue is full: their consumer
//!    has not taken what they produced), for the time the [`CostModel`](crate::CostModel)
//!    gives;
//! 4. at the step's end, every request that took part emits one token (its first, for the newly
//!    admitted), or its planned error; finished requests leave the batch and free their KV cache;
//! 5. the engine publishes its state, then the finished requests end: their last token or error
//!    goes out, and the consumer's stream records their outcome when it takes it, so a consumer
//!    that sees its stream end, or a sink that sees the request's end, sees an engine that no
//!    longer holds it.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Instant, sleep_until};

use super::active::{Active, Emitted, Job};
use super::{Shared, StepHook};
use crate::config::SimConfig;
use crate::prefix::{BLOCK_TOKENS, PrefixCache};
use crate::snapshot::{EngineTotals, StepStats};
use tokenmeter::sink::{EngineRecorder, Step, WaitingReason};

/// How late a wake-up may be for the next step to still start at the previous step's planned
/// end (so timer rounding does not accumulate); later than this, the engine was idle or
/// starved and the step starts now.
const SLACK: Duration = Duration::from_millis(2);

pub(super) struct Scheduler {
    config: SimConfig,
    shared: Arc<Shared>,
    rx: UnboundedReceiver<Job>,
    open: bool,
    rng: SmallRng,
    waiting: VecDeque<Active>,
    running: Vec<Active>,
    /// Requests that left the batch in this step, to end after the state is published.
    ended: Vec<Active>,
    prefix: PrefixCache,
    totals: EngineTotals,
    steps: u64,
    origin: Instant,
    on_step: Option<StepHook>,
    /// The meter's engine recorder: steps and KV-cache usage to every sink that wants them
    /// (the batch-size analysis, exporters, the SLO monitor).
    step_sinks: Arc<EngineRecorder>,
}

/// What the loop does next.
enum Next {
    /// Run a step starting at this instant.
    Step(Instant),
    /// Nothing can run before this instant (every running request is stalled), or before a
    /// new arrival when `None`.
    Wait(Option<Instant>),
    /// No work and no more arrivals: stop.
    Stop,
}

impl Scheduler {
    pub(super) fn new(
        config: SimConfig,
        shared: Arc<Shared>,
        rx: UnboundedReceiver<Job>,
        on_step: Option<StepHook>,
        steps: Arc<EngineRecorder>,
    ) -> Self {
        let rng = SmallRng::seed_from_u64(config.seed);
        let prefix = PrefixCache::new(config.prefix_cache_blocks);
        Self {
            config,
            shared,
            rx,
            open: true,
            rng,
            waiting: VecDeque::new(),
            running: Vec::new(),
            ended: Vec::new(),
            prefix,
            totals: EngineTotals::default(),
            steps: 0,
            origin: Instant::now(),
            on_step,
            step_sinks: steps,
        }
    }

    pub(super) async fn run(mut self) {
        let mut planned: Option<Instant> = None;
        loop {
            self.intake();
            self.reap();
            match self.next(planned) {
                Next::Stop => break,
                Next::Wait(until) => {
                    planned = None;
                    self.publish(None);
                    self.wait(until).await;
                }
                Next::Step(start) => planned = Some(self.step(start).await),
            }
        }
        self.publish(None);
    }

    /// Moves every request that arrived into the queue, drawing its fault plan.
    fn intake(&mut self) {
        while self.open {
            match self.rx.try_recv() {
                Ok(job) => self.accept(job),
                Err(tokio::sync::mpsc::error::TryRecvError::Empty) => break,
                Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => self.open = false,
            }
        }
    }

    fn accept(&mut self, job: Job) {
        let active = Active::new(job, &self.config.faults, &mut self.rng);
        self.waiting.push_back(active);
    }

    /// Cancels the requests whose consumer dropped the stream, waiting or running, and cuts
    /// the running ones whose output queue stayed full for the stall limit.
    fn reap(&mut self) {
        let before = self.waiting.len();
        self.waiting.retain_mut(|active| {
            let gone = active.abandoned();
            if gone {
                active.cancel();
            }
            !gone
        });
        let left = before - self.waiting.len();
        self.shared.queued.fetch_sub(left, Ordering::Relaxed);
        self.running.retain_mut(|active| {
            let gone = active.abandoned();
            if gone {
                active.cancel();
            }
            !gone
        });
        let (now, limit) = (Instant::now(), self.config.stall_limit);
        let cut = self
            .running
            .extract_if(.., |active| active.cut_due(now, limit));
        self.ended.extend(cut);
        if !self.ended.is_empty() {
            // As for a finished request: the state without them, then their end.
            self.publish(None);
            for active in self.ended.drain(..) {
                active.finish();
            }
        }
    }

    fn next(&mut self, planned: Option<Instant>) -> Next {
        if self.running.is_empty() && self.waiting.is_empty() {
            return if self.open {
                Next::Wait(None)
            } else {
                Next::Stop
            };
        }
        let now = Instant::now();
        let start = match planned {
            Some(planned) if now.saturating_duration_since(planned) <= SLACK => planned.min(now),
            _ => now,
        };
        let stall = self.config.faults.stall;
        let decoding = self.running.iter_mut().any(|a| a.decodes_at(start, stall));
        if decoding || self.admissible() {
            return Next::Step(start);
        }
        // Every running request is stalled or its output queue is full, and the queue's head
        // cannot be admitted: wait for the first stall to end or cut to fall due (or a
        // consumer to take a token, or an arrival).
        let limit = self.config.stall_limit;
        let until = self
            .running
            .iter()
            .flat_map(|a| [a.stalled_until, a.cut_at(limit)])
            .flatten()
            .min();
        Next::Wait(until)
    }

    /// Whether the first waiting request whose LoRA adapter can run now fits the batch and
    /// the KV cache (the ones before it are deferred for their adapter).
    fn admissible(&self) -> bool {
        let mut fitting = self.waiting.iter().filter(|a| self.adapter_fits(a));
        fitting.next().is_some_and(|head| {
            let need = head.kv_held(self.config.preemption, self.ahead());
            self.running.len() < self.config.max_batch
                && self.kv_held() + need <= self.config.kv_capacity_tokens
        })
    }

    /// Tokens a request may add in one step: one, or one plus the draft when speculating.
    fn ahead(&self) -> u64 {
        1 + self.config.speculation.map_or(0, |s| u64::from(s.tokens))
    }

    /// KV-cache tokens the running requests hold.
    fn kv_held(&self) -> u64 {
        let ahead = self.ahead();
        self.running
            .iter()
            .map(|a| a.kv_held(self.config.preemption, ahead))
            .sum()
    }

    /// With on-demand allocation, preempts the most recently scheduled requests until the
    /// running ones can all take their next step; each goes back to the head of the queue.
    fn preempt(&mut self) {
        if !self.config.preemption {
            return;
        }
        while self.running.len() > 1 && self.kv_held() > self.config.kv_capacity_tokens {
            let Some(mut active) = self.running.pop() else {
                break;
            };
            active.preempt();
            self.waiting.push_front(active);
            self.shared.queued.fetch_add(1, Ordering::Relaxed);
            self.totals.preemptions += 1;
            self.step_sinks.add_preemptions(1);
        }
    }

    /// Looks a newly scheduled request's prompt up in the prefix cache and records the hit.
    fn look_up_prefix(&mut self, active: &mut Active) {
        if self.config.prefix_cache_blocks == 0 || active.prompt_blocks().is_empty() {
            return;
        }
        let blocks = self.prefix.lookup(active.prompt_blocks());
        let prompt = u32::try_from(active.prompt_tokens()).unwrap_or(u32::MAX);
        // A prompt cached whole still computes its last token, as vLLM does.
        let hit = (blocks * BLOCK_TOKENS).min(prompt.saturating_sub(1));
        active.set_cached(hit);
        self.totals.prefix_queries += u64::from(prompt);
        self.totals.prefix_hits += u64::from(hit);
        self.step_sinks
            .add_prefix_cache(u64::from(prompt), u64::from(hit));
    }

    /// Sleeps until `until`, the next arrival, or a consumer's wake-up (it took a token from a
    /// full output queue, or dropped its stream), whichever comes first.
    async fn wait(&mut self, until: Option<Instant>) {
        let wake = Arc::clone(&self.shared.wake);
        let arrival = async {
            if self.open {
                self.rx.recv().await
            } else {
                std::future::pending().await
            }
        };
        let timer = async {
            match until {
                Some(until) => sleep_until(until).await,
                None => std::future::pending().await,
            }
        };
        let job = tokio::select! {
            job = arrival => Some(job),
            () = timer => None,
            () = wake.notified() => None,
        };
        match job {
            Some(Some(job)) => self.accept(job),
            Some(None) => self.open = false,
            None => {}
        }
    }

    /// Runs one step starting at `start`; returns its planned end.
    async fn step(&mut self, start: Instant) -> Instant {
        self.preempt();
        let first_new = self.running.len();
        let admitted = self.admit();
        let stall = self.config.faults.stall;
        let mut decode_requests = 0;
        for active in &mut self.running[..first_new] {
            active.in_step = active.decodes_at(start, stall);
            decode_requests += usize::from(active.in_step);
        }
        let new = &mut self.running[first_new..];
        new.iter_mut().for_each(|active| active.in_step = true);
        let prefill_tokens: u64 = new.iter().map(Active::prefill_tokens).sum();
        let duration = self.config.cost.step(prefill_tokens, decode_requests);
        let end = start + duration;
        self.publish(None);
        sleep_until(end).await;
        let emitted = self.emit();
        let stats = StepStats {
            index: self.steps,
            started: start.saturating_duration_since(self.origin),
            duration,
            prefill_requests: admitted,
            prefill_tokens,
            decode_requests,
            emitted,
            waiting: self.waiting.len(),
        };
        self.steps += 1;
        self.steps_sink(&stats);
        if let Some(hook) = &self.on_step {
            hook(&stats);
        }
        self.publish(Some(stats));
        for active in self.ended.drain(..) {
            active.finish();
        }
        end
    }

    /// Tells the meter's sinks what the step did.
    fn steps_sink(&self, stats: &StepStats) {
        let kind = stats.kind();
        let batch = stats.decode_requests + stats.prefill_requests;
        let tokens = stats.prefill_tokens + stats.decode_requests as u64;
        self.step_sinks.record(&Step::new(
            kind,
            u32::try_from(batch).unwrap_or(u32::MAX),
            u32::try_from(tokens).unwrap_or(u32::MAX),
            stats.duration,
        ));
    }

    /// Admits waiting requests while the batch and the KV cache allow; returns how many. They
    /// are appended to the running batch.
    fn admit(&mut self) -> usize {
        let mut admitted = 0;
        // requests whose LoRA adapter cannot be loaded now keep their place in the queue
        let mut deferred = Vec::new();
        while self.admissible() {
            let Some(mut active) = self.waiting.pop_front() else {
                break;
            };
            if !self.adapter_fits(&active) {
                deferred.push(active);
                continue;
            }
            self.shared.queued.fetch_sub(1, Ordering::Relaxed);
            active.schedule();
            self.look_up_prefix(&mut active);
            self.running.push(active);
            admitted += 1;
        }
        while let Some(active) = deferred.pop() {
            self.waiting.push_front(active);
        }
        admitted
    }

    /// Whether `active`'s LoRA adapter (if any) can run now: it already runs, or fewer than
    /// `max_loras` adapters do (vLLM defers a request whose adapter would exceed the budget).
    fn adapter_fits(&self, active: &Active) -> bool {
        let Some(adapter) = active.adapter() else {
            return true;
        };
        let max = self.config.max_loras as usize;
        if max == 0 {
            return true;
        }
        let mut running: Vec<&str> = self.running.iter().filter_map(Active::adapter).collect();
        running.sort_unstable();
        running.dedup();
        running.contains(&adapter) || running.len() < max
    }

    /// Every request that took part in the step emits; finished ones leave the batch for
    /// `ended` and free their KV cache.
    fn emit(&mut self) -> usize {
        let mut emitted = 0;
        let speculation = self.config.speculation;
        let (rng, totals, sinks) = (&mut self.rng, &mut self.totals, &self.step_sinks);
        let leaving = self.running.extract_if(.., |active| {
            if !std::mem::take(&mut active.in_step) {
                return false;
            }
            emitted += 1;
            // a decode step (not the prefill) may accept draft tokens besides its own
            let tokens = match speculation {
                Some(spec) if active.prefilled && active.remaining() > 1 => {
                    let mut accepted = 0;
                    while accepted < spec.tokens && rng.random_bool(spec.acceptance) {
                        accepted += 1;
                    }
                    totals.drafts += 1;
                    totals.draft_tokens += u64::from(spec.tokens);
                    totals.accepted_tokens += u64::from(accepted);
                    sinks.add_speculation(1, u64::from(spec.tokens), u64::from(accepted));
                    1 + accepted
                }
                _ => 1,
            };
            active.emit_tokens(tokens) == Emitted::Ended
        });
        self.ended.extend(leaving);
        emitted
    }

    /// Publishes the engine's state for [`Engine::snapshot`](super::Engine::snapshot).
    fn publish(&self, last_step: Option<StepStats>) {
        let mut snapshot = self
            .shared
            .snapshot
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        snapshot.running = self.running.len();
        snapshot.kv_used_tokens = self.running.iter().map(Active::kv_used).sum();
        snapshot.kv_reserved_tokens = self.kv_held();
        snapshot.totals = self.totals;
        snapshot.steps = self.steps;
        if last_step.is_some() {
            snapshot.last_step = last_step;
        }
        let kv_usage = snapshot.kv_usage();
        drop(snapshot);
        self.step_sinks.set_kv_cache_usage(kv_usage);
        // a request waits for its LoRA adapter (deferred, as vLLM counts it) or for room in
        // the batch or the KV cache (capacity)
        let deferred = self
            .waiting
            .iter()
            .filter(|active| !self.adapter_fits(active))
            .count() as u64;
        let waiting = self.waiting.len() as u64;
        self.step_sinks
            .set_waiting_by_reason(WaitingReason::Capacity, waiting - deferred);
        self.step_sinks
            .set_waiting_by_reason(WaitingReason::Deferred, deferred);
        if self.config.max_loras > 0 {
            self.step_sinks.set_lora_adapters(
                self.config.max_loras,
                self.running.iter().filter_map(Active::adapter),
                self.waiting.iter().filter_map(Active::adapter),
            );
        }
    }
}
