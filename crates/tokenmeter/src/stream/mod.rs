//! [`Metered`]: a stream wrapper that measures every item, and [`MeterExt`] to build it.
//!
//! # One way to meter a stream
//!
//! `stream.meter(request)` ([`MeterExt::meter`]) wraps any stream, counting one token per item.
//! When items are not one token each, say what each carried with an observer:
//! `stream.meter(request).with_observer(observer)` ([`Metered::with_observer`]), or
//! [`Metered::new`]`(stream, request, observer)`, the same in one call. An observer is any
//! [`Observe`]:
//!
//! | Items | Observer |
//! |---|---|
//! | one token each | [`PerItem`] (the default) |
//! | `k` tokens each (0 for frames that carry none) | a closure `\|item: &T\| -> u32` |
//! | tokens, a finish reason, an error | a closure `\|item: &T\| -> Observation` |
//! | `Result<T, E>`: `Err` ends the request with its class | [`Results`] (with an `Ok` observer and a classifier of your choice) |
//! | anything else | your own type implementing [`Observe`] |
//!
//! A closure passed to [`with_observer`](Metered::with_observer) names its argument's type
//! (`|chunk: &Chunk| ...`): the compiler cannot infer it through the [`Observe`] trait.
//!
//! For each item the wrapper asks the observer what the item carried and tells the
//! [`Request`]. `Ready(None)` ends the request with success (or what [`Observe::finish`]
//! says); an error item ends it with its
//! class; dropping the stream before its end records a cancellation (or an error, when a panic
//! is unwinding). Items are always passed through unchanged, and keep flowing after the request
//! has ended. [`Metered::into_parts`] gives the stream and the request back without ending it.

mod classify;
mod observe;

