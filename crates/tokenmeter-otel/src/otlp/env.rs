//! The standard `OTEL_*` environment variables this crate resolves itself. Endpoint and headers
//! variables are read by `opentelemetry-otlp` when the code does not set them.

use std::time::Duration;

use super::{OtlpError, Protocol};

/// `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL`, preferred over [`PROTOCOL`].
pub(crate) const METRICS_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL";
/// `OTEL_EXPORTER_OTLP_PROTOCOL`.
pub(crate) const PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
/// `OTEL_EXPORTER_OTLP_METRICS_TIMEOUT` (milliseconds), preferred over [`TIMEOUT`].
pub(crate) const METRICS_TIMEOUT: &str = "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT";
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds).
pub(crate) const TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";
/// `OTEL_METRIC_EXPORT_INTERVAL` (milliseconds).
pub(crate) const EXPORT_INTERVAL: &str = "OTEL_METRIC_EXPORT_INTERVAL";

/// The OTLP default export timeout.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The OpenTelemetry default export interval.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

fn millis(name: &str) -> Option<Duration> {
    var(name)?
        .parse::<u64>()
        .ok()
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis)
}

/// The protocol from the environment, `None` when neither variable is set.
pub(crate) fn protocol() -> Result<Option<Protocol>, OtlpError> {
    for variable in [METRICS_PROTOCOL, PROTOCOL] {
        if let Some(value) = var(variable) {
            return Protocol::parse(&value)
                .map(Some)
                .ok_or(OtlpError::UnsupportedProtocol { value, variable });
        }
    }
    Ok(None)
}

/// The export timeout: the metrics variable, then the generic one, then 10 s.
pub(crate) fn timeout() -> Duration {
    millis(METRICS_TIMEOUT)
        .or_else(|| millis(TIMEOUT))
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// The export interval: `OTEL_METRIC_EXPORT_INTERVAL`, then 60 s.
pub(crate) fn interval() -> Duration {
    millis(EXPORT_INTERVAL).unwrap_or(DEFAULT_INTERVAL)
}

/// An HTTP endpoint given in code as a base URL (`http://host:4318`) gets the metrics path
/// appended, like `OTEL_EXPORTER_OTLP_ENDPOINT`; a URL with a path is kept as it is.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) fn http_metrics_url(endpoint: &str) -> String {
    let trimmed = endpoint.trim();
    let after_scheme = trimmed.find("://").map_or(0, |i| i + 3);
    match trimmed[after_scheme..].find('/') {
        None => format!("{trimmed}/v1/metrics"),
        Some(i) if after_scheme + i + 1 == trimmed.len() => format!("{trimmed}v1/metrics"),
        Some(_) => trimmed.to_owned(),
    }
}

/// Checks a header: a lowercase token name, a visible-ASCII value. Returns the name lowercased.
pub(crate) fn check_header(name: &str, value: &str) -> Result<String, OtlpError> {
    let lower = name.trim().to_ascii_lowercase();
    let name_ok = !lower.is_empty()
        && lower
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.!#$%&'*+^`|~".contains(&b));
    let value_ok = value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
    if name_ok && value_ok {
        Ok(lower)
    } else {
        Err(OtlpError::InvalidHeader {
            name: name.chars().take(64).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_get_the_metrics_path() {
        assert_eq!(
            http_metrics_url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/metrics"
        );
        assert_eq!(
            http_metrics_url("http://127.0.0.1:4318/"),
            "http://127.0.0.1:4318/v1/metrics"
        );
        assert_eq!(
            http_metrics_url("http://collector/custom/path"),
            "http://collector/custom/path"
        );
    }

    #[test]
    fn headers_are_checked_without_echoing_values() {
        assert_eq!(check_header("X-Api-Key", "secret").unwrap(), "x-api-key");
        let err = check_header("bad name", "secret").unwrap_err().to_string();
        assert!(err.contains("bad name") && !err.contains("secret"), "{err}");
        let err = check_header("x-key", "line\nbreak-secret")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("secret"), "{err}");
    }
}
