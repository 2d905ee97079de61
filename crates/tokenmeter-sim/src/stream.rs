//! [`TokenStream`]: the tokens of one request, measured as its consumer takes them.
//!
//! The engine puts each token in the request's output queue (a channel whose length it bounds
//! with [`SimConfig::output_queue`](crate::SimConfig::output_queue): it counts what it sent,
//! the stream counts what it took, and a request with a full queue sits out the decode steps).
//! The request's measurement ([`tokenmeter::Request`]) is handed over with the first item: from
//! then on a token counts, with its time, when the consumer takes it, and the outcome is what
//! the consumer got. The engine can still end it at the stall limit, without the consumer
//! (`link.rs`).

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures_core::Stream;
use tokenmeter::stream::HasErrorClass;
use tokenmeter::{ErrorClass, FinishReason, Request};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::error::StreamError;
pub(crate) use crate::link::Link;
use crate::token::Token;

/// The item a [`TokenStream`] yields.
pub type TokenResult = Result<Token, StreamError>;

/// What the engine puts in a request's output queue: one item.
pub(crate) type Delivery = TokenResult;

/// Where the request's measurement stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Its end has not been taken.
    Open,
    /// The last token was taken and [`TokenStream::hold_success`] holds the success.
    Held,
    /// It ended.
    Closed,
}

/// The tokens of one request, each arriving when the engine step that produced it ends, each
/// counted when the consumer takes it.
///
/// The stream yields `Ok(Token)` items, possibly one `Err` after which it ends, and ends after
/// the token that carries the finish reason. The request is measured on the consumer's side:
/// a token is recorded (its time, so TTFT and ITL) when the stream yields it, the request
/// succeeds when the last token is taken (or at [`delivered`](Self::delivered), after
/// [`hold_success`](Self::hold_success)), fails when an injected error is taken, and is
/// cancelled, with the tokens taken so far, when the stream is dropped before its end or the
/// engine cut it for a full output queue ([`StreamError::Stalled`]).
///
/// A consumer that stops taking tokens stalls its own request only: once
/// [`SimConfig::output_queue`](crate::SimConfig::output_queue) tokens wait, the engine skips
/// the request in its decode steps (it keeps its batch slot and KV cache), and after
/// [`SimConfig::stall_limit`](crate::SimConfig::stall_limit) it cuts it.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use futures_util::StreamExt;
/// use tokenmeter::{Clock, Meter, Outcome, sink::InMemorySink};
/// use tokenmeter_sim::{Engine, GenerateRequest};
///
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().clock(Clock::tokio()).sink(memory.clone()).build();
/// let engine = Engine::builder().meter(meter).build()?;
///
/// // Take 3 of 10 tokens, then hang up: cancelled with the 3 taken.
/// let mut tokens = engine.submit(GenerateRequest::chat(100, 10))?;
/// for _ in 0..3 {
///     tokens.next().await.expect("a token")?;
/// }
/// drop(tokens);
/// let record = &memory.records()[0];
/// assert_eq!((record.outcome, record.output_tokens), (Outcome::Cancelled, 3));
/// # Ok(())
/// # }
/// ```
#[must_use = "the request is cancelled when its stream is dropped"]
#[derive(Debug)]
pub struct TokenStream {
    rx: UnboundedReceiver<Delivery>,
    link: Arc<Link>,
    /// An item received by [`peek`](Self::peek), not yet taken.
    peeked: Option<Option<TokenResult>>,
    received: u32,
    end: End,
    hold: bool,
    id: u64,
    arrival: Duration,
}

