//! [`ListenerStats`]: what the `/metrics` listener of [`Builder::install`](crate::Builder::install)
//! did with its connections, counted as it happens.

use std::sync::atomic::{AtomicU64, Ordering};

use tokenmeter_listen::Expired;

/// Why the listener closed a connection (or never served it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    /// Its request line and headers did not arrive within the header timeout.
    HeaderTimeout,
    /// No request came within the idle timeout.
    IdleTimeout,
    /// Its client read nothing for the send timeout while a response waited.
    SendTimeout,
    /// Closed to make room for a new connection at the cap.
    Evicted,
    /// Refused at the cap (every connection was answering): answered 503, or closed at once
    /// when too many refusals were already being answered.
    Refused,
}

impl From<Expired> for Closed {
    fn from(expired: Expired) -> Self {
        match expired {
            Expired::HeaderTimeout => Closed::HeaderTimeout,
            Expired::IdleTimeout => Closed::IdleTimeout,
            Expired::SendTimeout => Closed::SendTimeout,
        }
    }
}

/// Counts of the listener's connections since it started, from [`Handle::listener_stats`].
///
/// Every accepted connection is served, or refused and counted in `refused`; every
/// connection the listener closes is counted under its reason.
///
/// [`Handle::listener_stats`]: crate::Handle::listener_stats
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListenerStats {
    /// Connections accepted (served or refused).
    pub accepted: u64,
    /// Connections refused at the cap because every connection was answering a scrape: each
    /// got `503 Service Unavailable` (or, past 64 refusals being answered at once, was closed
    /// without one).
    pub refused: u64,
    /// Idle connections (no response under way) closed to make room for a new one at the cap.
    pub evicted: u64,
    /// Connections closed because their request's headers took longer than the header timeout.
    pub header_timeouts: u64,
    /// Connections closed after the idle timeout without a request.
    pub idle_timeouts: u64,
    /// Connections closed because their client read nothing for the send timeout.
    pub send_timeouts: u64,
    /// Connections open now.
    pub open: u64,
    /// Requests received (their headers complete).
    pub received: u64,
    /// Requests answered (any status).
    pub answered: u64,
}

/// The listener's counters, shared by its tasks and the [`Handle`](crate::Handle).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    accepted: AtomicU64,
    refused: AtomicU64,
    evicted: AtomicU64,
    header_timeouts: AtomicU64,
    idle_timeouts: AtomicU64,
    send_timeouts: AtomicU64,
    open: AtomicU64,
    received: AtomicU64,
    answered: AtomicU64,
}

impl Counters {
    pub(crate) fn accepted(&self) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn received(&self) {
        self.received.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn answered(&self) {
        self.answered.fetch_add(1, Ordering::Relaxed);
    }

    /// A connection is served from now on; [`Counters::ended`] when it ends.
    pub(crate) fn opened(&self) {
        self.open.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn ended(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn closed(&self, why: Closed) {
        let counter = match why {
            Closed::HeaderTimeout => &self.header_timeouts,
            Closed::IdleTimeout => &self.idle_timeouts,
            Closed::SendTimeout => &self.send_timeouts,
            Closed::Evicted => &self.evicted,
            Closed::Refused => &self.refused,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> ListenerStats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ListenerStats {
            accepted: load(&self.accepted),
            refused: load(&self.refused),
            evicted: load(&self.evicted),
            header_timeouts: load(&self.header_timeouts),
            idle_timeouts: load(&self.idle_timeouts),
            send_timeouts: load(&self.send_timeouts),
            open: load(&self.open),
            received: load(&self.received),
            answered: load(&self.answered),
        }
    }
}
