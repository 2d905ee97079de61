//! [`is_connection_error`]: which errors of an accept concern one connection only.

use std::io;

/// Whether an error of `accept` concerns only the connection being accepted (it was reset or
/// aborted before the accept): the accept loop goes straight on. Any other error (most likely
/// out of files) is the listener's: wait a little before the next accept rather than spin.
///
/// ```
/// use std::io;
/// use tokenmeter_listen::is_connection_error;
///
/// assert!(is_connection_error(&io::ErrorKind::ConnectionAborted.into()));
/// assert!(!is_connection_error(&io::Error::other("too many open files")));
/// ```
pub fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
