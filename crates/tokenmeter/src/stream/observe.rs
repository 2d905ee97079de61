//! [`Observe`]: how a [`Metered`](super::Metered) stream reads each item.

use std::fmt;

use super::classify::{Classify, DefaultClassifier};
use crate::request::Observation;

/// Says what one stream item carried.
pub trait Observe<T> {
    /// What `item` carried. Called once per item; must not block.
    fn observe(&mut self, item: &T) -> Observation;
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

/// Tokens per item from a closure.
#[derive(Clone, Copy)]
pub struct CountWith<F>(pub F);

impl<T, F: FnMut(&T) -> u32> Observe<T> for CountWith<F> {
    #[inline]
    fn observe(&mut self, item: &T) -> Observation {
        Observation::tokens((self.0)(item))
    }
}

impl<F> fmt::Debug for CountWith<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CountWith(..)")
    }
}

/// A full [`Observation`] per item from a closure.
#[derive(Clone, Copy)]
pub struct ObserveWith<F>(pub F);

impl<T, F: FnMut(&T) -> Observation> Observe<T> for ObserveWith<F> {
    #[inline]
    fn observe(&mut self, item: &T) -> Observation {
        (self.0)(item)
    }
}

impl<F> fmt::Debug for ObserveWith<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ObserveWith(..)")
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
///     .count_tokens(|s: &&str| s.split(' ').count() as u32)
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
    pub fn count_tokens<F>(self, count: F) -> Results<CountWith<F>, C> {
        Results {
            ok: CountWith(count),
            err: self.err,
        }
    }

    /// Observes `Ok` items with `observer`.
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
