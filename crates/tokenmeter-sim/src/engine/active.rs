//! One request inside the engine: waiting in the queue, then running in the batch.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokenmeter::Request;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use crate::config::Faults;
use crate::error::StreamError;
use crate::request::GenerateRequest;
use crate::stream::TokenResult;
use crate::token::{Token, word};

/// A submitted request on its way to the engine task.
pub(super) struct Job {
    pub(super) params: GenerateRequest,
    pub(super) request: Request,
    pub(super) tx: UnboundedSender<TokenResult>,
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
    /// The last token: the request succeeds.
    Last(Token),
    /// The planned error: the request fails.
    Failed(StreamError),
}

/// A request the engine holds, with its fault plan drawn at arrival.
pub(super) struct Active {
    params: GenerateRequest,
    request: Option<Request>,
    tx: UnboundedSender<TokenResult>,
    /// Tokens emitted so far.
    pub(super) emitted: u32,
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
    words: SmallRng,
    /// Set when the request ended with a token or an error still to deliver.
    ending: Option<Ending>,
}

impl Active {
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
            emitted: 0,
            prefilled: false,
            in_step: false,
            fail_at,
            stall_at,
            stalled_until: None,
            words,
            ending: None,
        }
    }

    pub(super) fn prompt_tokens(&self) -> u64 {
        u64::from(self.params.prompt_tokens)
    }

    /// KV-cache tokens reserved for the whole request.
    pub(super) fn kv_reserved(&self) -> u64 {
        self.params.kv_tokens()
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
            request.scheduled();
        }
    }

    /// Records a cancellation (the consumer went away).
    pub(super) fn cancel(&mut self) {
        if let Some(request) = self.request.take() {
            request.cancel();
        }
    }

    /// True when it is a decoding member of the batch that should decode in a step starting at
    /// `start`. Starts its stall if it is due.
    pub(super) fn decodes_at(&mut self, start: Instant, stall: std::time::Duration) -> bool {
        if !self.prefilled {
            return false;
        }
        if self.stall_at == Some(self.emitted) {
            self.stall_at = None;
            self.stalled_until = Some(start + stall);
        }
        match self.stalled_until {
            Some(until) if until > start => false,
            _ => {
                self.stalled_until = None;
                true
            }
        }
    }

    /// Emits the next token (or the planned error) at the end of a step. The measurement is
    /// taken before the token is sent, so the server's timestamps never trail the client's. A
    /// last token or an error is measured now and delivered by [`finish`](Self::finish).
    pub(super) fn emit(&mut self) -> Emitted {
        self.prefilled = true;
        if self.abandoned() {
            self.cancel();
            return Emitted::Ended;
        }
        let Some(request) = self.request.as_mut() else {
            return Emitted::Ended;
        };
        let index = self.emitted;
        if self.fail_at == Some(index) {
            self.ending = Some(Ending::Failed(StreamError::Injected {
                after_tokens: index,
            }));
            return Emitted::Ended;
        }
        let last = index + 1 >= self.params.generated();
        request.tokens(1);
        self.emitted += 1;
        let token = Token {
            index,
            text: word(&mut self.words),
            finish_reason: last.then_some(self.params.finish),
        };
        if last {
            request.set_finish_reason(self.params.finish);
            self.ending = Some(Ending::Last(token));
            return Emitted::Ended;
        }
        if self.tx.send(Ok(token)).is_err() {
            self.cancel();
            return Emitted::Ended;
        }
        Emitted::Token
    }

    /// Ends a request that left the batch: records its outcome and delivers its last token or
    /// its error. The engine calls it after publishing its state, so a consumer that sees its
    /// stream end sees an engine that no longer holds it.
    pub(super) fn finish(mut self) {
        match self.ending.take() {
            Some(Ending::Last(token)) => {
                if let Some(request) = self.request.take() {
                    request.succeed();
                }
                let _ = self.tx.send(Ok(token));
            }
            Some(Ending::Failed(error)) => {
                if let Some(request) = self.request.take() {
                    request.fail(tokenmeter::stream::HasErrorClass::error_class(&error));
                }
                let _ = self.tx.send(Err(error));
            }
            None => {}
        }
    }
}
