//! [`Link`]: what the engine and a request's consumer share — how many items the consumer
//! took, the engine's wake-up, and the request's measurement once the engine handed it over.
//!
//! The measurement sits here, not inside the consumer's stream, so that the engine can end it
//! without the consumer: at the stall limit the engine cuts a request whose consumer takes
//! nothing (an HTTP body whose client never reads is never polled), records it cancelled with
//! the tokens taken so far, and the `running` gauge drops then, not when the consumer next
//! looks.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokenmeter::Request;
use tokio::sync::Notify;

/// Where the request's measurement stands, as the link holds it.
#[derive(Debug, Default)]
enum Measure {
    /// Not handed over yet (the engine holds it), or ended.
    #[default]
    Empty,
    /// Handed over: the consumer records tokens and the outcome on it.
    Open(Box<Request>),
    /// Cut by the engine at the stall limit (recorded cancelled): the consumer's next item is
    /// the error, and the tokens still queued are dropped uncounted.
    Cut(Duration),
}

/// What the engine and a request's consumer share.
#[derive(Debug)]
pub(crate) struct Link {
    taken: AtomicU32,
    capacity: u32,
    pub(crate) wake: Arc<Notify>,
    measure: Mutex<Measure>,
    /// Set once the engine cut the request: the consumer's check on every poll is this load,
    /// not the lock.
    cut: AtomicBool,
}

impl Link {
    pub(crate) fn new(capacity: usize, wake: Arc<Notify>) -> Self {
        Self {
            taken: AtomicU32::new(0),
            capacity: u32::try_from(capacity).unwrap_or(u32::MAX),
            wake,
            measure: Mutex::new(Measure::Empty),
            cut: AtomicBool::new(false),
        }
    }

    /// The output queue's capacity in items.
    pub(crate) fn capacity(&self) -> u32 {
        self.capacity
    }

    /// True when `sent` items leave no room in the queue: the consumer has not taken enough.
    pub(crate) fn full(&self, sent: u32) -> bool {
        sent.wrapping_sub(self.taken.load(Ordering::Acquire)) >= self.capacity
    }

    /// Notes that the consumer has received `received` items in all.
    pub(crate) fn set_taken(&self, received: u32) {
        self.taken.store(received, Ordering::Release);
    }

    fn measure(&self) -> MutexGuard<'_, Measure> {
        self.measure.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The engine hands the measurement over (with the request's first item).
    pub(crate) fn hand_over(&self, request: Box<Request>) {
        *self.measure() = Measure::Open(request);
    }

    /// Runs `f` on the measurement while it is open.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Request) -> T) -> Option<T> {
        match &mut *self.measure() {
            Measure::Open(request) => Some(f(request)),
            _ => None,
        }
    }

    /// Takes the open measurement, to end it.
    pub(crate) fn take(&self) -> Option<Box<Request>> {
        let mut measure = self.measure();
        match std::mem::take(&mut *measure) {
            Measure::Open(request) => Some(request),
            other => {
                *measure = other;
                None
            }
        }
    }

    /// The engine cuts the request at the stall limit `limit`: an open measurement is recorded
    /// cancelled now, with the tokens the consumer took.
    pub(crate) fn cut(&self, limit: Duration) {
        let open = std::mem::replace(&mut *self.measure(), Measure::Cut(limit));
        self.cut.store(true, Ordering::Release);
        if let Measure::Open(mut request) = open {
            request.cancel();
        }
    }

    /// The stall limit the engine cut the request at, if it did.
    pub(crate) fn cut_at(&self) -> Option<Duration> {
        if !self.cut.load(Ordering::Acquire) {
            return None;
        }
        match *self.measure() {
            Measure::Cut(limit) => Some(limit),
            _ => None,
        }
    }
}
