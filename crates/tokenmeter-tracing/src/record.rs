//! Writing a request's numbers onto a span.

use tokenmeter::RequestRecord;
use tokenmeter::conventions::{RecordField, Value};
use tracing::Span;

use crate::fields;

/// Records the time to first token of request `id` on `span`.
pub(crate) fn first_token(span: &Span, id: u64, ttft: std::time::Duration) {
    span.record(fields::REQUEST_ID, id);
    span.record(fields::TIME_TO_FIRST_CHUNK, ttft.as_secs_f64());
}

/// Records everything a finished request measured on `span`: the same numbers the metrics
/// exporters observe for it. Fields the span did not declare are skipped by `tracing`.
///
/// The [`TracingSink`](crate::TracingSink) calls this for you; call it yourself when you hold
/// the span and the record (an [`InMemorySink`](tokenmeter::sink::InMemorySink), a custom sink).
///
/// # Examples
///
/// ```
/// use tokenmeter::sink::InMemorySink;
/// use tokenmeter::{Labels, Meter};
///
/// let sink = InMemorySink::new();
/// let meter = Meter::builder().sink(sink.clone()).build();
/// let span = tokenmeter_tracing::request_span!(tracing::Level::INFO, "chat");
/// let mut request = meter.series(&Labels::client("chat")).start();
/// request.record_tokens(1);
/// request.succeed();
/// for record in sink.records() {
///     tokenmeter_tracing::record(&span, &record);
/// }
/// ```
pub fn record(span: &Span, record: &RequestRecord) {
    if let Some(ttft) = record.ttft {
        first_token(span, record.id, ttft);
    }
    end(span, record);
}

/// Records what [`first_token`] did not: everything but the id and TTFT, unless the request
/// never had a first token, in which case the id too.
pub(crate) fn end(span: &Span, record: &RequestRecord) {
    if record.ttft.is_none() {
        span.record(fields::REQUEST_ID, record.id);
    }
    for (field, source) in fields::MEASURED {
        if source == RecordField::Ttft {
            continue; // recorded at the first token
        }
        match source.read(record) {
            Some(Value::Seconds(s)) => span.record(field, s),
            Some(value) => span.record(field, value.as_u64()),
            None => span,
        };
    }
    if let Some(reason) = record.finish_reason {
        span.record(fields::FINISH_REASONS, reason.as_str());
    }
    if let Some(class) = record.outcome.error_class() {
        span.record(fields::ERROR_TYPE, class.as_str());
    }
    span.record(fields::OUTCOME, record.outcome.as_str());
}