impl TokenStream {
    pub(crate) fn new(
        rx: UnboundedReceiver<Delivery>,
        link: Arc<Link>,
        id: u64,
        arrival: Duration,
    ) -> Self {
        Self {
            rx,
            link,
            peeked: None,
            received: 0,
            end: End::Open,
            hold: false,
            id,
            arrival,
        }
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

    /// Runs `f` on the core request this stream meters, once the engine has handed it over
    /// (with the first item) and until it ends; `None` otherwise. Its
    /// [`queue`](tokenmeter::Request::queue), [`ttft`](tokenmeter::Request::ttft) and
    /// [`time_to_last_token`](tokenmeter::Request::time_to_last_token) are the server's own
    /// measurement of the request so far (a server reports them in its answer).
    pub fn with_request<T>(&self, f: impl FnOnce(&Request) -> T) -> Option<T> {
        self.link.with(|request| f(request))
    }

    /// Waits for the next item without taking it: it is not counted until the stream yields
    /// it. `None` when the stream has ended.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use futures_util::StreamExt;
    /// use tokenmeter_sim::{Engine, GenerateRequest};
    ///
    /// let engine = Engine::builder().build()?;
    /// let mut tokens = engine.submit(GenerateRequest::chat(10, 2))?;
    /// // Answer an error before the first token differently, without counting the token yet.
    /// assert!(matches!(tokens.peek().await, Some(Ok(_))));
    /// assert_eq!(tokens.collect::<Vec<_>>().await.len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn peek(&mut self) -> Option<&TokenResult> {
        if self.peeked.is_none() {
            let item = poll_fn(|cx| self.poll_receive(cx)).await;
            self.peeked = Some(item);
        }
        self.peeked.as_ref().and_then(Option::as_ref)
    }

    /// Holds the request's success when its last token is taken, until
    /// [`delivered`](Self::delivered): for a consumer that passes tokens on (an HTTP body) and
    /// counts the request a success only once the end is handed over too. Dropped while held,
    /// the request is cancelled (with every token counted).
    pub fn hold_success(&mut self) {
        self.hold = true;
    }

