//! The response bodies of a generation, which account for what they hand to hyper: [`SseBody`]
//! (a stream rendered as OpenAI's SSE frames) and [`WholeBody`] (one JSON answer).
//!
//! A request's tokens are counted as the body takes them from its engine streams
//! ([`Choices`]), in the
//! poll that hands their frame to hyper, and it succeeds only once its end (`[DONE]`, or the
//! whole JSON) is handed over. When hyper drops a body (the client went away, or the server
//! is shutting down), the token stream is dropped with it: the request is cancelled with the
//! tokens written, and the engine frees its batch slot. hyper polls a body only when it can
//! buffer more (at most 16 buffers), so a client that stops reading stops the body, whose
//! bounded output queue in the engine then stalls its request (and the engine's stall limit
//! cuts it).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;
use http_body::{Frame, SizeHint};

use super::budget::AnswerHold;
use super::choices::{Choices, Event, Piece};
use super::chunks::{DONE, Frames, error_event};

/// The body of a streaming response.
pub(crate) struct SseBody {
    choices: Choices,
    frames: Frames,
    prompt: u32,
    pending: VecDeque<Bytes>,
    done: bool,
}

impl SseBody {
    /// The body of a stream whose choices each have a first token (peeked, not taken): the
    /// role frames (chat), then the tokens as hyper asks for them.
    pub(crate) fn new(choices: Choices, frames: Frames, prompt: u32) -> Self {
        let mut pending = VecDeque::with_capacity(4);
        for index in 0..choices.len() {
            pending.extend(frames.role(index as u32));
        }
        Self {
            choices,
            pending,
            done: false,
            prompt,
            frames,
        }
    }

    fn push(&mut self, piece: Piece) {
        let logprobs = piece
            .logprobs
            .as_ref()
            .map(|lp| lp.chunk_json(self.frames.is_chat(), piece.offset));
        // With stop sequences a token may free no text yet: then it has no chunk of its own,
        // unless its logprobs are to be sent or it is the last (its chunk carries the finish
        // reason, as vLLM's last chunk does).
        if !piece.text.is_empty() || logprobs.is_some() {
            let frame = self.frames.token(
                piece.index,
                &piece.text,
                logprobs.as_deref(),
                piece.reasoning,
                piece.finish,
            );
            self.pending.push_back(frame);
        } else if let Some(reason) = piece.finish {
            self.pending
                .push_back(self.frames.finish(piece.index, reason));
        }
    }

    fn end(&mut self) {
        self.pending.push_back(Bytes::from_static(DONE));
        self.done = true;
    }
}

impl Stream for SseBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                if self.done && self.pending.is_empty() {
                    // `[DONE]` goes to hyper now: the request succeeded (if its last tokens
                    // came; an error already ended it).
                    self.choices.delivered();
                }
                return Poll::Ready(Some(Ok(frame)));
            }
            if self.done {
                return Poll::Ready(None);
            }
            // Taken (and counted) only now that hyper asks for the next frame.
            match self.choices.poll_event(cx) {
                Poll::Ready(Some(Event::Piece(piece))) => self.push(piece),
                Poll::Ready(Some(Event::Failed(message))) => {
                    self.pending.push_back(error_event(&message));
                    self.end();
                }
                // The engine stopped without finishing the stream.
                Poll::Ready(Some(Event::Vanished)) => {
                    self.pending.push_back(error_event(
                        "the engine stopped before the end of the stream",
                    ));
                    self.end();
                }
                // Every choice finished.
                Poll::Ready(None) => {
                    let completion = self.choices.completion_tokens();
                    let metrics = self
                        .frames
                        .wants_metrics()
                        .then(|| self.choices.server_metrics())
                        .flatten();
                    let cached = self.choices.cached_tokens();
                    let usage = self.frames.usage(self.prompt, completion, cached, metrics);
                    self.pending.extend(usage);
                    self.end();
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// The body of a non-streaming answer: the JSON in parts (`answer.rs`), whose tokens were all
/// taken; each part is freed once hyper takes it. The request succeeds when hyper takes the
/// last part, and is cancelled if hyper drops the body before. Its share of the answer budget
/// is given back at the same moment (`budget.rs`).
pub(crate) struct WholeBody {
    parts: VecDeque<Bytes>,
    /// Bytes of the parts not yet taken.
    left: u64,
    choices: Choices,
    hold: Option<AnswerHold>,
}

impl WholeBody {
    /// Every choice of `choices` has ended, its success held; `parts` are the JSON's bytes.
    pub(crate) fn new(parts: Vec<Bytes>, choices: Choices) -> Self {
        let parts: VecDeque<Bytes> = parts.into_iter().filter(|p| !p.is_empty()).collect();
        Self {
            left: parts.iter().map(|p| p.len() as u64).sum(),
            parts,
            choices,
            hold: None,
        }
    }

    /// Keeps `hold` (the answer's share of the answer budget) until the last part is taken or
    /// the body is dropped.
    pub(crate) fn holding(mut self, hold: Option<AnswerHold>) -> Self {
        self.hold = hold;
        self
    }
}

impl http_body::Body for WholeBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let Some(part) = self.parts.pop_front() else {
            return Poll::Ready(None);
        };
        self.left -= part.len() as u64;
        if self.parts.is_empty() {
            self.choices.delivered();
            self.hold = None;
        }
        Poll::Ready(Some(Ok(Frame::data(part))))
    }

    fn is_end_stream(&self) -> bool {
        self.parts.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}
