//! [`Error`]: what building or installing the exporter can report.

use std::net::SocketAddr;

use tokenmeter::conventions::BucketError;

use crate::buckets::Metric;

/// An error from configuring buckets, building or installing the exporter.
///
/// Every message says how to fix the problem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A bucket layout without any edge.
    #[error(
        "the bucket edges for {metric} are empty: give at least one edge (seconds for latencies, tokens for token counts)"
    )]
    EmptyBuckets {
        /// The metric whose layout was empty.
        metric: Metric,
    },
    /// A bucket edge that is NaN, infinite or negative.
    #[error(
        "the bucket edge {value} for {metric} is not a finite number >= 0: use values like 0.5 (seconds) or 1024 (tokens); +Inf is always added"
    )]
    InvalidEdge {
        /// The metric the edge was given for.
        metric: Metric,
        /// The edge.
        value: f64,
    },
    /// The vLLM token-count layout needs a context length of at least one token.
    #[error("the context length must be at least 1 token: pass the model's maximum context length")]
    ZeroContextLength,
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
        "a global `metrics` recorder is already installed: install once per process, or use Builder::build_local for a recorder of your own"
    )]
    AlreadyInstalled,
    /// The background runtime for the HTTP listener could not start.
    #[error(
        "could not start the exporter's background runtime: {0}; check the process's thread and file limits"
    )]
    Runtime(String),
}

impl From<BucketError> for Error {
    fn from(error: BucketError) -> Self {
        match error {
            BucketError::InvalidEdge { metric, value } => Error::InvalidEdge { metric, value },
            BucketError::EmptyBuckets { metric } => Error::EmptyBuckets { metric },
        }
    }
}