    /// Records the success held by [`hold_success`](Self::hold_success), once the last token
    /// was taken; otherwise does nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use futures_util::StreamExt;
    /// use tokenmeter::{Clock, Meter, sink::InMemorySink};
    /// use tokenmeter_sim::{Engine, GenerateRequest};
    ///
    /// let memory = InMemorySink::new();
    /// let meter = Meter::builder().clock(Clock::tokio()).sink(memory.clone()).build();
    /// let engine = Engine::builder().meter(meter).build()?;
    /// let mut tokens = engine.submit(GenerateRequest::chat(10, 2))?;
    /// tokens.hold_success();
    /// while let Some(token) = tokens.next().await {
    ///     token?;
    /// }
    /// assert!(memory.records().is_empty(), "the success waits");
    /// tokens.delivered(); // e.g. the response body was written
    /// assert_eq!(memory.report().outcomes.success, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn delivered(&mut self) {
        if self.end == End::Held {
            self.end = End::Closed;
            if let Some(mut request) = self.link.take() {
                request.succeed();
            }
        }
    }

    /// Ends the request before the engine's last token with `reason`, e.g. at a stop sequence
    /// the consumer found in the text: the tokens taken so far count, the engine frees the
    /// request's batch slot and KV cache at its next step, and the request succeeds now (or at
    /// [`delivered`](Self::delivered), after [`hold_success`](Self::hold_success)). After the
    /// last token was taken, only the recorded finish reason changes; after an error, nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use futures_util::StreamExt;
    /// use tokenmeter::{Clock, FinishReason, Meter, Outcome, sink::InMemorySink};
    /// use tokenmeter_sim::{Engine, GenerateRequest};
    ///
    /// let memory = InMemorySink::new();
    /// let meter = Meter::builder().clock(Clock::tokio()).sink(memory.clone()).build();
    /// let engine = Engine::builder().meter(meter).build()?;
    /// let mut tokens = engine.submit(GenerateRequest::chat(10, 50))?;
    /// tokens.next().await.expect("a token")?;
    /// tokens.finish_early(FinishReason::Stop); // e.g. the text reached a stop sequence
    /// assert!(tokens.next().await.is_none());
    /// let record = &memory.records()[0];
    /// assert_eq!((record.outcome, record.output_tokens), (Outcome::Success, 1));
    /// # Ok(())
    /// # }
    /// ```
    pub fn finish_early(&mut self, reason: FinishReason) {
        match self.end {
            End::Closed => {}
            End::Held => {
                self.link.with(|request| request.set_finish_reason(reason));
            }
            End::Open => {
                self.link.with(|request| request.set_finish_reason(reason));
                self.end = End::Held;
                self.peeked = None;
                self.rx.close();
                self.link.wake.notify_one();
                if !self.hold {
                    self.delivered();
                }
            }
        }
    }

    /// Receives the next item from the queue, without counting it as taken: takes the
    /// measurement handed over with it, and wakes the engine if the queue was full.
    fn poll_receive(&mut self, cx: &mut Context<'_>) -> Poll<Option<TokenResult>> {
        if self.end != End::Open {
            return Poll::Ready(None);
        }
        if let Some(cut) = self.cut() {
            return Poll::Ready(Some(cut));
        }
        let Some(item) = ready!(self.rx.poll_recv(cx)) else {
            return Poll::Ready(None);
        };
        let queued = self.rx.len() + 1;
        self.received = self.received.wrapping_add(1);
        self.link.set_taken(self.received);
        if queued >= self.link.capacity() as usize {
            // The engine may be skipping this request; let it know there is room.
            self.link.wake.notify_one();
        }
        Poll::Ready(Some(item))
    }

    /// The stall limit's error, once the engine cut the request (it recorded the request
    /// cancelled): the tokens still queued, never taken, are dropped with the queue.
    fn cut(&mut self) -> Option<TokenResult> {
        if self.end != End::Open {
            return None;
        }
        let limit = self.link.cut_at()?;
        self.peeked = None;
        self.rx.close();
        Some(Err(StreamError::Stalled { limit }))
    }

    /// Counts an item the consumer takes.
    fn take(&mut self, item: Option<TokenResult>) -> Option<TokenResult> {
        if self.end != End::Open {
            return item;
        }
        match &item {
            Some(Ok(token)) => {
                self.link.with(|request| {
                    if token.reasoning {
                        request.record_reasoning_tokens(1);
                    } else {
                        request.record_tokens(1);
                    }
                    if let Some(reason) = token.finish_reason {
                        request.set_finish_reason(reason);
                    }
                });
                if token.finish_reason.is_some() {
                    self.end = End::Held;
                    if !self.hold {
                        self.delivered();
                    }
                }
            }
            Some(Err(error)) => self.close(match error {
                StreamError::Stalled { .. } => None,
                other => Some(other.error_class()),
            }),
            // The engine went away without ending the stream (its runtime shut down).
            None => self.close(Some(ErrorClass::Overloaded)),
        }
        item
    }

    /// Ends the request: failed with `class`, or cancelled.
    #[cold]
    fn close(&mut self, class: Option<ErrorClass>) {
        self.end = End::Closed;
        if let Some(mut request) = self.link.take() {
            match class {
                Some(class) => request.fail(class),
                None => request.cancel(),
            }
        }
    }
}

impl Stream for TokenStream {
    type Item = TokenResult;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // A cut drops an item peeked before it too: the request has ended.
        let item = match self.cut().or_else(|| self.peeked.take().flatten()) {
            Some(item) => Some(item),
            None => ready!(self.poll_receive(cx)),
        };
        Poll::Ready(self.take(item))
    }
}

impl Drop for TokenStream {
    /// Before its end: closes the queue and wakes the engine, which frees the request's batch
    /// slot and KV cache; the measurement records a cancellation (held: with every token).
    fn drop(&mut self) {
        if self.end != End::Closed {
            self.rx.close();
            self.link.wake.notify_one();
            if let Some(mut request) = self.link.take() {
                request.cancel();
            }
        }
    }
}
