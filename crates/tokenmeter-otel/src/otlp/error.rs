//! [`OtlpError`]: what setting up, flushing or shutting down the OTLP pipeline can fail with.

use std::time::Duration;

/// An error from [`OtlpConfig::install`](super::OtlpConfig::install),
/// [`OtlpPipeline::flush`](super::OtlpPipeline::flush) or
/// [`OtlpPipeline::shutdown`](super::OtlpPipeline::shutdown).
///
/// Failed *exports* are not errors of any call: they are reported through `tracing` (target
/// `tokenmeter_otel`) and counted in [`ExportStats`](super::ExportStats), and the next export
/// carries the cumulative totals again. Messages never contain header values.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// The protocol named by an environment variable is not one this crate speaks.
    #[error(
        "unsupported OTLP protocol `{value}` in {variable}: set it to `grpc` or `http/protobuf` \
         (http/json is not supported), or choose one with `OtlpConfig::protocol`"
    )]
    UnsupportedProtocol {
        /// The value found.
        value: String,
        /// The environment variable it came from.
        variable: &'static str,
    },
    /// The chosen transport was not compiled in.
    #[error(
        "the OTLP {protocol} transport is not compiled in: enable the `{feature}` feature of \
         tokenmeter-otel, or choose the other protocol"
    )]
    TransportDisabled {
        /// `grpc` or `http/protobuf`.
        protocol: &'static str,
        /// The cargo feature that brings it.
        feature: &'static str,
    },
    /// A header name (or value) is not valid in an HTTP/2 or HTTP/1 header. The value is never
    /// printed: it may be a secret.
    #[error(
        "invalid OTLP header `{name}`: header names must be lowercase ASCII tokens and values \
         visible ASCII (the value is not shown)"
    )]
    InvalidHeader {
        /// The header name as given.
        name: String,
    },
    /// The OTLP exporter could not be built (usually a malformed endpoint URL).
    #[error(
        "could not build the OTLP metric exporter: {0}; check the endpoint given to \
         `OtlpConfig::endpoint` or OTEL_EXPORTER_OTLP_ENDPOINT / \
         OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (for example `http://127.0.0.1:4317`)"
    )]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
    /// The export thread or its tokio runtime could not be started.
    #[error(
        "could not start the OTLP export thread: {0}; the process may be out of threads or \
         memory"
    )]
    Thread(#[source] std::io::Error),
    /// A flush did not finish in the time given.
    #[error(
        "the OTLP flush did not finish within {0:?}: the receiver is slow or unreachable; \
         metrics are kept and the next export sends them"
    )]
    FlushTimedOut(Duration),
    /// The shutdown's final export did not finish in the time given.
    #[error(
        "the OTLP shutdown did not finish within {0:?}: the receiver is slow or unreachable, \
         the last interval's metrics may be lost; give `shutdown` a longer wait"
    )]
    ShutdownTimedOut(Duration),
    /// The SDK reported a failed flush or shutdown (for example the final export failed).
    #[error("the OTLP {operation} failed: {message}")]
    Sdk {
        /// `flush` or `shutdown`.
        operation: &'static str,
        /// What the SDK said.
        message: String,
    },
}
