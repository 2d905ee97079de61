//! One request inside the engine: waiting in the queue, then running in the batch.
//!
//! The engine holds the request's measurement while it waits and is scheduled (so the
//! `waiting` and `running` gauges follow the engine), and hands it to the consumer's
//! [`TokenStream`](crate::TokenStream) with the first item: tokens and the outcome are then
//! recorded as the consumer takes them.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokenmeter::Request;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use crate::config::Faults;
use crate::error::StreamError;
use crate::request::GenerateRequest;
use crate::stream::{Delivery, Link, TokenResult};
use crate::token::{Token, word};

/// A submitted request on its way to the engine task.
pub(super) struct Job {
    pub(super) params: GenerateRequest,
    pub(super) request: Box<Request>,
    pub(super) tx: UnboundedSender<Delivery>,
    pub(super) link: Arc<Link>,
}

/// What happened when a request tried to emit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Emitted {
    /// A token went out; more will follow.
    Token,
    /// The request ended (its last token, an injected error, or its consumer went away). A last
    /// token or an error is held until [`Active::finish`].
    Ended,
}

/// What a request that left the batch still has to deliver, after the engine has published
/// the state without it.
enum Ending {
    /// The last token.
    Last(Token),
    /// The planned error, or the stall limit's cut.
    Failed(StreamError),
}

/// A request the engine holds, with its fault plan drawn at arrival.
pub(super) struct Active {
    params: GenerateRequest,
    /// The measurement, until it is handed to the consumer with the first item.
    request: Option<Box<Request>>,
    tx: UnboundedSender<Delivery>,
    link: Arc<Link>,
    /// Tokens emitted so far.
    pub(super) emitted: u32,
    /// Items put in the output queue so far.
    sent: u32,
    /// Prefilled: it has taken part in a step.
    pub(super) prefilled: bool,
    /// Takes part in the step being run.
    pub(super) in_step: bool,
    /// Fail instead of emitting this token index.
    fail_at: Option<u32>,
    /// Pause before emitting this token index.
    stall_at: Option<u32>,
    /// Out of the decode batch until then.
    pub(super) stalled_until: Option<Instant>,
    /// Out of the decode batch since then, because its output queue is full.
    blocked_since: Option<Instant>,
    words: SmallRng,
    /// Set when the request ended with a token or an error still to deliver.
    ending: Option<Ending>,
    /// Prompt tokens the prefix cache had when it was scheduled (prefill skipped).
    cached: u32,
    /// Preempted at least once: its next prefill recomputes the prompt and the output so far.
    resumed: bool,
}

impl Active {
    /// The LoRA adapter the request runs on, if any.
    pub(super) fn adapter(&self) -> Option<&str> {
        self.params.adapter.as_deref()
    }

    /// Draws the request's fault plan and text seed from the engine's generator.
    pub(super) fn new(job: Job, faults: &Faults, rng: &mut SmallRng) -> Self {
        let generated = job.params.generated();
        let fail_at = rng
            .random_bool(faults.error_rate)
            .then(|| rng.random_range(0..generated));
        let stall_at = (rng.random_bool(faults.stall_rate) && generated > 1)
            .then(|| rng.random_range(1..generated));
        let words = SmallRng::seed_from_u64(rng.random());
        Self {
            params: job.params,
            request: Some(job.request),
            tx: job.tx,
            link: job.link,
            emitted: 0,
            sent: 0,
            prefilled: false,
            in_step: false,
            fail_at,
            stall_at,
            stalled_until: None,
            blocked_since: None,
            words,
            ending: None,
            cached: 0,
            resumed: false,
        }
    }

    pub(super) fn prompt_tokens(&self) -> u64 {
        u64::from(self.params.prompt_tokens)
    }

    /// KV-cache tokens reserved for the whole request.
    /// The prompt's block hashes, for the prefix cache (none once preempted: the recompute
    /// is not looked up again).
    pub(super) fn prompt_blocks(&self) -> &[u64] {
        if self.resumed {
            &[]
        } else {
            &self.params.prompt_blocks
        }
    }

    /// Records that the prefix cache had `tokens` of its prompt.
    pub(super) fn set_cached(&mut self, tokens: u32) {
        self.cached = tokens;
        if let Some(request) = self.request.as_mut() {
            request.set_cached_input_tokens(u64::from(tokens));
        }
    }

    /// Tokens its next prefill computes: the prompt less what the prefix cache had, or, after a
    /// preemption, the prompt and every token generated so far.
    pub(super) fn prefill_tokens(&self) -> u64 {
        if self.resumed {
            self.prompt_tokens() + u64::from(self.emitted)
        } else {
            self.prompt_tokens() - u64::from(self.cached)
        }
    }

    /// KV-cache tokens it holds while running: its prompt and whole output when reserved up
    /// front, or (`on_demand`) what it has generated so far plus `ahead` for the next step.
    pub(super) fn kv_held(&self, on_demand: bool, ahead: u64) -> u64 {
        if on_demand {
            (self.prompt_tokens() + u64::from(self.emitted) + ahead).min(self.params.kv_tokens())
        } else {
            self.params.kv_tokens()
        }
    }

