//! [`OtlpConfig`]: where and how often to export, set in code or by the standard environment
//! variables.

use std::fmt;
use std::time::Duration;

use opentelemetry::KeyValue;

use super::{OtlpError, OtlpPipeline, Protocol, env};
use crate::{HistogramAggregation, OtelSinkBuilder};

/// The OTLP pipeline's settings. Everything not set in code comes from the standard
/// environment variables, then from the OpenTelemetry defaults:
///
/// | Setting | Code | Environment | Default |
/// |---|---|---|---|
/// | protocol | [`protocol`](Self::protocol) | `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL`, `OTEL_EXPORTER_OTLP_PROTOCOL` | `http/protobuf` (or `grpc` when only the `grpc` feature is on) |
/// | endpoint | [`endpoint`](Self::endpoint) | `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT` | `http://localhost:4318/v1/metrics`, `http://localhost:4317` |
/// | headers | [`header`](Self::header) | `OTEL_EXPORTER_OTLP_METRICS_HEADERS`, `OTEL_EXPORTER_OTLP_HEADERS` | none |
/// | export timeout | [`timeout`](Self::timeout) | `OTEL_EXPORTER_OTLP_METRICS_TIMEOUT`, `OTEL_EXPORTER_OTLP_TIMEOUT` (ms) | 10 s |
/// | export interval | [`interval`](Self::interval) | `OTEL_METRIC_EXPORT_INTERVAL` (ms) | 60 s |
/// | `service.name` | [`service_name`](Self::service_name) | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` | `unknown_service` |
///
/// Header values (API keys) are never logged nor shown in errors or `Debug` output.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_otel::{OtlpConfig, Protocol};
///
/// let config = OtlpConfig::new()
///     .protocol(Protocol::Grpc)
///     .endpoint("http://127.0.0.1:4317")
///     .header("x-api-key", "not-shown")
///     .interval(Duration::from_secs(10))
///     .service_name("chat-gateway");
/// assert!(!format!("{config:?}").contains("not-shown"));
/// ```
#[derive(Clone)]
pub struct OtlpConfig {
    pub(crate) protocol: Option<Protocol>,
    pub(crate) endpoint: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) interval: Option<Duration>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) service_name: Option<String>,
    pub(crate) resource: Vec<KeyValue>,
    pub(crate) histograms: HistogramAggregation,
    pub(crate) cardinality_limit: Option<usize>,
    pub(crate) sink: OtelSinkBuilder,
}

impl Default for OtlpConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl OtlpConfig {
    /// Settings from the environment and the defaults.
    pub fn new() -> Self {
        Self {
            protocol: None,
            endpoint: None,
            headers: Vec::new(),
            interval: None,
            timeout: None,
            service_name: None,
            resource: Vec::new(),
            histograms: HistogramAggregation::Explicit,
            cardinality_limit: None,
            sink: OtelSinkBuilder::default(),
        }
    }

    /// The transport: gRPC or HTTP/protobuf.
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// The receiver's URL. For gRPC: `http://host:4317`. For HTTP a base URL
    /// (`http://host:4318`) gets `/v1/metrics` appended; a URL with a path is used as it is.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// Adds a header (gRPC metadata) sent with every export, for example an API key. Merged
    /// with `OTEL_EXPORTER_OTLP_HEADERS`.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The time between two exports. Zero keeps the environment's value or the default.
    pub fn interval(mut self, every: Duration) -> Self {
        self.interval = Some(every).filter(|d| !d.is_zero());
        self
    }

    /// The longest one export may take, retries included; past it the export is abandoned
    /// and counted as failed. Zero keeps the environment's value or the default.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit).filter(|d| !d.is_zero());
        self
    }

    /// The resource attribute `service.name`.
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// Adds a resource attribute (`deployment.environment.name`, `service.version`, ...).
    pub fn resource_attribute(
        mut self,
        key: impl Into<opentelemetry::Key>,
        value: impl Into<opentelemetry::Value>,
    ) -> Self {
        self.resource.push(KeyValue::new(key, value));
        self
    }

    /// Histograms with explicit buckets (the default, semconv bucket advice) or base-2
    /// exponential buckets.
    pub fn histograms(mut self, aggregation: HistogramAggregation) -> Self {
        self.histograms = aggregation;
        self
    }

    /// The SDK's cap on attribute sets per instrument (default
    /// [`DEFAULT_CARDINALITY_LIMIT`](crate::DEFAULT_CARDINALITY_LIMIT)). Zero keeps the default.
    pub fn cardinality_limit(mut self, limit: usize) -> Self {
        self.cardinality_limit = Some(limit).filter(|&l| l > 0);
        self
    }

    /// The sink's settings: bucket layouts and extra edges, and the conventions table (the
    /// default, [`Conventions::current`](tokenmeter::conventions::Conventions::current), leaves
    /// out the superseded GenAI client names; see [`OtelSinkBuilder::conventions`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::conventions::Conventions;
    /// use tokenmeter_otel::{OtelSink, OtlpConfig};
    ///
    /// // for dashboards that still read gen_ai.client.operation.* and gen_ai.client.token.usage
    /// let config = OtlpConfig::new().sink(OtelSink::builder().conventions(Conventions::default()));
    /// # drop(config);
    /// ```
    pub fn sink(mut self, sink: OtelSinkBuilder) -> Self {
        self.sink = sink;
        self
    }

    /// Starts the pipeline: an export thread with its own small tokio runtime, a periodic
    /// reader, the OTLP exporter and the sink's instruments. Works from `main` and from any
    /// tokio runtime; nothing is sent until the first interval (or a flush).
    ///
    /// # Errors
    ///
    /// An unsupported protocol in the environment, a transport not compiled in, an invalid
    /// header, a malformed endpoint, invalid bucket edges, or no thread to run on.
    pub fn install(self) -> Result<OtlpPipeline, OtlpError> {
        OtlpPipeline::start(self)
    }

    pub(crate) fn resolved_protocol(&self) -> Result<Protocol, OtlpError> {
        match self.protocol {
            Some(protocol) => Ok(protocol),
            None => Ok(env::protocol()?.unwrap_or_default()),
        }
    }

    pub(crate) fn resolved_timeout(&self) -> Duration {
        self.timeout.unwrap_or_else(env::timeout)
    }

    pub(crate) fn resolved_interval(&self) -> Duration {
        self.interval.unwrap_or_else(env::interval)
    }
}

impl fmt::Debug for OtlpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("OtlpConfig")
            .field("protocol", &self.protocol)
            .field("endpoint", &self.endpoint)
            .field("header_names", &header_names)
            .field("interval", &self.interval)
            .field("timeout", &self.timeout)
            .field("service_name", &self.service_name)
            .field("resource", &self.resource)
            .field("histograms", &self.histograms)
            .field("cardinality_limit", &self.cardinality_limit)
            .field("sink", &self.sink)
            .finish()
    }
}
