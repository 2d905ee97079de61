//! [`Connections`]: the open connections, what each is doing ([`Activity`]), and which one to
//! close to make room for a new one; [`Watched`], a socket that tells its activity when bytes
//! arrive.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::http_counts::Closed;
use super::limits::Limits;

/// What one connection is doing.
#[derive(Debug)]
pub(crate) struct Activity {
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
    pub(crate) changed: Notify,
    /// Woken to close the connection now (evicted to make room).
    pub(crate) close: Notify,
}

#[derive(Debug, Clone, Copy)]
struct State {
    /// Requests handed to the router whose response has not been dropped.
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
    fn new(now: Instant) -> Self {
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

    /// Bytes arrived.
    fn heard(&self) {
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
    fn wrote(&self, blocked: bool) {
        if !blocked {
            let nanos = u64::try_from(self.born.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.last_write.store(nanos, Ordering::Relaxed);
        }
        if self.write_blocked.swap(blocked, Ordering::Relaxed) != blocked {
            self.changed.notify_one();
        }
    }

    /// A request reached the router (its headers are complete); `with_body` when a body is to
    /// follow. It is in flight until the [`InFlight`] is dropped (with its response body), and
    /// being received until the [`Receiving`] is dropped (at the end of its body).
    pub(crate) fn begin(self: &Arc<Self>, with_body: bool) -> (InFlight, Option<Receiving>) {
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

    /// When the connection must be closed, and why. While a write waits for the client, the
    /// send timeout counts from the last byte written (a client that reads nothing cannot hold
    /// the connection, and its requests, forever); otherwise `None` while a request is in
    /// flight. Idle, the keep-alive timeout counts from the end of the last response or the
    /// last byte written, whichever is later; once a request's first byte has arrived, the
    /// header timeout counts from it.
    pub(crate) fn deadline(&self, limits: &Limits) -> Option<(Instant, Closed)> {
        let state = *self.lock();
        let last_write = self.born + Duration::from_nanos(self.last_write.load(Ordering::Relaxed));
        if self.write_blocked.load(Ordering::Relaxed) {
            return Some((last_write + limits.send_timeout, Closed::SendTimeout));
        }
        if state.in_flight > 0 {
            return None;
        }
        Some(match state.first_byte {
            Some(first) => (first + limits.header_timeout, Closed::HeaderTimeout),
            None => (
                state.idle_since.max(last_write) + limits.keep_alive,
                Closed::KeepAlive,
            ),
        })
    }

    /// No request is being answered (a request still being received counts as idle).
    #[cfg(test)]
    pub(crate) fn is_idle(&self) -> bool {
        self.lock().in_flight == 0
    }

    /// Every request in flight is still being received: nothing has been answered yet that a
    /// shutdown should wait for.
    pub(crate) fn only_receiving(&self) -> bool {
        let state = self.lock();
        state.in_flight == state.reading
    }

    /// Since when the connection has been really idle, if it is: a response of it has ended,
    /// nothing is being answered or written, and no byte of a next request has arrived. A
    /// connection that has not yet sent its first request whole (just accepted, or its headers
    /// still arriving within `--header-timeout`) is not idle: its own deadline closes it if
    /// it never does.
    fn idle_since(&self) -> Option<Instant> {
        let state = self.lock();
        let idle = state.answered
            && state.in_flight == 0
            && state.first_byte.is_none()
            && !self.write_blocked.load(Ordering::Relaxed);
        idle.then_some(state.idle_since)
    }
}

/// One request in flight on a connection; dropped with its response body.
#[derive(Debug)]
pub(crate) struct InFlight {
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

/// One request whose body is still arriving; dropped when it has arrived whole (or failed, or
/// was left unread).
#[derive(Debug)]
pub(crate) struct Receiving {
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

/// The open connections.
#[derive(Debug)]
pub(crate) struct Connections {
    limit: usize,
    open: Mutex<Registry>,
}

#[derive(Debug, Default)]
struct Registry {
    next: u64,
    by_id: HashMap<u64, Arc<Activity>>,
}

/// What [`Connections::admit`] decided for a new connection.
#[derive(Debug)]
pub(crate) enum Admission {
    /// Serve it; its slot is freed when the [`Slot`] is dropped.
    Admitted(Slot),
    /// Every connection is busy: refuse it.
    Full,
}

impl Connections {
    /// Room for `limit` connections.
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit: limit.max(1),
            open: Mutex::new(Registry::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Connections open now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    /// Takes a slot for a new connection. At the limit, the connection that has been really
    /// idle the longest (a response of it ended and it waits on keep-alive, see
    /// [`Activity::idle_since`]) is told to close and the new one takes its place; when none
    /// is, the new one is refused. Returns also whether one was evicted.
    pub(crate) fn admit(self: &Arc<Self>) -> (Admission, bool) {
        let mut registry = self.lock();
        let mut evicted = false;
        if registry.by_id.len() >= self.limit {
            let oldest = registry
                .by_id
                .iter()
                .filter_map(|(id, a)| a.idle_since().map(|t| (t, *id)))
                .min();
            let Some((_, id)) = oldest else {
                return (Admission::Full, false);
            };
            if let Some(activity) = registry.by_id.remove(&id) {
                activity.close.notify_one();
                evicted = true;
            }
        }
        let id = registry.next;
        registry.next += 1;
        let activity = Arc::new(Activity::new(Instant::now()));
        registry.by_id.insert(id, activity.clone());
        let slot = Slot {
            id,
            activity,
            connections: self.clone(),
        };
        (Admission::Admitted(slot), evicted)
    }
}

/// A connection's place among the open ones; dropping it frees the place.
#[derive(Debug)]
pub(crate) struct Slot {
    id: u64,
    /// What the connection is doing.
    pub(crate) activity: Arc<Activity>,
    connections: Arc<Connections>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.connections.lock().by_id.remove(&self.id);
    }
}

/// A socket that tells its [`Activity`] when bytes arrive.
#[derive(Debug)]
pub(crate) struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl Watched {
    pub(crate) fn new(stream: TcpStream, activity: Arc<Activity>) -> Self {
        Self { stream, activity }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.stream).poll_read(cx, buf))?;
        if buf.filled().len() > before {
            self.activity.heard();
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.activity.wrote(polled.is_pending());
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.activity.wrote(polled.is_pending());
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Admits a connection and answers one request on it: it then waits on keep-alive.
    fn answered_once(connections: &Arc<Connections>) -> Slot {
        let (Admission::Admitted(slot), _) = connections.admit() else {
            panic!("room for a connection");
        };
        drop(slot.activity.begin(false));
        slot
    }

    #[tokio::test(start_paused = true)]
    async fn the_longest_idle_connection_makes_room() {
        let connections = Connections::new(2);
        let first = answered_once(&connections);
        tokio::time::advance(Duration::from_millis(10)).await;
        let second = answered_once(&connections);
        let _busy = second.activity.begin(false);
        // Full: the first (idle on keep-alive) makes room; the second is busy.
        let (Admission::Admitted(third), true) = connections.admit() else {
            panic!("the idle one is evicted");
        };
        assert_eq!(connections.len(), 2);
        let _also_busy = third.activity.begin(true);
        // Every connection is busy: refused.
        assert!(matches!(connections.admit(), (Admission::Full, false)));
        drop(first);
        assert_eq!(connections.len(), 2);
        drop(third);
        assert_eq!(connections.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_before_its_first_answer_is_not_evicted() {
        let connections = Connections::new(2);
        // Just accepted, nothing sent yet.
        let (Admission::Admitted(fresh), false) = connections.admit() else {
            panic!("room for the first");
        };
        // Answered once, then the first bytes of its next request arrive.
        let sending = answered_once(&connections);
        sending.activity.heard();
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(fresh.activity.idle_since(), None);
        assert_eq!(sending.activity.idle_since(), None);
        assert!(
            matches!(connections.admit(), (Admission::Full, false)),
            "neither is idle: the next arrival is refused, not given their place"
        );
        assert_eq!(connections.len(), 2);
        // Once its request is answered, the second waits on keep-alive: idle.
        drop(sending.activity.begin(false));
        assert!(sending.activity.idle_since().is_some());
        let (Admission::Admitted(_third), true) = connections.admit() else {
            panic!("the idle one is evicted");
        };
        drop(fresh);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_reads_nothing_meets_the_send_timeout_even_mid_request() {
        let limits = Limits {
            send_timeout: Duration::from_secs(60),
            ..Limits::default()
        };
        let activity = Arc::new(Activity::new(Instant::now()));
        let (request, _) = activity.begin(false);
        assert_eq!(activity.deadline(&limits), None, "answering: no deadline");
        tokio::time::advance(Duration::from_secs(3)).await;
        activity.wrote(false);
        let last = Instant::now();
        tokio::time::advance(Duration::from_secs(1)).await;
        activity.wrote(true);
        assert_eq!(
            activity.deadline(&limits),
            Some((last + limits.send_timeout, Closed::SendTimeout)),
            "a blocked write counts from the last byte written, request in flight or not"
        );
        // Writes that keep going (a slow reader that reads) move the deadline.
        tokio::time::advance(Duration::from_secs(30)).await;
        activity.wrote(false);
        let later = Instant::now();
        activity.wrote(true);
        assert_eq!(
            activity.deadline(&limits),
            Some((later + limits.send_timeout, Closed::SendTimeout))
        );
        activity.wrote(false);
        assert_eq!(
            activity.deadline(&limits),
            None,
            "unblocked, answering again"
        );
        drop(request);
    }

    #[tokio::test(start_paused = true)]
    async fn deadlines_follow_what_the_connection_does() {
        let limits = Limits {
            header_timeout: Duration::from_secs(10),
            keep_alive: Duration::from_secs(5),
            ..Limits::default()
        };
        let start = Instant::now();
        let activity = Arc::new(Activity::new(start));
        assert_eq!(
            activity.deadline(&limits),
            Some((start + limits.keep_alive, Closed::KeepAlive))
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        activity.heard();
        let heard = Instant::now();
        assert_eq!(
            activity.deadline(&limits),
            Some((heard + limits.header_timeout, Closed::HeaderTimeout))
        );
        let (request, receiving) = activity.begin(true);
        assert_eq!(activity.deadline(&limits), None);
        assert!(activity.only_receiving() && !activity.is_idle());
        drop(receiving);
        assert!(!activity.only_receiving());
        tokio::time::advance(Duration::from_secs(2)).await;
        drop(request);
        let ended = Instant::now();
        assert!(activity.is_idle());
        assert_eq!(
            activity.deadline(&limits),
            Some((ended + limits.keep_alive, Closed::KeepAlive))
        );
        // The end of a response still waits for the client to read it: busy, not idle, and
        // the send timeout counts from the last byte written.
        activity.wrote(false);
        let last = Instant::now();
        activity.wrote(true);
        assert_eq!(
            activity.deadline(&limits),
            Some((last + limits.send_timeout, Closed::SendTimeout))
        );
        assert_eq!(activity.idle_since(), None);
        tokio::time::advance(Duration::from_secs(9)).await;
        activity.wrote(false);
        let written = Instant::now();
        assert_eq!(
            activity.deadline(&limits),
            Some((written + limits.keep_alive, Closed::KeepAlive))
        );
    }
}
