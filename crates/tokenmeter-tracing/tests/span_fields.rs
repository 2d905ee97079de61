//! The span of a request carries the numbers the metrics observe, on every path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{StreamExt as _, stream};
use tokenmeter::sink::{FanOut, InMemorySink};
use tokenmeter::{Clock, ErrorClass, FinishReason, Labels, ManualClock, Meter, MeterExt as _};
use tokenmeter_tracing::{TracingSink, fields, request_span};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Instrument as _, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{Layer, Registry};

/// A recorded field value.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    F64(f64),
    U64(u64),
    Str(String),
}

type Spans = Arc<Mutex<HashMap<u64, HashMap<String, Value>>>>;

/// Captures every field value recorded on every span, by span id.
#[derive(Clone, Default)]
struct Capture(Spans);

struct Visitor<'a>(&'a mut HashMap<String, Value>);

impl Visit for Visitor<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), Value::F64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), Value::U64(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), Value::U64(value as u64));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), Value::Str(value.into()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().into(), Value::Str(format!("{value:?}")));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        attrs.record(&mut Visitor(spans.entry(id.into_u64()).or_default()));
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        values.record(&mut Visitor(spans.entry(id.into_u64()).or_default()));
    }
}

impl Capture {
    fn fields(&self, span: &tracing::Span) -> HashMap<String, Value> {
        let id = span.id().expect("the span is enabled").into_u64();
        self.0.lock().unwrap().get(&id).cloned().unwrap_or_default()
    }
}

struct Setup {
    clock: ManualClock,
    memory: InMemorySink,
    tracing: TracingSink,
    meter: Meter,
    capture: Capture,
    _guard: tracing::subscriber::DefaultGuard,
}

