//! [`Observe`]: how a [`Metered`](super::Metered) stream reads each item.

use super::classify::{Classify, DefaultClassifier};
use crate::request::Observation;

/// Says what one stream item carried.
pub trait Observe<T> {
    /// What `item` carried. Called once per item; must not block.
    fn observe(&mut self, item: &T) -> Observation;

    /// How the request ends when the stream ends (`Ready(None)`) before anything else ended
    /// it: a success unless the observer knows better (an OpenAI stream that carried no token
    /// is [`ErrorClass::EmptyResponse`](crate::ErrorClass::EmptyResponse)).
    fn finish(&mut self) -> crate::Outcome {
        crate::Outcome::Success
    }
}

/// Every item is one token.
#[derive(Clone, Copy, Debug, Default)]
pub struct PerItem;

impl<T> Observe<T> for PerItem {
    #[inline]
    fn observe(&mut self, _item: &T) -> Observation {
        Observation::tokens(1)
    }
}

/// A closure is an observer: one returning a `u32` counts that many tokens for the item (0
/// for a frame that carries none), one returning an [`Observation`] says everything.
///
/// # Examples
///
/// ```
/// use tokenmeter::stream::Observe;
/// use tokenmeter::{FinishReason, Observation};
///
/// let mut words = |text: &&str| text.split_whitespace().count() as u32;
/// assert_eq!(words.observe(&"two words").token_count(), 2);
///
/// let mut last = |text: &&str| Observation::tokens(1).with_finish(FinishReason::Stop);
/// assert_eq!(last.observe(&"bye").finish_reason(), Some(FinishReason::Stop));
/// ```
impl<T, F, R> Observe<T> for F
where
    F: FnMut(&T) -> R,
    R: Into<Observation>,
{
    #[inline]
    fn observe(&mut self, item: &T) -> Observation {
        self(item).into()
    }
}

/// Observes `Result` items: `Ok` through an inner observer `K`, `Err` through a classifier `C`.
///
/// # Examples
///
/// ```
/// # futures_executor::block_on(async {
/// use futures_util::{StreamExt, stream};
/// use tokenmeter::stream::Results;
/// use tokenmeter::{ErrorClass, Labels, Meter, Metered, Outcome, sink::InMemorySink};
///
/// #[derive(Debug)]
/// struct Status(u16);
///
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().sink(memory.clone()).build();
/// let items = stream::iter(vec![Ok("a b"), Err(Status(429))]);
/// let observer = Results::new()
///     .observe_ok(|s: &&str| s.split(' ').count() as u32)
///     .classify(|e: &Status| ErrorClass::from_http_status(e.0).unwrap_or(ErrorClass::Other));
/// let metered = Metered::new(items, meter.series(&Labels::client("chat")).start(), observer);
/// let _ = metered.count().await;
/// let record = &memory.records()[0];
/// assert_eq!(record.outcome, Outcome::Error(ErrorClass::RateLimited));
/// assert_eq!(record.output_tokens, 2);
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Results<K = PerItem, C = DefaultClassifier> {
    ok: K,
    err: C,
}

impl Results {
    /// One token per `Ok` item; errors classified by [`DefaultClassifier`].
    pub fn new() -> Self {
        Self::default()
    }
}

impl<K, C> Results<K, C> {
    /// Counts tokens of `Ok` items with `count`.
    #[deprecated(since = "0.2.0", note = "use `observe_ok(count)`; removed in 0.3.0")]
    pub fn count_tokens<F>(self, count: F) -> Results<F, C> {
        self.observe_ok(count)
    }

    /// Observes `Ok` items with `observer`: any [`Observe`], a closure returning the item's
    /// tokens (`u32`) or its [`Observation`] included.
    pub fn observe_ok<P>(self, observer: P) -> Results<P, C> {
        Results {
            ok: observer,
            err: self.err,
        }
    }

    /// Classifies `Err` items with `classifier` (a [`Classify`], or a closure
    /// `Fn(&E) -> ErrorClass`).
    pub fn classify<D>(self, classifier: D) -> Results<K, D> {
        Results {
            ok: self.ok,
            err: classifier,
        }
    }
}

impl<T, E, K, C> Observe<Result<T, E>> for Results<K, C>
where
    K: Observe<T>,
    C: Classify<E>,
{
    #[inline]
    fn observe(&mut self, item: &Result<T, E>) -> Observation {
        match item {
            Ok(value) => self.ok.observe(value),
            Err(error) => Observation::error(self.err.classify(error)),
        }
    }
}
