//! [`Activity`]: what one connection is doing, and when it must be closed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::evictable::Evictable;
use crate::timeouts::{Expired, Timeouts};

/// What one connection is doing: told by its [`Watched`](crate::Watched) socket when bytes
/// arrive and writes wait, and by the service when a request begins ([`Activity::begin`]) and
/// its response is dropped. Its [`deadline`](Activity::deadline) follows.
#[derive(Debug)]
pub struct Activity {
    state: Mutex<State>,
    /// Set while the connection waits for the first byte of its next request: the next read
    /// that brings bytes starts the header timeout.
    awaiting_first_byte: AtomicBool,
    /// Set while a write to the socket waits for the client to read (its buffers are full):
    /// the connection is busy, not idle, even with no request in flight (hyper may still hold
    /// the end of a response).
    write_blocked: AtomicBool,
    /// When bytes were last written, in nanoseconds after `born`.
    last_write: AtomicU64,
    born: Instant,
    /// Woken when the state changes (its deadline may move).
    changed: Notify,
    /// Woken to close the connection now (evicted to make room).
    close: Notify,
}

#[derive(Debug, Clone, Copy)]
struct State {
    /// Requests begun whose response has not been dropped.
    in_flight: usize,
    /// Of those, requests whose body has not arrived whole.
    reading: usize,
    /// When the connection last had no request in flight (its accept, or the end of its last
    /// response).
    idle_since: Instant,
    /// The first byte received since `idle_since`.
    first_byte: Option<Instant>,
    /// A response has ended on this connection: between requests it waits on keep-alive.
    answered: bool,
}

impl Activity {
    /// A connection accepted at `now`, with nothing received yet.
    pub fn new(now: Instant) -> Self {
        Self {
            state: Mutex::new(State {
                in_flight: 0,
                reading: 0,
                idle_since: now,
                first_byte: None,
                answered: false,
            }),
            awaiting_first_byte: AtomicBool::new(true),
            write_blocked: AtomicBool::new(false),
            last_write: AtomicU64::new(0),
            born: now,
            changed: Notify::new(),
            close: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes arrived: the first of a request starts its header timeout.
    pub(crate) fn heard(&self) {
        if self.awaiting_first_byte.swap(false, Ordering::Relaxed) {
            let mut state = self.lock();
            if state.in_flight == 0 && state.first_byte.is_none() {
                state.first_byte = Some(Instant::now());
            }
            drop(state);
            self.changed.notify_one();
        }
    }

    /// A write to the socket returned: `blocked` when it must wait for the client to read.
    pub(crate) fn wrote(&self, blocked: bool) {
        if !blocked {
            let nanos = u64::try_from(self.born.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.last_write.store(nanos, Ordering::Relaxed);
        }
        if self.write_blocked.swap(blocked, Ordering::Relaxed) != blocked {
            self.changed.notify_one();
        }
    }

    /// A request's headers are complete; `with_body` when a body is to follow. It is in flight
    /// until the [`InFlight`] is dropped (with its response body), and being received until
    /// the [`Receiving`] is dropped (at the end of its body).
    pub fn begin(self: &Arc<Self>, with_body: bool) -> (InFlight, Option<Receiving>) {
        let mut state = self.lock();
        state.in_flight += 1;
        state.reading += usize::from(with_body);
        state.first_byte = None;
        drop(state);
        self.changed.notify_one();
        let receiving = with_body.then(|| Receiving {
            activity: self.clone(),
        });
        (
            InFlight {
                activity: self.clone(),
            },
            receiving,
        )
    }

    fn last_write(&self) -> Instant {
        self.born + Duration::from_nanos(self.last_write.load(Ordering::Relaxed))
    }

    /// When the connection must be closed, and why. While a write waits for the client, the
    /// send timeout counts from the last byte written (a client that reads nothing cannot hold
    /// the connection, and its requests, forever); otherwise `None` while a request is in
    /// flight. With no request, the idle timeout counts from the accept, the end of the last
    /// response or the last byte written, whichever is latest; once a request's first byte
    /// has arrived, the header timeout counts from it.
    pub fn deadline(&self, timeouts: &Timeouts) -> Option<(Instant, Expired)> {
        let state = *self.lock();
        if self.write_blocked.load(Ordering::Relaxed) {
            return Some((self.last_write() + timeouts.send, Expired::SendTimeout));
        }
        if state.in_flight > 0 {
            return None;
        }
        Some(match state.first_byte {
            Some(first) => (first + timeouts.header, Expired::HeaderTimeout),
            None => (
                state.idle_since.max(self.last_write()) + timeouts.idle,
                Expired::IdleTimeout,
            ),
        })
    }

    /// Waits until the connection's [`deadline`](Activity::deadline) passes (following it as
    /// it moves), and says which: the watchdog of a connection selects on this beside hyper's
    /// connection future and [`evicted`](Activity::evicted), and closes the connection when
    /// it returns.
    pub async fn expired(&self, timeouts: &Timeouts) -> Expired {
        loop {
            let deadline = self.deadline(timeouts);
            let expiry = async {
                match deadline {
                    Some((at, _)) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = self.changed.notified() => {}
                () = expiry => {
                    if let Some((at, why)) = self.deadline(timeouts)
                        && at <= Instant::now()
                    {
                        return why;
                    }
                }
            }
        }
    }

    /// Waits until the connection is evicted to make room for a new one
    /// ([`Connections::admit`](crate::Connections::admit)); the watchdog then closes it.
    pub async fn evicted(&self) {
        self.close.notified().await;
    }

    /// Tells the connection to close (it was evicted).
    pub(crate) fn evict(&self) {
        self.close.notify_one();
    }

    /// Every request in flight is still being received: nothing has been answered yet that a
    /// shutdown should wait for.
    pub fn only_receiving(&self) -> bool {
        let state = self.lock();
        state.in_flight == state.reading
    }

    /// Since when the connection has been idle under `rule`, if it is: the latest of its
    /// accept, the end of its last response and its last byte written. A connection is never
    /// idle while a response is being made or a write waits; under
    /// [`Evictable::KeptAlive`] it is idle only once a response of it has ended and no byte
    /// of a next request has arrived.
    pub(crate) fn idle_since(&self, rule: Evictable) -> Option<Instant> {
        let state = self.lock();
        let answering = state.in_flight > 0 || self.write_blocked.load(Ordering::Relaxed);
        let idle = match rule {
            Evictable::KeptAlive => !answering && state.answered && state.first_byte.is_none(),
            Evictable::NotAnswering => !answering,
        };
        idle.then(|| state.idle_since.max(self.last_write()))
    }
}

/// One request in flight on a connection; drop it with its response body.
#[derive(Debug)]
pub struct InFlight {
    activity: Arc<Activity>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.activity.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0 {
            state.idle_since = Instant::now();
            state.first_byte = None;
            state.answered = true;
            self.activity
                .awaiting_first_byte
                .store(true, Ordering::Relaxed);
        }
        drop(state);
        self.activity.changed.notify_one();
    }
}

/// One request whose body is still arriving; drop it when the body has arrived whole (or
/// failed, or was left unread).
#[derive(Debug)]
pub struct Receiving {
    activity: Arc<Activity>,
}

impl Drop for Receiving {
    fn drop(&mut self) {
        let mut state = self.activity.lock();
        state.reading = state.reading.saturating_sub(1);
        drop(state);
        self.activity.changed.notify_one();
    }
}
