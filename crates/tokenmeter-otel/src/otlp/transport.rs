//! Building the OTLP exporter for the chosen transport.

use std::time::Duration;

use opentelemetry_otlp::{MetricExporter, RetryPolicy, WithExportConfig as _};

use super::{OtlpConfig, OtlpError, Protocol, env};

/// What the exporter is built from, checked on the caller's thread and built on the export
/// thread (gRPC needs its runtime).
pub(crate) struct Settings {
    protocol: Protocol,
    endpoint: Option<String>,
    headers: Vec<(String, String)>,
    timeout: Duration,
}

impl Settings {
    pub(crate) fn new(
        config: &OtlpConfig,
        protocol: Protocol,
        timeout: Duration,
    ) -> Result<Self, OtlpError> {
        let headers = config
            .headers
            .iter()
            .map(|(name, value)| Ok((env::check_header(name, value)?, value.clone())))
            .collect::<Result<_, OtlpError>>()?;
        if !protocol.is_compiled() {
            return Err(OtlpError::TransportDisabled {
                protocol: protocol.as_str(),
                feature: protocol.feature(),
            });
        }
        Ok(Self {
            protocol,
            endpoint: config.endpoint.clone(),
            headers,
            timeout,
        })
    }

    /// Builds the exporter. Must run inside a tokio runtime for gRPC.
    ///
    /// Each export is a single attempt: temporality is cumulative, so the next export carries
    /// the totals again and nothing is lost; retrying an old batch would only make it arrive
    /// after a fresher one.
    pub(crate) fn build(self) -> Result<MetricExporter, OtlpError> {
        match self.protocol {
            Protocol::Grpc => self.grpc(),
            Protocol::HttpProtobuf => self.http(),
        }
    }

    #[cfg(feature = "grpc")]
    fn grpc(self) -> Result<MetricExporter, OtlpError> {
        use opentelemetry_otlp::WithTonicConfig as _;
        use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};

        let mut metadata = MetadataMap::new();
        for (name, value) in &self.headers {
            let key = MetadataKey::<tonic::metadata::Ascii>::from_bytes(name.as_bytes());
            let value = MetadataValue::try_from(value.as_str());
            match (key, value) {
                (Ok(key), Ok(value)) => {
                    metadata.insert(key, value);
                }
                _ => return Err(OtlpError::InvalidHeader { name: name.clone() }),
            }
        }
        let mut builder = MetricExporter::builder()
            .with_tonic()
            .with_protocol(opentelemetry_otlp::Protocol::Grpc)
            .with_timeout(self.timeout)
            .with_retry_policy(RetryPolicy::disabled())
            .with_metadata(metadata);
        if let Some(endpoint) = self.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        builder.build().map_err(OtlpError::Exporter)
    }

    #[cfg(not(feature = "grpc"))]
    fn grpc(self) -> Result<MetricExporter, OtlpError> {
        Err(OtlpError::TransportDisabled {
            protocol: Protocol::Grpc.as_str(),
            feature: Protocol::Grpc.feature(),
        })
    }

    #[cfg(feature = "http")]
    fn http(self) -> Result<MetricExporter, OtlpError> {
        use opentelemetry_otlp::WithHttpConfig as _;

        let mut builder = MetricExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_timeout(self.timeout)
            .with_retry_policy(RetryPolicy::disabled())
            .with_headers(self.headers.into_iter().collect());
        if let Some(endpoint) = self.endpoint {
            builder = builder.with_endpoint(env::http_metrics_url(&endpoint));
        }
        builder.build().map_err(OtlpError::Exporter)
    }

    #[cfg(not(feature = "http"))]
    fn http(self) -> Result<MetricExporter, OtlpError> {
        Err(OtlpError::TransportDisabled {
            protocol: Protocol::HttpProtobuf.as_str(),
            feature: Protocol::HttpProtobuf.feature(),
        })
    }
}
