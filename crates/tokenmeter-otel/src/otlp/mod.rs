//! The OTLP pipeline helper: [`OtlpConfig`] → [`OtlpPipeline`] (a meter provider with a
//! periodic reader and an OTLP exporter over gRPC or HTTP/protobuf) → [`OtelSink`](crate::OtelSink).

mod config;
mod env;
mod error;
mod pipeline;
mod report;
mod transport;

pub use config::OtlpConfig;
pub use error::OtlpError;
pub use pipeline::{DEFAULT_SHUTDOWN_WAIT, OtlpPipeline};
pub use report::ExportStats;

use std::fmt;

/// The OTLP transport.
///
/// # Examples
///
/// ```
/// use tokenmeter_otel::Protocol;
/// assert_eq!(Protocol::parse("http/protobuf"), Some(Protocol::HttpProtobuf));
/// assert_eq!(Protocol::Grpc.as_str(), "grpc");
/// assert_eq!(Protocol::parse("http/json"), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Protocol {
    /// OTLP/gRPC (tonic), default port 4317. Feature `grpc`.
    Grpc,
    /// OTLP/HTTP with protobuf bodies, default port 4318. Feature `http`.
    HttpProtobuf,
}

impl Protocol {
    /// `grpc` or `http/protobuf`: the values of `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http/protobuf",
        }
    }

    /// Parses a value of `OTEL_EXPORTER_OTLP_PROTOCOL`; `http/json` is not supported.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "grpc" => Some(Protocol::Grpc),
            "http/protobuf" => Some(Protocol::HttpProtobuf),
            _ => None,
        }
    }

    /// True when this transport was compiled in.
    pub const fn is_compiled(self) -> bool {
        match self {
            Protocol::Grpc => cfg!(feature = "grpc"),
            Protocol::HttpProtobuf => cfg!(feature = "http"),
        }
    }

    const fn feature(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http",
        }
    }
}

impl Default for Protocol {
    /// `http/protobuf` (the OpenTelemetry default) when compiled in, else `grpc`.
    fn default() -> Self {
        if cfg!(feature = "http") {
            Protocol::HttpProtobuf
        } else {
            Protocol::Grpc
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
