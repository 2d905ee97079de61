//! [`Activity`]: what one connection is doing, and when it must be closed; [`Watched`], its
//! socket, which tells the activity when bytes arrive and when a write must wait.

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

use super::limits::ListenerLimits;
use super::stats::Closed;

/// What one connection is doing.
#[derive(Debug)]
pub(crate) struct Activity {
    state: Mutex<State>,
    /// Set while the connection waits for the first byte of its next request.
    awaiting_first_byte: AtomicBool,
    /// Set while a write waits for the client to read (its buffers are full).
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
    /// Requests whose response has not been dropped by hyper.
    in_flight: usize,
    /// The accept, or the end of the last response.
    idle_since: Instant,
    /// The first byte received since `idle_since`.
    first_byte: Option<Instant>,
}

impl Activity {
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            state: Mutex::new(State {
                in_flight: 0,
                idle_since: now,
                first_byte: None,
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

    /// A write returned: `blocked` when it must wait for the client to read.
    pub(crate) fn wrote(&self, blocked: bool) {
        if !blocked {
            let nanos = u64::try_from(self.born.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.last_write.store(nanos, Ordering::Relaxed);
        }
        if self.write_blocked.swap(blocked, Ordering::Relaxed) != blocked {
            self.changed.notify_one();
        }
    }

    /// A request's headers are complete: it is in flight until the [`InFlight`] is dropped
    /// (with its response body).
    pub(crate) fn begin(self: &Arc<Self>) -> InFlight {
        let mut state = self.lock();
        state.in_flight += 1;
        state.first_byte = None;
        drop(state);
        self.changed.notify_one();
        InFlight {
            activity: self.clone(),
        }
    }

    fn last_write(&self) -> Instant {
        self.born + Duration::from_nanos(self.last_write.load(Ordering::Relaxed))
    }

    /// When the connection must be closed, and why: while a write waits, the send timeout from
    /// the last byte written; while a response is being made, never; with no request, the idle
    /// timeout from the accept or the last response (or its last byte written), until a
    /// request's first byte arrives, and then the header timeout from that byte.
    pub(crate) fn deadline(&self, limits: &ListenerLimits) -> Option<(Instant, Closed)> {
        let state = *self.lock();
        if self.write_blocked.load(Ordering::Relaxed) {
            return Some((self.last_write() + limits.send_timeout, Closed::SendTimeout));
        }
        if state.in_flight > 0 {
            return None;
        }
        Some(match state.first_byte {
            Some(first) => (first + limits.header_timeout, Closed::HeaderTimeout),
            None => (
                state.idle_since.max(self.last_write()) + limits.idle_timeout,
                Closed::IdleTimeout,
            ),
        })
    }

    /// When the connection was last active, if it is idle (no response being made or
    /// written; a request whose headers are still arriving counts as idle): the latest of its
    /// accept, the end of its last response and its last byte written. A just-accepted
    /// connection is the most recently active of all.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        let state = self.lock();
        let idle = state.in_flight == 0 && !self.write_blocked.load(Ordering::Relaxed);
        idle.then(|| state.idle_since.max(self.last_write()))
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
            self.activity
                .awaiting_first_byte
                .store(true, Ordering::Relaxed);
        }
        drop(state);
        self.activity.changed.notify_one();
    }
}

/// A socket that tells its [`Activity`] when bytes arrive and when a write waits.
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

    #[tokio::test(start_paused = true)]
    async fn deadlines_follow_what_the_connection_does() {
        let limits = ListenerLimits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(5),
            send_timeout: Duration::from_secs(60),
            max_connections: 8,
        };
        let start = Instant::now();
        let activity = Arc::new(Activity::new(start));
        assert_eq!(
            activity.deadline(&limits),
            Some((start + limits.idle_timeout, Closed::IdleTimeout))
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        activity.heard();
        let heard = Instant::now();
        assert_eq!(
            activity.deadline(&limits),
            Some((heard + limits.header_timeout, Closed::HeaderTimeout)),
            "a request's first byte starts the header timeout"
        );
        // More bytes do not move it (a client trickling its headers).
        tokio::time::advance(Duration::from_secs(1)).await;
        activity.heard();
        assert_eq!(
            activity.deadline(&limits),
            Some((heard + limits.header_timeout, Closed::HeaderTimeout))
        );
        let request = activity.begin();
        assert_eq!(activity.deadline(&limits), None, "answering: no deadline");
        assert_eq!(activity.idle_since(), None, "answering: not idle");
        activity.wrote(false);
        let last = Instant::now();
        activity.wrote(true);
        assert_eq!(
            activity.deadline(&limits),
            Some((last + limits.send_timeout, Closed::SendTimeout)),
            "a write that waits counts from the last byte written"
        );
        activity.wrote(false);
        tokio::time::advance(Duration::from_secs(2)).await;
        drop(request);
        let ended = Instant::now();
        assert_eq!(activity.idle_since(), Some(ended));
        assert_eq!(
            activity.deadline(&limits),
            Some((ended + limits.idle_timeout, Closed::IdleTimeout))
        );
    }
}
