//! The conventions table drives both exporters: a row added to the table (here a throwaway
//! histogram of token-bearing items per request, fed by an existing record field, and a
//! throwaway counter of frames) appears in the Prometheus exposition and in the OpenTelemetry
//! export, with its buckets, attributes and values, without any change to either exporter.

use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use tokenmeter::conventions::{
    AttrSet, Conventions, Feed, Instrument, InstrumentKind, Metric, RecordField, Roles, Row,
};
use tokenmeter::{Clock, Labels, ManualClock, Meter};
use tokenmeter_otel::OtelSink;
use tokenmeter_prometheus::{Builder, Profile};

/// Built-in rows plus two throwaway rows.
fn table() -> Conventions {
    let items = Instrument::new(
        "throwaway.request.items",
        "{item}",
        InstrumentKind::Histogram,
        "Token-bearing items per request (a test row).",
    );
    let frames = Instrument::new(
        "throwaway.frames",
        "{frame}",
        InstrumentKind::Counter,
        "Frames per request (a test row).",
    );
    let mut table = Conventions::default();
    table
        .push(
            Row::new(
                items,
                Feed::End(RecordField::Items),
                Roles::Server,
                AttrSet::Own,
            )
            .buckets(&[Metric::OutputTokens], &[1.0, 2.0, 4.0, 8.0]),
        )
        .expect("a valid histogram row");
    table
        .push(Row::new(
            frames,
            Feed::End(RecordField::Frames),
            Roles::Both,
            AttrSet::Outcome,
        ))
        .expect("a valid counter row");
    table
}

/// Three token-bearing items and one empty frame, then success, on a server series.
fn run(meter: &Meter, time: &ManualClock) {
    let series = meter.series(&Labels::server("chat").request_model("m"));
    let mut request = series.start();
    for _ in 0..3 {
        time.advance(Duration::from_millis(10));
        request.record_tokens(1);
    }
    request.record_tokens(0); // a frame without a token
    request.succeed();
}

#[test]
fn a_row_added_to_the_table_appears_in_the_prometheus_exposition() {
    let time = ManualClock::new();
    let (sink, handle) = Builder::new(Profile::Semconv)
        .conventions(table())
        .build_recorder()
        .expect("a local exporter");
    let meter = Meter::builder()
        .clock(Clock::manual(&time))
        .sink(sink)
        .build();
    run(&meter, &time);
    let text = handle.render();
    let labels = r#"gen_ai_operation_name="chat",gen_ai_request_model="m",role="server""#;
    for line in [
        "# TYPE throwaway_request_items histogram".to_owned(),
        "# HELP throwaway_request_items Token-bearing items per request (a test row).".to_owned(),
        format!(r#"throwaway_request_items_bucket{{{labels},le="2"}} 0"#),
        format!(r#"throwaway_request_items_bucket{{{labels},le="4"}} 1"#),
        format!("throwaway_request_items_sum{{{labels}}} 3"),
        "# TYPE throwaway_frames_total counter".to_owned(),
        format!(r#"throwaway_frames_total{{{labels},outcome="success"}} 4"#),
        format!(r#"throwaway_frames_total{{{labels},outcome="cancelled"}} 0"#),
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
    // The built-in rows are still there.
    assert!(text.contains("# TYPE gen_ai_server_time_to_first_token_seconds histogram"));
}

#[test]
fn a_row_added_to_the_table_appears_in_the_opentelemetry_export() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let sink = OtelSink::builder()
        .conventions(table())
        .build(&provider.meter("tokenmeter"));
    let time = ManualClock::new();
    let meter = Meter::builder()
        .clock(Clock::manual(&time))
        .sink(sink)
        .build();
    run(&meter, &time);
    provider.force_flush().expect("flush");
    let exported = exporter.get_finished_metrics().expect("metrics");
    let metrics: Vec<_> = exported
        .iter()
        .flat_map(|rm| rm.scope_metrics())
        .flat_map(|scope| scope.metrics())
        .collect();
    let find = |name: &str| {
        metrics
            .iter()
            .find(|m| m.name() == name)
            .unwrap_or_else(|| panic!("no `{name}` in the export"))
    };

    let items = find("throwaway.request.items");
    assert_eq!(items.unit(), "{item}");
    let AggregatedMetrics::U64(MetricData::Histogram(histogram)) = items.data() else {
        panic!(
            "throwaway.request.items is not a u64 histogram: {:?}",
            items.data()
        );
    };
    let point = histogram.data_points().next().expect("one data point");
    assert_eq!((point.count(), point.sum()), (1, 3));
    assert_eq!(point.bounds().collect::<Vec<_>>(), [1.0, 2.0, 4.0, 8.0]);
    let keys: Vec<_> = point
        .attributes()
        .map(|kv| kv.key.as_str().to_owned())
        .collect();
    assert_eq!(
        keys,
        ["gen_ai.operation.name", "gen_ai.request.model", "role"]
    );

    let frames = find("throwaway.frames");
    let AggregatedMetrics::U64(MetricData::Sum(sum)) = frames.data() else {
        panic!("throwaway.frames is not a u64 sum: {:?}", frames.data());
    };
    let success = sum
        .data_points()
        .find(|p| p.attributes().any(|kv| kv.value.as_str() == "success"))
        .expect("the success point");
    assert_eq!(success.value(), 4);
    assert!(!metrics.is_empty() && metrics.iter().any(|m| m.name() == "tokenmeter.requests"));
}
