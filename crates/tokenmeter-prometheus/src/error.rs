//! [`Error`]: what building or installing the exporter can report.

use std::net::SocketAddr;

use tokenmeter::conventions::BucketError;

/// An error from configuring buckets, building or installing the exporter.
///
/// Every message says how to fix the problem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A bucket setting that was refused (an invalid or missing edge, a zero context length).
    #[error(transparent)]
    Buckets(#[from] BucketError),
    /// A profile name that is neither `semconv` nor `vllm`.
    #[error(
        "unknown metrics profile {0:?}: use \"semconv\" (OpenTelemetry GenAI names) or \"vllm\""
    )]
    UnknownProfile(String),
    /// The HTTP listener could not bind its address.
    #[error(
        "could not listen on {addr} for /metrics: {reason}; choose a free address with Builder::listen, or serve Handle::render yourself"
    )]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why binding failed.
        reason: String,
    },
    /// Another `metrics` recorder is already installed in this process.
    #[error(
        "a global `metrics` recorder is already installed: install once per process, or use Builder::build_recorder for a recorder of your own"
    )]
    AlreadyInstalled,
    /// The background runtime for the HTTP listener could not start.
    #[error(
        "could not start the exporter's background runtime: {0}; check the process's thread and file limits"
    )]
    Runtime(String),
}
