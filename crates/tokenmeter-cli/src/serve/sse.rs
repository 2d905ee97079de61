//! [`SseBody`]: a token stream rendered as OpenAI's SSE frames.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;
use tokenmeter_sim::{Token, TokenStream};

use super::chunks::{DONE, Frames, error_event};

/// The body of a streaming response. Dropping it (the client went away) drops the token
/// stream, which cancels the request in the engine.
pub(crate) struct SseBody {
    tokens: TokenStream,
    frames: Frames,
    prompt: u32,
    pending: VecDeque<Bytes>,
    done: bool,
}

impl SseBody {
    /// The body of a stream whose first token has already arrived: the role frame (chat), that
    /// token, then the rest of `tokens`.
    pub(crate) fn new(tokens: TokenStream, frames: Frames, prompt: u32, first: Token) -> Self {
        let mut body = Self {
            tokens,
            pending: VecDeque::with_capacity(4),
            done: false,
            prompt,
            frames,
        };
        body.pending.extend(body.frames.role());
        body.push(first);
        body
    }

    fn push(&mut self, token: Token) {
        self.pending.push_back(self.frames.token(token.text));
        if let Some(reason) = token.finish_reason {
            self.pending.push_back(self.frames.finish(reason));
            self.pending
                .extend(self.frames.usage(self.prompt, token.index + 1));
            self.end();
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
                return Poll::Ready(Some(Ok(frame)));
            }
            if self.done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut self.tokens).poll_next(cx) {
                Poll::Ready(Some(Ok(token))) => self.push(token),
                Poll::Ready(Some(Err(error))) => {
                    self.pending.push_back(error_event(&error.to_string()));
                    self.end();
                }
                // The engine stopped without finishing the stream.
                Poll::Ready(None) => {
                    self.pending.push_back(error_event(
                        "the engine stopped before the end of the stream",
                    ));
                    self.end();
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
