//! No heap allocation per token-bearing item once a series exists: the sink records one
//! histogram value with the attribute slice it prepared when the series was resolved. The same
//! for engine steps once the engine's recorder exists.
//! `allocation-counter` counts on the current thread only.

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use std::time::Duration;

use tokenmeter::sink::{Step, StepKind};
use tokenmeter::{Labels, Meter, Series};
use tokenmeter_otel::{OtelSink, OtelSinkBuilder};

fn series(builder: OtelSinkBuilder, labels: &Labels<'_>) -> (Series, SdkMeterProvider) {
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(InMemoryMetricExporter::default()).build())
        .build();
    let sink = builder.build(&provider.meter("tokenmeter"));
    let series = Meter::builder().sink(sink).build().series(labels);
    (series, provider)
}

fn labels() -> [Labels<'static>; 2] {
    [
        Labels::server("chat")
            .provider("vllm")
            .request_model("llama-3-8b")
            .server_address("10.0.0.7")
            .server_port(8000),
        Labels::client("chat")
            .provider("openai")
            .request_model("gpt-4o"),
    ]
}

fn allocations_per_item(builder: OtelSinkBuilder) {
    for labels in labels() {
        let (series, _provider) = series(builder.clone(), &labels);
        let mut request = series.start();
        request.record_tokens(1);
        request.record_tokens(1);
        request.flush(); // the SDK creates this attribute set's data point once
        let info = allocation_counter::measure(|| {
            for _ in 0..10_000 {
                request.record_tokens(1);
            }
        });
        request.succeed();
        assert_eq!(
            info.count_total,
            0,
            "{:?}: 10,000 items allocated {} times",
            labels.role(),
            info.count_total
        );
    }
}

#[test]
fn no_allocation_per_item() {
    allocations_per_item(OtelSink::builder());
}

#[cfg(feature = "bound-instruments")]
#[test]
fn no_allocation_per_item_with_bound_instruments() {
    allocations_per_item(OtelSink::builder().bound_instruments(true));
}

#[test]
fn no_allocation_per_engine_step() {
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(InMemoryMetricExporter::default()).build())
        .build();
    let meter = Meter::builder()
        .sink(OtelSink::new(&provider.meter("tokenmeter")))
        .build();
    let steps = meter.engine(&Labels::server("").provider("vllm").request_model("m"));
    let kinds = [StepKind::Prefill, StepKind::Decode, StepKind::Mixed];
    let step = |i: u32| {
        let kind = kinds[i as usize % kinds.len()];
        Step::new(
            kind,
            8,
            8 + i % 3,
            Duration::from_millis(u64::from(8 + i % 5)),
        )
    };
    for i in 0..3 {
        steps.record(&step(i)); // the SDK creates each kind's data points once
    }
    let info = allocation_counter::measure(|| {
        for i in 0..10_000 {
            steps.record(&step(i));
        }
    });
    assert_eq!(
        info.count_total, 0,
        "10,000 steps allocated {} times",
        info.count_total
    );
}
