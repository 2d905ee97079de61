//! [`Choices`]: the `n` generations of one request, taken together as their tokens come.
//!
//! As in vLLM (whose engine runs `n` > 1 as `n` sequences), each choice is its own request in
//! the simulated engine: it takes a batch slot, and has its server-side record. A choice ends
//! at the engine's last token, or earlier at a stop sequence ([`StopMatcher`]), when it is
//! ended at once so that the engine frees its slot. Each choice's success is held until the
//! whole answer is handed over ([`Choices::delivered`]).

use std::borrow::Cow;
use std::task::{Context, Poll};

use futures_util::{Stream, StreamExt};
use tokenmeter::FinishReason;
use tokenmeter_sim::TokenStream;

use super::logprobs::TokenLogprobs;
use super::stop::{StopMatcher, Stops};

/// What the choices yield.
#[derive(Debug)]
pub(crate) enum Event {
    /// A token of one choice.
    Piece(Piece),
    /// A choice failed (an injected failure, or its client stalled too long): the message.
    Failed(String),
    /// The engine stopped before a choice's end.
    Vanished,
}

/// A token of one choice, as it is to be sent.
#[derive(Debug)]
pub(crate) struct Piece {
    /// The choice's index.
    pub(crate) index: u32,
    /// The text to send now: the token's, or with stop sequences what is no longer held back
    /// (possibly empty).
    pub(crate) text: Cow<'static, str>,
    /// Set on the choice's last piece.
    pub(crate) finish: Option<FinishReason>,
    /// The token's log probabilities, when asked for.
    pub(crate) logprobs: Option<TokenLogprobs>,
    /// The token's byte offset in the choice's generated text.
    pub(crate) offset: usize,
    /// A reasoning token: sent as `reasoning_content` (chat).
    pub(crate) reasoning: bool,
}

#[derive(Debug)]
struct Choice {
    tokens: TokenStream,
    stop: Option<StopMatcher>,
    /// Bytes generated so far.
    generated: usize,
    taken: u32,
    done: bool,
}

/// The choices of one request.
#[derive(Debug)]
pub(crate) struct Choices {
    choices: Vec<Choice>,
    /// Where the next poll starts, so that every choice gets its turn.
    next: usize,
    open: usize,
    logprobs: Option<u8>,
    /// Prompt tokens the engine's prefix cache had (the most any choice saw).
    cached: u32,
}

impl Choices {
    /// The choices of the engine's `streams` (at least one), with the request's stop
    /// sequences and logprobs; each success is held until [`Choices::delivered`].
    pub(crate) fn new(
        streams: Vec<TokenStream>,
        stop: Option<&Stops>,
        logprobs: Option<u8>,
    ) -> Self {
        let choices: Vec<Choice> = streams
            .into_iter()
            .map(|mut tokens| {
                tokens.hold_success();
                Choice {
                    tokens,
                    stop: stop.map(Stops::matcher),
                    generated: 0,
                    taken: 0,
                    done: false,
                }
            })
            .collect();
        Self {
            open: choices.len(),
            choices,
            next: 0,
            logprobs,
            cached: 0,
        }
    }

    /// Prompt tokens the engine's prefix cache had: `usage.prompt_tokens_details.cached_tokens`.
    pub(crate) fn cached_tokens(&self) -> u32 {
        self.cached
    }

    /// The server's `metrics` object of the request (its first choice's timings,
    /// `request_metrics.rs`); `None` before its first token.
    pub(crate) fn server_metrics(&self) -> Option<serde_json::Value> {
        let tokens = &self.choices.first()?.tokens;
        tokens.with_request(super::request_metrics::of).flatten()
    }

    /// How many choices there are.
    pub(crate) fn len(&self) -> usize {
        self.choices.len()
    }

    /// Waits until any choice has its first item, without taking it (as vLLM answers once the
    /// first output of any child request comes): never for every choice, since a choice still
    /// queued would hold the answer of those already generating. A failure as that first item
    /// is taken (so recorded) and returned.
    pub(crate) async fn first(&mut self) -> Result<(), Event> {
        if self.choices.is_empty() {
            return Err(Event::Vanished);
        }
        let peeks = self.choices.iter_mut().map(|choice| {
            Box::pin(async move { matches!(choice.tokens.peek().await, Some(Ok(_))) })
        });
        let (token, at, _) = futures_util::future::select_all(peeks).await;
        if token {
            return Ok(());
        }
        Err(match self.choices[at].tokens.next().await {
            Some(Err(error)) => Event::Failed(error.to_string()),
            _ => Event::Vanished,
        })
    }

    /// The tokens taken from the engine, over every choice (`usage.completion_tokens`).
    pub(crate) fn completion_tokens(&self) -> u32 {
        self.choices
            .iter()
            .fold(0u32, |sum, c| sum.saturating_add(c.taken))
    }

    /// Records the success of every choice that ended (its answer was handed over).
    pub(crate) fn delivered(&mut self) {
        for choice in &mut self.choices {
            choice.tokens.delivered();
        }
    }

    /// The next event of any choice; `None` once every choice ended.
    pub(crate) fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        if self.open == 0 {
            return Poll::Ready(None);
        }
        let count = self.choices.len();
        for turn in 0..count {
            let at = (self.next + turn) % count;
            let choice = &mut self.choices[at];
            if choice.done {
                continue;
            }
            let item = match choice.tokens.poll_next_unpin(cx) {
                Poll::Pending => continue,
                Poll::Ready(item) => item,
            };
            self.next = at + 1;
            let event = match item {
                Some(Ok(token)) => Event::Piece(self.piece(at, token)),
                Some(Err(error)) => Event::Failed(error.to_string()),
                None => Event::Vanished,
            };
            if !matches!(event, Event::Piece(_)) {
                self.choices[at].done = true;
                self.open -= 1;
            }
            return Poll::Ready(Some(event));
        }
        Poll::Pending
    }

    /// The piece of `token`, taken by choice `at`.
    fn piece(&mut self, at: usize, token: tokenmeter_sim::Token) -> Piece {
        let logprobs = self.logprobs;
        let choice = &mut self.choices[at];
        let index = at as u32;
        choice.taken += 1;
        self.cached = self.cached.max(token.cached_prompt_tokens);
        let offset = choice.generated;
        choice.generated += token.text.len();
        let last = token.finish_reason.is_some();
        let (text, finish) = match &mut choice.stop {
            None => (Cow::Borrowed(token.text), token.finish_reason),
            Some(matcher) => {
                let (text, stopped) = matcher.push(token.text, last);
                if stopped {
                    choice.tokens.finish_early(FinishReason::Stop);
                    (Cow::Owned(text), Some(FinishReason::Stop))
                } else {
                    (Cow::Owned(text), token.finish_reason)
                }
            }
        };
        if finish.is_some() {
            choice.done = true;
            self.open -= 1;
        }
        Piece {
            index,
            text,
            finish,
            logprobs: logprobs.map(|k| TokenLogprobs::simulate(token.text, token.index, index, k)),
            offset,
            reasoning: token.reasoning,
        }
    }
}

impl Stream for Choices {
    type Item = Event;

    fn poll_next(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_event(cx)
    }
}
