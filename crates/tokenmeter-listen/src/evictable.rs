//! [`Evictable`]: which connections a full listener may close to make room for a new one.

/// Which connections may be closed to make room for a new one at the cap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Evictable {
    /// Only a connection that has had a response end and now waits on keep-alive (no byte of
    /// a next request yet): a just-accepted connection, or one whose request head is
    /// arriving, is not idle, and its own deadline closes it if it never sends. An API
    /// server's rule: a client about to send its first request is not cut.
    #[default]
    KeptAlive,
    /// Any connection with no response being made or written, including a just-accepted one
    /// and one whose headers are still arriving: idle and slow clients can never lock out a
    /// new one (a scrape endpoint's rule).
    NotAnswering,
}
