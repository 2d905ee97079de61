//! A successful answer to a streaming request that is plainly not an event stream: an HTML
//! page (a web UI or a proxy's page at `--url`) or a JSON document (a server that ignores
//! `stream`). Named by its content type instead of being read as a stream that was cut short.

use reqwest::header::{CONTENT_TYPE, HeaderMap};

use crate::sanitize::Sanitizer;

/// Why an answer with `headers` to a streaming request is not an event stream, when its content
/// type says it is HTML or JSON; `None` for any other (an SSE stream, or a type some servers
/// wrongly give their streams, such as `text/plain` or none).
pub(crate) fn not_a_stream(
    status: u16,
    headers: &HeaderMap,
    sanitizer: &Sanitizer,
) -> Option<String> {
    let value = headers.get(CONTENT_TYPE)?;
    let shown = sanitizer.clean_bytes(value.as_bytes());
    let media = shown
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let html = media == "text/html" || media == "application/xhtml+xml";
    let json = media == "application/json" || media.ends_with("+json");
    (html || json).then(|| {
        format!(
            "the server answered {status} with {media}, not an event stream \
             (text/event-stream): is --url the API's base (e.g. http://HOST:PORT/v1), and does \
             the server stream?"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn typed(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn html_and_json_are_named_other_types_are_read() {
        let clean = Sanitizer::default();
        let html = not_a_stream(200, &typed("text/html; charset=utf-8"), &clean).unwrap();
        assert!(
            html.contains("200 with text/html, not an event stream"),
            "{html}"
        );
        assert!(not_a_stream(200, &typed("application/problem+json"), &clean).is_some());
        assert!(not_a_stream(200, &typed("Application/JSON"), &clean).is_some());
        assert_eq!(not_a_stream(200, &typed("text/event-stream"), &clean), None);
        assert_eq!(not_a_stream(200, &typed("text/plain"), &clean), None);
        assert_eq!(not_a_stream(200, &HeaderMap::new(), &clean), None);
    }
}
