//! [`Timeouts`]: how long a connection may take over each thing a client does, and
//! [`Expired`], which of them closed it.

use std::time::Duration;

/// The deadlines of one connection.
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_listen::Timeouts;
///
/// let timeouts = Timeouts::new(Duration::from_secs(10), Duration::from_secs(5), Duration::from_secs(60));
/// assert_eq!(timeouts.idle, Duration::from_secs(5));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Timeouts {
    /// A request's line and headers must arrive within this of their first byte (bytes that
    /// keep trickling in do not extend it).
    pub header: Duration,
    /// A connection with no request in flight and no byte received for this long is closed
    /// (from its accept, the end of its last response, or its last byte written).
    pub idle: Duration,
    /// A connection whose client reads nothing for this long, while a write waits, is closed
    /// (from the last byte written).
    pub send: Duration,
}

impl Timeouts {
    /// The header, idle and send timeouts.
    pub const fn new(header: Duration, idle: Duration, send: Duration) -> Self {
        Self { header, idle, send }
    }
}

/// Which deadline of a connection passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Expired {
    /// Its request line and headers did not arrive within [`Timeouts::header`].
    HeaderTimeout,
    /// No request came within [`Timeouts::idle`].
    IdleTimeout,
    /// Its client read nothing for [`Timeouts::send`] while a write waited.
    SendTimeout,
}
