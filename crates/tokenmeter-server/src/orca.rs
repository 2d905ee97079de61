//! ORCA load reports on the answers of the generation routes (chat, completions, responses;
//! `--orca-format`, and vLLM's request header
//! `endpoint-load-metrics-format`): the `endpoint-load-metrics` header with the engine's KV-cache
//! usage and its waiting and running requests, read from the engine when the answer's head is
//! written (the values `/metrics` shows then). See [`tokenmeter::orca`] for the formats.
//!
//! A request that names a format gets it, as vLLM answers (a value other than `TEXT` or `JSON`
//! gets no header); one that names none gets the server's `--orca-format`, if given. vLLM 0.33
//! adds the header to whole answers only; here streams get it too (in their head, written at
//! their first token).

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use tokenmeter::orca::{FORMAT_HEADER, HEADER, LoadReport, OrcaFormat};
use tokenmeter_sim::Engine;

/// The format the answer to a request with `headers` reports its load in, if any.
pub(crate) fn format(headers: &HeaderMap, default: Option<OrcaFormat>) -> Option<OrcaFormat> {
    let asked = headers.get(FORMAT_HEADER).map(HeaderValue::as_bytes);
    OrcaFormat::for_request(asked, default)
}

/// Adds `engine`'s load report in `format` (from [`format`]) to `response` when it is a
/// success; an error answer gets none, as in vLLM.
pub(crate) fn add(response: &mut Response, engine: &Engine, format: Option<OrcaFormat>) {
    if let Some(format) = format.filter(|_| response.status() == StatusCode::OK) {
        let (name, value) = header(engine, format);
        response.headers_mut().insert(name, value);
    }
}

/// The `endpoint-load-metrics` header of `engine`'s load now, in `format`.
pub(crate) fn header(engine: &Engine, format: OrcaFormat) -> (HeaderName, HeaderValue) {
    let snapshot = engine.snapshot();
    let report = LoadReport::new(
        snapshot.kv_usage(),
        snapshot.waiting as u64,
        snapshot.running as u64,
    );
    let value = HeaderValue::from_str(&report.header_value(format))
        .unwrap_or_else(|_| HeaderValue::from_static("TEXT"));
    (HeaderName::from_static(HEADER), value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_names_the_format_else_the_server_does() {
        let mut headers = HeaderMap::new();
        assert_eq!(format(&headers, None), None);
        assert_eq!(
            format(&headers, Some(OrcaFormat::Json)),
            Some(OrcaFormat::Json)
        );
        headers.insert(FORMAT_HEADER, HeaderValue::from_static("TEXT"));
        assert_eq!(format(&headers, None), Some(OrcaFormat::Text));
        assert_eq!(
            format(&headers, Some(OrcaFormat::Json)),
            Some(OrcaFormat::Text)
        );
        headers.insert(FORMAT_HEADER, HeaderValue::from_static("BIN"));
        assert_eq!(
            format(&headers, Some(OrcaFormat::Json)),
            None,
            "as vLLM: no header"
        );
    }
}
