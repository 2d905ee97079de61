//! [`ListenerLimits`]: what one client may hold of the `/metrics` listener, and the defaults.

use std::time::Duration;

use tokenmeter_listen::Timeouts;

/// Default time a request's line and headers may take, from their first byte
/// (`tokenmeter serve`'s `--header-timeout`).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a connection may sit with no request: after its accept, or after the end of
/// its last response (`tokenmeter serve`'s `--keep-alive-timeout`, uvicorn's default).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// Default time a response may wait for its client to read, with bytes to write and none
/// written (`tokenmeter serve`'s `--send-timeout`).
pub const DEFAULT_SEND_TIMEOUT: Duration = Duration::from_secs(60);
/// Default most connections open at once. Scrapers are few; this leaves the rest of a small
/// file limit (1,024, or 256 on some systems) to the application.
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;

/// The listener's limits on its clients, set with the [`Builder`](crate::Builder)'s
/// `header_timeout`, `idle_timeout`, `send_timeout` and `max_connections`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ListenerLimits {
    /// A request's line and headers must arrive within this of their first byte.
    pub(crate) header_timeout: Duration,
    /// A connection with no request in flight and no byte received for this long is closed.
    pub(crate) idle_timeout: Duration,
    /// A connection whose client reads nothing for this long, while a write waits, is closed.
    pub(crate) send_timeout: Duration,
    /// Connections open at once (at least 1).
    pub(crate) max_connections: usize,
}

impl ListenerLimits {
    /// The per-connection deadlines.
    pub(crate) fn timeouts(&self) -> Timeouts {
        Timeouts::new(self.header_timeout, self.idle_timeout, self.send_timeout)
    }
}

impl Default for ListenerLimits {
    fn default() -> Self {
        Self {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            send_timeout: DEFAULT_SEND_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}
