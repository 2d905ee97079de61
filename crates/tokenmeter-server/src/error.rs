//! [`Error`]: why a server cannot start or did not stop.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// Why a server could not start, or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The address could not be bound.
    #[error(
        "cannot listen on {addr}: is another server using the port? Pick another address (port 0 \
         takes any free one)"
    )]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// The listener given has no local address (it is not bound).
    #[error("the listener has no local address: bind it first")]
    LocalAddr(#[source] io::Error),
    /// The simulator cannot run with this configuration (the message names the setting).
    #[error(transparent)]
    Sim(#[from] tokenmeter_sim::ConfigError),
    /// The Prometheus exporter could not be built (for example an SLO threshold that is not a
    /// valid bucket edge).
    #[error(transparent)]
    Metrics(#[from] tokenmeter_prometheus::Error),
    /// The tokenizer file of `Config::tokenizer` cannot be used.
    #[error(transparent)]
    Tokenizer(#[from] crate::tokenizer::TokenizerError),
    /// The server's task panicked or was cancelled.
    #[error("the server task failed")]
    Task(#[source] tokio::task::JoinError),
    /// The server did not stop within its grace and margins; it was aborted.
    #[error("the server did not stop within {limit:?} of the shutdown; it was aborted")]
    StopTimeout {
        /// How long the shutdown waited.
        limit: Duration,
    },
}
