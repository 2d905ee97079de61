//! Per-token cost of the Prometheus sink against the naive way a user would write it by hand:
//! per token `Instant::now()` plus `metrics::histogram!("…", "model" => model.to_string())
//! .record(…)`. Both record into the same installed `metrics-exporter-prometheus` recorder
//! (with buckets and the upkeep running), so the ratio isolates what each does per token.
//!
//! Two reference points in the same group show the floor both pay: `clock_only` (one
//! `Instant::now()`) and `record_only` (one record on a pre-registered handle of this recorder).
//!
//! `cargo bench -p tokenmeter-benches --bench prometheus` prints
//! `ratio prometheus_per_token: tokenmeter/naive = …` (goal: at most 0.2).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use tokenmeter::{Labels, Meter};
use tokenmeter_benches::print_ratio;
use tokenmeter_prometheus::{Builder, Profile};

const GROUP: &str = "prometheus_per_token";

fn per_token(c: &mut Criterion) {
    // Upkeep every 100 ms keeps the samples both sides push bounded during the run.
    let (sink, handle) = Builder::new(Profile::Semconv)
        .upkeep_interval(Duration::from_millis(100))
        .install_recorder()
        .expect("install the recorder once in this process");
    let meter = Meter::builder().sink(sink).build();
    let series = meter.series(&Labels::server("chat").request_model("llama-3-8b"));
    let model = String::from("llama-3-8b");
    let probe = metrics::histogram!("probe_seconds");

    let mut group = tokenmeter_benches::per_token_group(c, GROUP);
    group.bench_function("naive", |b| {
        let mut last = Instant::now();
        b.iter(|| {
            let now = Instant::now();
            metrics::histogram!("naive_inter_token_latency_seconds", "model" => model.to_string())
                .record(now.duration_since(last).as_secs_f64());
            last = now;
        });
    });
    group.bench_function("tokenmeter", |b| {
        let mut request = series.start();
        request.tokens(1);
        b.iter(|| request.tokens(black_box(1)));
        request.succeed();
    });
    let noop = Meter::builder()
        .sink(tokenmeter::sink::NoopSink)
        .build()
        .series(&Labels::server("chat").request_model("llama-3-8b"));
    group.bench_function("tokenmeter_noop_sink", |b| {
        let mut request = noop.start();
        request.tokens(1);
        b.iter(|| request.tokens(black_box(1)));
        request.succeed();
    });
    group.bench_function("clock_only", |b| b.iter(|| black_box(Instant::now())));
    group.bench_function("record_only", |b| b.iter(|| probe.record(black_box(0.02))));
    group.finish();
    drop(handle);
    if tokenmeter_benches::measured() {
        print_ratio(GROUP, "tokenmeter/naive", "tokenmeter", "naive");
        print_ratio(GROUP, "floor: clock", "clock_only", "naive");
        print_ratio(GROUP, "floor: record", "record_only", "naive");
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    per_token(&mut criterion);
    criterion.final_summary();
}
