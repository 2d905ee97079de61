//! Per-token cost of the OpenTelemetry sink against the naive way a user would write it by
//! hand: per token `Instant::now()` plus `histogram.record(gap, &[KeyValue…])` with the four
//! attributes (operation, provider, request model, server address) built per token from the
//! values the application holds. Ours is `request.record_tokens(1)` on a client series with the same
//! four attributes (the sink records `gen_ai.client.operation.time_per_output_chunk` with an
//! attribute slice prepared when the series was resolved), on the portable path and through
//! the SDK's bound instruments (feature `bound-instruments`). All record into SDK meter
//! providers with a periodic reader, so the SDK aggregates every value.
//!
//! `cargo bench -p tokenmeter-benches --bench otel` prints
//! `ratio otel_per_token: tokenmeter/naive = …` and `tokenmeter_bound/naive` (goal: ≤ 0.33).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use tokenmeter::{Labels, Meter, Series};
use tokenmeter_benches::print_ratio;
use tokenmeter_otel::OtelSink;

const GROUP: &str = "otel_per_token";

/// An exporter that drops what it is given: the bench measures recording, not exporting.
struct Discard;

impl PushMetricExporter for Discard {
    async fn export(&self, _metrics: &ResourceMetrics) -> OTelSdkResult {
        Ok(())
    }
    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }
    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }
}

/// Calls per side in each round of the interleaved ratio (a few seconds in all).
const INTERLEAVED_CALLS: u64 = 100_000;

fn provider() -> SdkMeterProvider {
    SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(Discard).build())
        .build()
}

fn labels() -> Labels<'static> {
    Labels::client("chat")
        .provider("vllm")
        .request_model("llama-3-8b")
        .server_address("10.0.0.7")
}

fn series(provider: &SdkMeterProvider, bound: bool) -> Series {
    let sink = OtelSink::builder()
        .bound_instruments(bound)
        .build(&provider.meter("tokenmeter"));
    Meter::builder().sink(sink).build().series(&labels())
}

fn per_token(c: &mut Criterion) {
    let naive_provider = provider();
    let histogram = naive_provider
        .meter("naive")
        .f64_histogram("gen_ai.client.operation.time_per_output_chunk")
        .with_unit("s")
        .build();
    let (provider_name, model, address) = (
        String::from("vllm"),
        String::from("llama-3-8b"),
        String::from("10.0.0.7"),
    );
    let portable_provider = provider();
    let portable = series(&portable_provider, false);
    let bound_provider = provider();
    let bound = series(&bound_provider, true);

    let mut group = tokenmeter_benches::per_token_group(c, GROUP);
    let naive = |last: &mut Instant| {
        let now = Instant::now();
        histogram.record(
            now.duration_since(*last).as_secs_f64(),
            &[
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.provider.name", provider_name.clone()),
                KeyValue::new("gen_ai.request.model", model.clone()),
                KeyValue::new("server.address", address.clone()),
            ],
        );
        *last = now;
    };
    group.bench_function("naive", |b| {
        let mut last = Instant::now();
        b.iter(|| naive(&mut last));
    });
    for (name, series) in [("tokenmeter", &portable), ("tokenmeter_bound", &bound)] {
        group.bench_function(name, |b| {
            let mut request = series.start();
            request.record_tokens(1);
            b.iter(|| request.record_tokens(black_box(1)));
            request.succeed();
        });
    }
    group.finish();
    // The bound path and the naive one again, interleaved: both sides of each ratio within a
    // few milliseconds.
    let mut last = Instant::now();
    let interleaved =
        tokenmeter_benches::interleaved_per_token(&bound, INTERLEAVED_CALLS, || naive(&mut last));
    if let Some(interleaved) = interleaved {
        interleaved.print(GROUP, "tokenmeter_bound/naive");
    }
    print_ratio(GROUP, "tokenmeter/naive", "tokenmeter", "naive");
    print_ratio(GROUP, "tokenmeter_bound/naive", "tokenmeter_bound", "naive");
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    per_token(&mut criterion);
    criterion.final_summary();
}