    /// Preempted: its KV cache is freed and it waits to be scheduled again.
    pub(super) fn preempt(&mut self) {
        self.prefilled = false;
        self.in_step = false;
        self.resumed = true;
        self.stalled_until = None;
        self.blocked_since = None;
    }

    /// KV-cache tokens in use now.
    pub(super) fn kv_used(&self) -> u64 {
        self.prompt_tokens() + u64::from(self.emitted)
    }

    /// True once the consumer dropped the stream.
    pub(super) fn abandoned(&self) -> bool {
        self.tx.is_closed()
    }

    /// Marks the request as admitted to the batch now.
    pub(super) fn schedule(&mut self) {
        if let Some(request) = self.request.as_mut() {
            request.mark_scheduled();
        }
    }

    /// Records a cancellation (the consumer went away) if the engine still holds the
    /// measurement; once handed over, the consumer's stream recorded it.
    pub(super) fn cancel(&mut self) {
        if let Some(mut request) = self.request.take() {
            request.cancel();
        }
    }

    /// True when it is a decoding member of the batch that should decode in a step starting at
    /// `start`. Starts its stall if it is due; notes when its output queue is full.
    pub(super) fn decodes_at(&mut self, start: Instant, stall: Duration) -> bool {
        if !self.prefilled {
            return false;
        }
        if self.stall_at == Some(self.emitted) {
            self.stall_at = None;
            self.stalled_until = Some(start + stall);
        }
        match self.stalled_until {
            Some(until) if until > start => return false,
            _ => self.stalled_until = None,
        }
        if self.link.full(self.sent) {
            self.blocked_since.get_or_insert(start);
            return false;
        }
        self.blocked_since = None;
        true
    }

    /// When the stall limit cuts it, if its output queue stays full.
    pub(super) fn cut_at(&self, limit: Duration) -> Option<Instant> {
        self.blocked_since.map(|since| since + limit)
    }

    /// True when its output queue has been full for `limit` at `now`. Sets the cut up: the
    /// engine then ends it with [`finish`](Self::finish).
    pub(super) fn cut_due(&mut self, now: Instant, limit: Duration) -> bool {
        let due = self.cut_at(limit).is_some_and(|at| at <= now) && self.link.full(self.sent);
        if due {
            self.ending = Some(Ending::Failed(StreamError::Stalled { limit }));
        }
        due
    }

    /// Puts an item in the output queue, handing over the measurement with the first. False
    /// when the consumer is gone (the item is dropped, the measurement recorded cancelled).
    fn send(&mut self, item: TokenResult) -> bool {
        if let Some(request) = self.request.take() {
            self.link.hand_over(request);
        }
        self.sent = self.sent.wrapping_add(1);
        let sent = self.tx.send(item).is_ok();
        if !sent && let Some(mut request) = self.link.take() {
            request.cancel();
        }
        sent
    }

    /// Emits the next token (or the planned error) at the end of a step. A last token or an
    /// error is delivered by [`finish`](Self::finish).
    pub(super) fn emit(&mut self) -> Emitted {
        self.prefilled = true;
        if self.abandoned() {
            self.cancel();
            return Emitted::Ended;
        }
        let index = self.emitted;
        if self.fail_at == Some(index) {
            self.ending = Some(Ending::Failed(StreamError::Injected {
                after_tokens: index,
            }));
            return Emitted::Ended;
        }
        let last = index + 1 >= self.params.generated();
        self.emitted += 1;
        let token = Token {
            index,
            text: word(&mut self.words),
            finish_reason: last.then_some(self.params.finish),
            reasoning: index < self.params.reasoning_tokens,
            cached_prompt_tokens: self.cached,
        };
        if last {
            self.ending = Some(Ending::Last(token));
            return Emitted::Ended;
        }
        if !self.send(Ok(token)) {
            return Emitted::Ended;
        }
        Emitted::Token
    }

    /// Ends a request that left the batch: delivers its last token or its error, whose taking
    /// records the outcome. The engine calls it after publishing its state, so a consumer that
    /// sees its stream end sees an engine that no longer holds it.
    /// Emits up to `tokens` tokens (speculative decoding accepts several in one step),
    /// stopping at the request's end.
    pub(super) fn emit_tokens(&mut self, tokens: u32) -> Emitted {
        for _ in 1..tokens {
            if self.emit() == Emitted::Ended {
                return Emitted::Ended;
            }
        }
        self.emit()
    }

    /// Output tokens still to generate.
    pub(super) fn remaining(&self) -> u32 {
        self.params.generated().saturating_sub(self.emitted)
    }

    pub(super) fn finish(mut self) {
        match self.ending.take() {
            Some(Ending::Last(token)) => {
                self.send(Ok(token));
            }
            Some(Ending::Failed(StreamError::Stalled { limit })) => {
                // Ended now, whether or not the consumer ever takes another item; the error
                // also wakes a consumer waiting on the queue.
                self.link.cut(limit);
                self.send(Err(StreamError::Stalled { limit }));
            }
            Some(Ending::Failed(error)) => {
                self.send(Err(error));
            }
            None => {}
        }
    }
}
