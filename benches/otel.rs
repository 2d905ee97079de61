//! Per-token cost of the OpenTelemetry sink against the naive way a user would write it by
//! hand: per token `Instant::now()` plus `histogram.record(gap, &[KeyValue…])` with the four
//! attributes (operation, provider, request model, server address) built per token from the
//! values the application holds. Ours is `request.record_tokens(1)` on a client series with the
//! same four attributes. `tokenmeter` is the default path, what `OtlpConfig::new().install()`
//! or `OtelSink::new` gives with no feature and no option: one record per token into
//! `gen_ai.client.inference.time_per_output_chunk` with an attribute slice prepared when the
//! series was resolved. `tokenmeter_superseded` is the same with the superseded names asked for
//! (`Conventions::default()`: a second record per token, into
//! `gen_ai.client.operation.time_per_output_chunk`); `tokenmeter_bound` records through the
//! SDK's bound instruments (feature `bound-instruments`). All record into SDK meter providers
//! with a periodic reader, so the SDK aggregates every value.
//!
//! Three reference points in the same group show the floor every path pays: `clock_only` (one
//! `Instant::now()`), `record_only` (the SDK's own `histogram.record(gap, &attributes)` on an
//! attribute slice built once: the least any exporter recording through the SDK's stable API
//! does per token) and `bound_record_only` (one record on an SDK bound histogram).
//!
//! `cargo bench -p tokenmeter-benches --bench otel` prints, measured interleaved,
//! `tokenmeter/naive` (goal: ≤ 0.33, or, where the SDK's own record is above that,
//! `tokenmeter − record_only` ≤ 0.33 of naive), `record_only/naive` and
//! `tokenmeter_bound/naive` (goal: ≤ 0.33), then criterion's ratios of means.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use tokenmeter::conventions::Conventions;
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

/// The three sinks measured: the default one, the superseded names asked for, bound.
enum Path {
    Default,
    Superseded,
    Bound,
}

fn series(provider: &SdkMeterProvider, path: Path) -> Series {
    let meter = provider.meter("tokenmeter");
    let sink = match path {
        Path::Default => OtelSink::new(&meter),
        Path::Superseded => OtelSink::builder()
            .conventions(Conventions::default())
            .build(&meter),
        Path::Bound => OtelSink::builder().bound_instruments(true).build(&meter),
    };
    Meter::builder().sink(sink).build().series(&labels())
}

/// The four attributes of `labels()`, as the naive way builds them per token.
fn attributes(provider: &str, model: &str, address: &str) -> [KeyValue; 4] {
    [
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", provider.to_owned()),
        KeyValue::new("gen_ai.request.model", model.to_owned()),
        KeyValue::new("server.address", address.to_owned()),
    ]
}

fn per_token(c: &mut Criterion) {
    let histogram = |provider: &SdkMeterProvider| {
        provider
            .meter("naive")
            .f64_histogram("gen_ai.client.inference.time_per_output_chunk")
            .with_unit("s")
            .build()
    };
    let naive_provider = provider();
    let naive_histogram = histogram(&naive_provider);
    let (provider_name, model, address) = (
        String::from("vllm"),
        String::from("llama-3-8b"),
        String::from("10.0.0.7"),
    );
    let portable_provider = provider();
    let portable = series(&portable_provider, Path::Default);
    let superseded_provider = provider();
    let superseded = series(&superseded_provider, Path::Superseded);
    let bound_provider = provider();
    let bound = series(&bound_provider, Path::Bound);
    // The floors: the SDK's own record with the attributes built once, unbound and bound.
    let floor_provider = provider();
    let floor_histogram = histogram(&floor_provider);
    let prebuilt = attributes(&provider_name, &model, &address);
    let bound_floor_provider = provider();
    let bound_floor = histogram(&bound_floor_provider).bind(&prebuilt);

    let mut group = tokenmeter_benches::per_token_group(c, GROUP);
    let naive = |last: &mut Instant| {
        let now = Instant::now();
        naive_histogram.record(
            now.duration_since(*last).as_secs_f64(),
            &attributes(&provider_name, &model, &address),
        );
        *last = now;
    };
    let record_only = || floor_histogram.record(black_box(0.02), &prebuilt);
    group.bench_function("naive", |b| {
        let mut last = Instant::now();
        b.iter(|| naive(&mut last));
    });
    for (name, series) in [
        ("tokenmeter", &portable),
        ("tokenmeter_superseded", &superseded),
        ("tokenmeter_bound", &bound),
    ] {
        group.bench_function(name, |b| {
            let mut request = series.start();
            request.record_tokens(1);
            b.iter(|| request.record_tokens(black_box(1)));
            request.succeed();
        });
    }
    group.bench_function("clock_only", |b| b.iter(|| black_box(Instant::now())));
    group.bench_function("record_only", |b| b.iter(record_only));
    group.bench_function("bound_record_only", |b| {
        b.iter(|| bound_floor.record(black_box(0.02)))
    });
    group.finish();

    // The pairs the goals are about, interleaved: both sides of each ratio within a few
    // milliseconds.
    let mut last = Instant::now();
    let mut interleaved = |series: &Series| {
        tokenmeter_benches::interleaved_per_token(series, INTERLEAVED_CALLS, || naive(&mut last))
    };
    let default_path = interleaved(&portable);
    let bound_path = interleaved(&bound);
    let mut last = Instant::now();
    let floor = tokenmeter_benches::interleaved_ratio(
        tokenmeter_benches::INTERLEAVED_ROUNDS,
        INTERLEAVED_CALLS,
        || naive(&mut last),
        record_only,
    );
    if let (Some(default_path), Some(bound_path), Some(floor)) = (default_path, bound_path, floor) {
        default_path.print(GROUP, "tokenmeter/naive");
        floor.print(GROUP, "floor: record_only/naive");
        println!(
            "ratio {GROUP} (interleaved medians): tokenmeter/naive - record_only/naive = {:.3}",
            default_path.median - floor.median
        );
        bound_path.print(GROUP, "tokenmeter_bound/naive");
    }
    if tokenmeter_benches::measured() {
        print_ratio(GROUP, "tokenmeter/naive", "tokenmeter", "naive");
        print_ratio(
            GROUP,
            "tokenmeter_superseded/naive",
            "tokenmeter_superseded",
            "naive",
        );
        print_ratio(GROUP, "tokenmeter_bound/naive", "tokenmeter_bound", "naive");
        print_ratio(GROUP, "floor: clock", "clock_only", "naive");
        print_ratio(GROUP, "floor: record", "record_only", "naive");
        print_ratio(GROUP, "floor: bound record", "bound_record_only", "naive");
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    per_token(&mut criterion);
    criterion.final_summary();
}
