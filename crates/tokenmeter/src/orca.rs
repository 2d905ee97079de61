//! ORCA load reports: the `endpoint-load-metrics` response header a model server adds so that a
//! load balancer (Envoy, a gateway's endpoint picker) reads its load from each answer instead of
//! scraping `/metrics`.
//!
//! The header is a format prefix and a report, as Envoy parses it (`source/common/orca`) and as
//! vLLM 0.33 writes it (`vllm/entrypoints/serve/utils/orca_metrics.py`):
//!
//! | Format | Header value |
//! |---|---|
//! | [`OrcaFormat::Text`] | `TEXT named_metrics.kv_cache_usage_perc=0.4, named_metrics.num_requests_waiting=3.0` |
//! | [`OrcaFormat::Json`] | `JSON {"named_metrics": {"kv_cache_usage_perc": 0.4, "num_requests_waiting": 3.0}}` (the JSON form of xDS's `OrcaLoadReport`) |
//!
//! The named metrics are vLLM's two, `kv_cache_usage_perc` (the fraction of the KV cache in use,
//! 0 to 1, as `vllm:kv_cache_usage_perc`) and `num_requests_waiting`, then
//! `num_requests_running` (which vLLM does not send; a balancer ignores names it does not use).
//! Envoy refuses a report with a value that is NaN or infinite: such a value is written as 0.
//! A client asks for a format with the request header `endpoint-load-metrics-format` (`TEXT` or
//! `JSON`, any case), as vLLM reads it ([`OrcaFormat::parse`]).
//!
//! ```
//! use tokenmeter::orca::{LoadReport, OrcaFormat};
//!
//! let report = LoadReport::new(0.4, 3, 8);
//! assert_eq!(
//!     report.header_value(OrcaFormat::Text),
//!     "TEXT named_metrics.kv_cache_usage_perc=0.4, named_metrics.num_requests_waiting=3.0, \
//!      named_metrics.num_requests_running=8.0"
//! );
//! assert_eq!(OrcaFormat::parse("json"), Some(OrcaFormat::Json));
//! ```

use std::fmt::Write as _;

/// The response header that carries the report.
pub const HEADER: &str = "endpoint-load-metrics";

/// The request header a client names the format it wants in (vLLM's).
pub const FORMAT_HEADER: &str = "endpoint-load-metrics-format";

/// How the report is written: Envoy's native text or JSON form (the binary form, `BIN `, is
/// not written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OrcaFormat {
    /// `TEXT name=value, name=value`.
    Text,
    /// `JSON {"named_metrics": {...}}`.
    Json,
}

impl OrcaFormat {
    /// The format named `text` or `json` (any case, surrounding spaces ignored), as vLLM reads
    /// the `endpoint-load-metrics-format` request header; `None` for anything else.
    ///
    /// ```
    /// use tokenmeter::orca::OrcaFormat;
    /// assert_eq!(OrcaFormat::parse(" TEXT "), Some(OrcaFormat::Text));
    /// assert_eq!(OrcaFormat::parse("bin"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Self> {
        let name = name.trim();
        if name.eq_ignore_ascii_case("text") {
            Some(OrcaFormat::Text)
        } else if name.eq_ignore_ascii_case("json") {
            Some(OrcaFormat::Json)
        } else {
            None
        }
    }

    /// The format of the answer to a request: the one it `asked` for in its
    /// `endpoint-load-metrics-format` header (as vLLM: a value other than `TEXT` or `JSON`,
    /// or one that is not text, gets no report), else the server's `default`.
    ///
    /// ```
    /// use tokenmeter::orca::OrcaFormat;
    /// let default = Some(OrcaFormat::Json);
    /// assert_eq!(OrcaFormat::for_request(None, default), default);
    /// assert_eq!(OrcaFormat::for_request(Some(b"TEXT"), default), Some(OrcaFormat::Text));
    /// assert_eq!(OrcaFormat::for_request(Some(b"BIN"), default), None);
    /// ```
    pub fn for_request(asked: Option<&[u8]>, default: Option<Self>) -> Option<Self> {
        match asked {
            Some(asked) => std::str::from_utf8(asked).ok().and_then(Self::parse),
            None => default,
        }
    }

    /// `TEXT` or `JSON`, the header value's prefix.
    pub const fn as_str(self) -> &'static str {
        match self {
            OrcaFormat::Text => "TEXT",
            OrcaFormat::Json => "JSON",
        }
    }
}

