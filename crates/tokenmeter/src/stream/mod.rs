//! [`Metered`]: a stream wrapper that measures every item, and [`MeterExt`] to build it.
//!
//! For each item the wrapper asks an [`Observe`] what the item carried (tokens, a finish
//! reason, an error) and tells the [`Request`]. `Ready(None)` ends the request with success; an
//! error item ends it with its class; dropping the stream before its end records a cancellation
//! (or an error, when a panic is unwinding). Items are always passed through unchanged, and keep
//! flowing after the request has ended.

mod classify;
mod observe;

pub use classify::{Classify, DefaultClassifier, HasErrorClass};
pub use observe::{CountWith, Observe, ObserveWith, PerItem, Results};

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_core::stream::FusedStream;
use pin_project_lite::pin_project;

use crate::outcome::Outcome;
use crate::request::Request;

pin_project! {
    /// A stream that records TTFT, inter-token gaps, token counts and the outcome of the
    /// [`Request`] it carries.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures_executor::block_on(async {
    /// use futures_util::{StreamExt, stream};
    /// use tokenmeter::{Labels, Meter, MeterExt, sink::InMemorySink};
    ///
    /// let memory = InMemorySink::new();
    /// let meter = Meter::builder().sink(memory.clone()).build();
    /// let series = meter.series(&Labels::client("chat"));
    ///
    /// let tokens = stream::iter(["Hel", "lo", "!"]).meter(series.start());
    /// let text: String = tokens.collect().await;
    /// assert_eq!(text, "Hello!");
    /// assert_eq!(memory.records()[0].output_tokens, 3);
    /// # });
    /// ```
    #[must_use = "streams do nothing unless polled"]
    #[derive(Debug)]
    pub struct Metered<St, O> {
        #[pin]
        inner: St,
        observer: O,
        request: Request,
    }
}

impl<St, O> Metered<St, O>
where
    St: Stream,
    O: Observe<St::Item>,
{
    /// Wraps `inner`, measuring `request` with `observer`.
    pub fn new(inner: St, request: Request, observer: O) -> Self {
        Self {
            inner,
            observer,
            request,
        }
    }
}

impl<St, O> Metered<St, O> {
    /// The request being measured: mark it scheduled, degraded, or set its token counts.
    pub fn request_mut(&mut self) -> &mut Request {
        &mut self.request
    }

    /// The request being measured.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The same from a pinned reference, for use inside `poll` implementations.
    pub fn request_pin_mut(self: Pin<&mut Self>) -> &mut Request {
        self.project().request
    }

    /// Replaces the observer, keeping the stream and the request.
    pub fn observe_with<P>(self, observer: P) -> Metered<St, P> {
        Metered {
            inner: self.inner,
            observer,
            request: self.request,
        }
    }

    /// Ends the measurement (as cancelled if it had not ended) and returns the inner stream.
    pub fn into_inner(self) -> St {
        let Metered {
            inner, mut request, ..
        } = self;
        request.end_with(Outcome::Cancelled);
        inner
    }
}

impl<St, O> Stream for Metered<St, O>
where
    St: Stream,
    O: Observe<St::Item>,
{
    type Item = St::Item;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        match this.inner.poll_next(cx) {
            Poll::Ready(Some(item)) => {
                if !this.request.is_ended() {
                    this.request.observe(this.observer.observe(&item));
                }
                Poll::Ready(Some(item))
            }
            Poll::Ready(None) => {
                this.request.end_with(Outcome::Success);
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<St, O> FusedStream for Metered<St, O>
where
    St: FusedStream,
    O: Observe<St::Item>,
{
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}

/// Adds [`meter`](MeterExt::meter) and friends to every [`Stream`].
pub trait MeterExt: Stream + Sized {
    /// Measures this stream as one token per item.
    fn meter(self, request: Request) -> Metered<Self, PerItem> {
        Metered::new(self, request, PerItem)
    }

    /// Measures this stream, counting `count(item)` tokens per item (0 for frames that carry
    /// none: they do not set TTFT).
    ///
    /// # Examples
    ///
    /// ```
    /// # futures_executor::block_on(async {
    /// use futures_util::{StreamExt, stream};
    /// use tokenmeter::{Labels, Meter, MeterExt, sink::InMemorySink};
    ///
    /// let memory = InMemorySink::new();
    /// let meter = Meter::builder().sink(memory.clone()).build();
    /// let chunks = stream::iter(vec![vec![], vec![1, 2], vec![3]]); // a role frame, then tokens
    /// let metered = chunks.meter_tokens(meter.series(&Labels::client("chat")).start(), |c| c.len() as u32);
    /// let _ = metered.count().await;
    /// let record = &memory.records()[0];
    /// assert_eq!((record.output_tokens, record.items, record.frames), (3, 2, 3));
    /// # });
    /// ```
    fn meter_tokens<F>(self, request: Request, count: F) -> Metered<Self, CountWith<F>>
    where
        F: FnMut(&Self::Item) -> u32,
    {
        Metered::new(self, request, CountWith(count))
    }

    /// Measures this stream with a closure that returns an [`Observation`](crate::Observation)
    /// per item: tokens, finish reason, error.
    fn meter_with<F>(self, request: Request, observe: F) -> Metered<Self, ObserveWith<F>>
    where
        F: FnMut(&Self::Item) -> crate::Observation,
    {
        Metered::new(self, request, ObserveWith(observe))
    }

    /// Measures a stream of `Result`s: `Ok` items are one token each, `Err` items end the
    /// request with the class [`DefaultClassifier`] gives. Change either with
    /// [`Results::count_tokens`] and [`Results::classify`] through [`Metered::observe_with`], or
    /// build the [`Results`] yourself and use [`Metered::new`].
    fn meter_results<T, E>(
        self,
        request: Request,
    ) -> Metered<Self, Results<PerItem, DefaultClassifier>>
    where
        Self: Stream<Item = Result<T, E>>,
        E: 'static,
    {
        Metered::new(self, request, Results::new())
    }
}

impl<St: Stream> MeterExt for St {}