pub use classify::{Classify, DefaultClassifier, HasErrorClass};
pub use observe::{Observe, PerItem, Results};

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_core::stream::FusedStream;
use pin_project_lite::pin_project;

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
    /// The request being measured: mark it scheduled or degraded, set its token counts, or end
    /// it early (`metered.request_mut().fail(ErrorClass::Timeout)`).
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

    /// Replaces the observer, keeping the stream and the request: the way to say what each item
    /// carried when it is not one token (see the [module docs](self) for the observers).
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
    /// let metered = chunks
    ///     .meter(meter.series(&Labels::client("chat")).start())
    ///     .with_observer(|chunk: &Vec<u32>| chunk.len() as u32); // tokens per item
    /// let _ = metered.count().await;
    /// let record = &memory.records()[0];
    /// assert_eq!((record.output_tokens, record.items, record.frames), (3, 2, 3));
    /// # });
    /// ```
    pub fn with_observer<P>(self, observer: P) -> Metered<St, P> {
        Metered {
            inner: self.inner,
            observer,
            request: self.request,
        }
    }

    /// Replaces the observer.
    #[deprecated(since = "0.2.0", note = "use `with_observer`; removed in 0.3.0")]
    pub fn observe_with<P>(self, observer: P) -> Metered<St, P> {
        self.with_observer(observer)
    }

    /// The inner stream and the request, with no side effect: the request has not ended unless
    /// the stream had. Keep the request to go on measuring (end it with one of its verbs), or
    /// drop it, which ends it as cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures_executor::block_on(async {
    /// use futures_util::{StreamExt, stream};
    /// use tokenmeter::{Labels, ManualClock, Meter, MeterExt, Outcome};
    ///
    /// let (meter, memory) = Meter::manual(&ManualClock::new());
    /// let mut metered = stream::iter(["a", "b", "c"]).meter(meter.series(&Labels::client("chat")).start());
    /// assert_eq!(metered.next().await, Some("a"));
    ///
    /// let (mut rest, mut request) = metered.into_parts();
    /// assert!(!request.is_ended() && memory.records().is_empty());
    /// while let Some(_) = rest.next().await {
    ///     request.record_tokens(1); // measured by hand from here
    /// }
    /// request.succeed();
    /// assert_eq!(memory.records()[0].output_tokens, 3);
    /// assert_eq!(memory.records()[0].outcome, Outcome::Success);
    /// # });
    /// ```
    pub fn into_parts(self) -> (St, Request) {
        (self.inner, self.request)
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
                if !this.request.is_ended() {
                    this.request.end(this.observer.finish());
                }
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

/// Adds [`meter`](MeterExt::meter), the one way to meter a stream, to every [`Stream`].
pub trait MeterExt: Stream + Sized {
    /// Measures this stream as one token per item. Say otherwise with
    /// [`Metered::with_observer`] (see the [module docs](self)); a stream of `Result`s takes
    /// [`Results`], or every `Err` item counts as a token.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures_executor::block_on(async {
    /// use futures_util::{StreamExt, stream};
    /// use tokenmeter::stream::Results;
    /// use tokenmeter::{ErrorClass, Labels, ManualClock, Meter, MeterExt, Outcome};
    ///
    /// let (meter, memory) = Meter::manual(&ManualClock::new());
    /// let series = meter.series(&Labels::client("chat"));
    ///
    /// let _ = stream::iter(["a", "b"]).meter(series.start()).count().await;
    ///
    /// let items = stream::iter(vec![Ok("a"), Err(ErrorClass::Timeout)]);
    /// let _ = items.meter(series.start()).with_observer(Results::new()).count().await;
    ///
    /// let outcomes: Vec<Outcome> = memory.records().iter().map(|r| r.outcome).collect();
    /// assert_eq!(outcomes, [Outcome::Success, Outcome::Error(ErrorClass::Timeout)]);
    /// # });
    /// ```
    fn meter(self, request: Request) -> Metered<Self, PerItem> {
        Metered::new(self, request, PerItem)
    }

    /// Measures this stream, counting `count(item)` tokens per item.
    #[deprecated(
        since = "0.2.0",
        note = "use `.meter(request).with_observer(count)`; removed in 0.3.0"
    )]
    fn meter_tokens<F>(self, request: Request, count: F) -> Metered<Self, F>
    where
        F: FnMut(&Self::Item) -> u32,
    {
        Metered::new(self, request, count)
    }

    /// Measures this stream with a closure that returns an [`Observation`](crate::Observation)
    /// per item.
    #[deprecated(
        since = "0.2.0",
        note = "use `.meter(request).with_observer(observe)`; removed in 0.3.0"
    )]
    fn meter_with<F>(self, request: Request, observe: F) -> Metered<Self, F>
    where
        F: FnMut(&Self::Item) -> crate::Observation,
    {
        Metered::new(self, request, observe)
    }

    /// Measures a stream of `Result`s with [`Results::new`].
    #[deprecated(
        since = "0.2.0",
        note = "use `.meter(request).with_observer(Results::new())`; removed in 0.3.0"
    )]
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

#[cfg(test)]
mod tests {
    use futures_executor::block_on;
    use futures_util::{StreamExt, stream};

    use super::*;
    use crate::{Labels, ManualClock, Meter, Outcome};

    #[test]
    fn into_parts_has_no_side_effect() {
        let (meter, memory) = Meter::manual(&ManualClock::new());
        let metered = stream::iter([1, 2]).meter(meter.series(&Labels::client("chat")).start());
        let (inner, mut request) = metered.into_parts();
        assert!(!request.is_ended());
        assert!(memory.records().is_empty(), "nothing ended");
        assert_eq!(block_on(inner.collect::<Vec<_>>()), [1, 2]);
        request.record_tokens(2);
        request.succeed();
        let records = memory.records();
        assert_eq!(records.len(), 1, "ended once, by the caller");
        assert_eq!(
            (records[0].outcome, records[0].output_tokens),
            (Outcome::Success, 2)
        );
    }

    #[test]
    fn dropping_the_parts_request_cancels_it() {
        let (meter, memory) = Meter::manual(&ManualClock::new());
        let metered = stream::iter([1]).meter(meter.series(&Labels::client("chat")).start());
        let (_inner, request) = metered.into_parts();
        drop(request);
        assert_eq!(memory.records()[0].outcome, Outcome::Cancelled);
    }
}
