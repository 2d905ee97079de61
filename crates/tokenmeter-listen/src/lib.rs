//! Connection management for tokenmeter's HTTP/1 listeners (`tokenmeter serve`'s server and
//! the Prometheus exporter's `/metrics` listener): one implementation of
//!
//! - per-connection deadlines, each from what the client does: the header timeout from the
//!   first byte of a request (bytes that keep trickling in do not extend it), the idle
//!   timeout from the accept or the end of the last response, and the send timeout while a
//!   write waits for a client that reads nothing ([`Activity::deadline`],
//!   [`Activity::expired`]), told by a socket wrapper ([`Watched`]);
//! - a connection cap that, when full, closes the least recently active idle connection to
//!   make room ([`Connections::admit`], under an [`Evictable`] rule), or else refuses the new
//!   one ([`Admission::Full`]) for the caller to answer;
//! - which accept errors concern one connection only ([`is_connection_error`]).
//!
//! hyper's own `header_read_timeout` starts when a connection goes idle, so it would also cut
//! keep-alive connections at the header timeout; these deadlines keep the two apart. What to
//! answer a refused connection, and how to count closes, is the caller's.
//!
//! # A connection's watchdog
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use tokenmeter_listen::{Admission, Connections, Evictable, Expired, Timeouts, Watched};
//! use tokio::io::AsyncReadExt as _;
//! use tokio::net::TcpStream;
//!
//! /// Serves `stream` (here: reads it to its end) until it ends, its deadline passes or it
//! /// is evicted; says which deadline closed it, if one did.
//! async fn serve(stream: TcpStream, connections: &Arc<Connections>) -> Option<Expired> {
//!     let timeouts = Timeouts::new(Duration::from_secs(10), Duration::from_secs(5), Duration::from_secs(60));
//!     let Admission::Admitted { slot, .. } = connections.admit() else {
//!         return None; // at the cap with none idle: answer 503 and close
//!     };
//!     let activity = slot.activity().clone();
//!     let mut io = Watched::new(stream, activity.clone());
//!     // In a server, hyper's `serve_connection(TokioIo::new(io), service)`; the service calls
//!     // `activity.begin(..)` for each request and drops the `InFlight` with the response.
//!     let mut sink = Vec::new();
//!     tokio::select! {
//!         _ = io.read_to_end(&mut sink) => None,
//!         () = activity.evicted() => None,
//!         why = activity.expired(&timeouts) => Some(why),
//!     }
//! }
//! # let _ = serve;
//! # let _ = Connections::new(8, Evictable::KeptAlive);
//! ```

#![forbid(unsafe_code)]

mod accept;
mod activity;
mod evictable;
mod registry;
#[cfg(test)]
mod tests;
mod timeouts;
mod watched;

pub use accept::is_connection_error;
pub use activity::{Activity, InFlight, Receiving};
pub use evictable::Evictable;
pub use registry::{Admission, Connections, Slot};
pub use timeouts::{Expired, Timeouts};
pub use watched::Watched;

// The README's example runs with the doc tests, so the page crates.io shows stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