/// An engine's load at one moment, as an ORCA report names it.
///
/// ```
/// use tokenmeter::orca::{LoadReport, OrcaFormat};
///
/// let report = LoadReport::new(0.25, 0, 2);
/// assert_eq!(
///     report.header_value(OrcaFormat::Json),
///     r#"JSON {"named_metrics": {"kv_cache_usage_perc": 0.25, "num_requests_waiting": 0.0, "num_requests_running": 2.0}}"#
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct LoadReport {
    /// The fraction of the KV cache in use, 0 to 1 (`kv_cache_usage_perc`).
    pub kv_cache_usage: f64,
    /// Requests waiting to be scheduled (`num_requests_waiting`).
    pub waiting: u64,
    /// Requests running (`num_requests_running`).
    pub running: u64,
}

impl LoadReport {
    /// A report of `kv_cache_usage` (a fraction), `waiting` and `running` requests.
    pub const fn new(kv_cache_usage: f64, waiting: u64, running: u64) -> Self {
        Self {
            kv_cache_usage,
            waiting,
            running,
        }
    }

    /// The named metrics, in the order they are written.
    fn named(&self) -> [(&'static str, f64); 3] {
        let usage = if self.kv_cache_usage.is_finite() {
            self.kv_cache_usage
        } else {
            0.0
        };
        [
            ("kv_cache_usage_perc", usage),
            ("num_requests_waiting", self.waiting as f64),
            ("num_requests_running", self.running as f64),
        ]
    }

    /// The value of the `endpoint-load-metrics` header in `format`. Names are ASCII and values
    /// finite numbers, so the value is always a valid header value.
    pub fn header_value(&self, format: OrcaFormat) -> String {
        let mut out = String::with_capacity(160);
        out.push_str(format.as_str());
        out.push(' ');
        match format {
            OrcaFormat::Text => {
                for (at, (name, value)) in self.named().into_iter().enumerate() {
                    let comma = if at == 0 { "" } else { ", " };
                    let _ = write!(out, "{comma}named_metrics.{name}={value:?}");
                }
            }
            OrcaFormat::Json => {
                out.push_str(r#"{"named_metrics": {"#);
                for (at, (name, value)) in self.named().into_iter().enumerate() {
                    let comma = if at == 0 { "" } else { ", " };
                    let _ = write!(out, r#"{comma}"{name}": {value:?}"#);
                }
                out.push_str("}}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_envoy_refuses_are_never_written() {
        for usage in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let text = LoadReport::new(usage, 1, 1).header_value(OrcaFormat::Text);
            assert!(
                text.starts_with("TEXT named_metrics.kv_cache_usage_perc=0.0,"),
                "{text}"
            );
        }
        let tiny = LoadReport::new(1e-9, u64::MAX, 0).header_value(OrcaFormat::Json);
        assert!(tiny.contains(r#""kv_cache_usage_perc": 1e-9"#), "{tiny}");
        assert!(
            tiny.contains(r#""num_requests_waiting": 1.8446744073709552e19"#),
            "{tiny}"
        );
    }

    #[test]
    fn only_text_and_json_are_formats() {
        for (name, format) in [
            ("TEXT", Some(OrcaFormat::Text)),
            ("Json", Some(OrcaFormat::Json)),
            ("BIN", None),
            ("", None),
            ("text/plain", None),
        ] {
            assert_eq!(OrcaFormat::parse(name), format, "{name}");
        }
    }
}