fn setup() -> Setup {
    let capture = Capture::default();
    let guard = tracing::subscriber::set_default(Registry::default().with(capture.clone()));
    let clock = ManualClock::new();
    let memory = InMemorySink::new();
    let tracing = TracingSink::new();
    let meter = Meter::builder()
        .clock(Clock::manual(&clock))
        .sink(FanOut::new().with(memory.clone()).with(tracing.clone()))
        .build();
    Setup {
        clock,
        memory,
        tracing,
        meter,
        capture,
        _guard: guard,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn a_successful_request_puts_the_recorded_numbers_on_its_span() {
    let s = setup();
    let series = s.meter.series(&Labels::server("chat").request_model("m"));
    let span = request_span!(Level::INFO, "chat", gen_ai.request.model = "m");
    let mut request = span.in_scope(|| series.start());
    assert_eq!(s.tracing.in_flight(), 1);
    request.set_input_tokens(12);
    s.clock.advance(ms(150));
    request.record_tokens(1);
    let after_first = s.capture.fields(&span);
    assert_eq!(
        after_first.get(fields::TIME_TO_FIRST_CHUNK),
        Some(&Value::F64(0.15)),
        "TTFT is on the span as soon as the first token arrives"
    );
    assert_eq!(after_first.get(fields::OUTCOME), None);
    s.clock.advance(ms(20));
    request.record_tokens(2);
    s.clock.advance(ms(30));
    request.record_tokens(1);
    request.set_finish_reason(FinishReason::Length);
    s.clock.advance(ms(5));
    request.succeed();
    assert_eq!(s.tracing.in_flight(), 0);

    let record = &s.memory.records()[0];
    let got = s.capture.fields(&span);
    let f = |name: &str| got.get(name).cloned();
    assert_eq!(f(fields::REQUEST_ID), Some(Value::U64(record.id)));
    assert_eq!(
        f(fields::TIME_TO_FIRST_CHUNK),
        Some(Value::F64(record.ttft.unwrap().as_secs_f64()))
    );
    assert_eq!(f(fields::INPUT_TOKENS), Some(Value::U64(12)));
    assert_eq!(f(fields::OUTPUT_TOKENS), Some(Value::U64(4)));
    assert_eq!(f(fields::FINISH_REASONS), Some(Value::Str("length".into())));
    assert_eq!(f(fields::OUTCOME), Some(Value::Str("success".into())));
    assert_eq!(f(fields::ERROR_TYPE), None);
    assert_eq!(
        f(fields::TIME_PER_OUTPUT_TOKEN),
        Some(Value::F64(record.tpot().unwrap().as_secs_f64()))
    );
    assert_eq!(f(fields::DURATION), Some(Value::F64(0.205)));
    assert_eq!(f("gen_ai.request.model"), Some(Value::Str("m".into())));
}

#[test]
fn errors_and_cancellations_are_on_the_span() {
    let s = setup();
    let series = s.meter.series(&Labels::client("chat"));
    let failed = request_span!(Level::INFO, "chat");
    let mut request = failed.in_scope(|| series.start());
    s.clock.advance(ms(10));
    request.record_tokens(1);
    request.fail(ErrorClass::RateLimited);
    let got = s.capture.fields(&failed);
    assert_eq!(got.get(fields::OUTCOME), Some(&Value::Str("error".into())));
    assert_eq!(
        got.get(fields::ERROR_TYPE),
        Some(&Value::Str("rate_limited".into()))
    );

    let dropped = request_span!(Level::INFO, "chat");
    let request = dropped.in_scope(|| series.start());
    drop(request);
    let got = s.capture.fields(&dropped);
    assert_eq!(
        got.get(fields::OUTCOME),
        Some(&Value::Str("cancelled".into()))
    );
    assert_eq!(got.get(fields::TIME_TO_FIRST_CHUNK), None);
    assert_eq!(got.get(fields::OUTPUT_TOKENS), Some(&Value::U64(0)));
    assert_eq!(s.tracing.in_flight(), 0);
}

#[test]
fn requests_outside_a_request_span_are_not_tracked() {
    let s = setup();
    let series = s.meter.series(&Labels::client("chat"));
    let mut request = series.start();
    assert_eq!(s.tracing.in_flight(), 0);
    let other = tracing::info_span!("unrelated", answer = 42);
    let mut inside = other.in_scope(|| series.start());
    assert_eq!(
        s.tracing.in_flight(),
        0,
        "a span without our fields is left alone"
    );
    request.succeed();
    inside.succeed();
    assert_eq!(s.capture.fields(&other).get(fields::OUTCOME), None);
    assert_eq!(s.memory.records().len(), 2);
}

#[test]
fn a_stream_polled_outside_its_span_still_records_onto_it() {
    // A server's response body is polled by the HTTP server, outside the handler's span.
    let s = setup();
    let series = s.meter.series(&Labels::server("chat"));
    let span = request_span!(Level::INFO, "handler");
    let body = span.in_scope(|| stream::iter(["a", "b", "c"]).meter(series.start()));
    let collected = futures_util::FutureExt::now_or_never(body.collect::<Vec<_>>()).unwrap();
    assert_eq!(collected.len(), 3);
    let got = s.capture.fields(&span);
    assert_eq!(got.get(fields::OUTPUT_TOKENS), Some(&Value::U64(3)));
    assert_eq!(
        got.get(fields::OUTCOME),
        Some(&Value::Str("success".into()))
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_instrumented_future_ties_its_request_to_its_span() {
    let s = setup();
    let series = s.meter.series(&Labels::client("chat"));
    let span = request_span!(Level::INFO, "call");
    let tokens = async {
        let metered = stream::iter([1, 2]).meter(series.start());
        metered.collect::<Vec<_>>().await
    }
    .instrument(span.clone())
    .await;
    assert_eq!(tokens, [1, 2]);
    let got = s.capture.fields(&span);
    assert_eq!(got.get(fields::OUTPUT_TOKENS), Some(&Value::U64(2)));
    assert_eq!(
        got.get(fields::REQUEST_ID),
        Some(&Value::U64(s.memory.records()[0].id))
    );
}

#[test]
fn the_request_span_declares_every_field_the_sink_records() {
    let _s = setup();
    let span = request_span!(Level::INFO, "chat");
    for name in fields::ALL {
        assert!(
            span.has_field(name),
            "request_span! does not declare {name}"
        );
    }
}
