//! [`TracingSink`]: a tokenmeter sink that writes each request's numbers onto its span.

use std::sync::Arc;

use tokenmeter::sink::{FirstToken, SeriesSink, Sink};
use tokenmeter::{Labels, RequestRecord};
use tracing::Span;

use crate::fields;
use crate::spans::Spans;

/// A [`Sink`] that records TTFT, token counts and the outcome on each request's span.
///
/// The span is the one current when the request starts ([`Series::start`](tokenmeter::Series::start)
/// or `meter(...)` on a stream), provided it declares this crate's [`fields`] (make it with
/// [`request_span!`](crate::request_span)). The time to first token is recorded when the first
/// token arrives, everything else when the request ends: the same numbers the metrics exporters
/// observe. Requests started outside such a span cost one check of the current span and are not
/// tracked. Nothing runs per token.
///
/// Put it next to your exporter with [`FanOut`](tokenmeter::sink::FanOut).
///
/// # Examples
///
/// ```
/// use tokenmeter::sink::{FanOut, InMemorySink};
/// use tokenmeter::{Labels, Meter};
/// use tokenmeter_tracing::{TracingSink, request_span};
///
/// let meter = Meter::builder()
///     .sink(FanOut::new().with(InMemorySink::new()).with(TracingSink::new()))
///     .build();
/// let series = meter.series(&Labels::server("chat").request_model("llama-3-8b"));
///
/// let span = request_span!(tracing::Level::INFO, "chat", gen_ai.request.model = "llama-3-8b");
/// let _entered = span.enter();
/// let mut request = series.start(); // captures `span`
/// request.record_tokens(1); // records gen_ai.response.time_to_first_chunk on it
/// request.record_tokens(1);
/// request.succeed(); // records tokens, outcome, durations
/// ```
#[derive(Clone, Debug, Default)]
pub struct TracingSink {
    spans: Arc<Spans>,
}

impl TracingSink {
    /// A sink with no request in flight.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests started in a span that have not ended yet (for tests and diagnostics).
    pub fn in_flight(&self) -> usize {
        self.spans.len()
    }
}

impl Sink for TracingSink {
    fn series(&self, _labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(TracingSeries {
            spans: self.spans.clone(),
        })
    }
}

struct TracingSeries {
    spans: Arc<Spans>,
}

impl SeriesSink for TracingSeries {
    fn start(&self, id: u64) {
        let span = Span::current();
        if !span.is_disabled() && span.has_field(fields::OUTCOME) {
            self.spans.insert(id, span);
        }
    }

    fn first_token(&self, event: &FirstToken) {
        if let Some(span) = self.spans.get(event.id) {
            crate::record::first_token(&span, event.id, event.ttft);
        }
    }

    fn end(&self, record: &RequestRecord) {
        // The TTFT and id went onto the span with the first token: record the rest only, so
        // formatters that append every recorded value show each field once.
        if let Some(span) = self.spans.remove(record.id) {
            crate::record::end(&span, record);
        }
    }
}
