//! [`TokenStream`]: the tokens of one request, arriving at simulated times.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::error::StreamError;
use crate::token::Token;

/// The item a [`TokenStream`] yields.
pub type TokenResult = Result<Token, StreamError>;

/// The tokens of one request, each delivered when the engine step that produced it ends.
///
/// The stream yields `Ok(Token)` items, possibly one `Err` (an injected failure) after which it
/// ends, and ends after the token that carries the finish reason. Dropping it before its end
/// cancels the request: the engine frees its batch slot and KV cache at its next step and
/// records it as cancelled.
#[must_use = "the request is cancelled when its stream is dropped"]
#[derive(Debug)]
pub struct TokenStream {
    rx: UnboundedReceiver<TokenResult>,
    id: u64,
    arrival: Duration,
}

impl TokenStream {
    pub(crate) fn new(rx: UnboundedReceiver<TokenResult>, id: u64, arrival: Duration) -> Self {
        Self { rx, id, arrival }
    }

    /// The request's id, unique within the process: the same as its
    /// [`RequestRecord::id`](tokenmeter::RequestRecord::id).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The request's arrival on the meter's clock.
    pub fn arrival(&self) -> Duration {
        self.arrival
    }
}

impl Stream for TokenStream {
    type Item = TokenResult;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}
