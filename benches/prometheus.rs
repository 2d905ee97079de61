//! Per-token cost of the Prometheus sink against the naive way a user would write it by hand:
//! per token `Instant::now()` plus `metrics::histogram!("…", "model" => model.to_string())
//! .record(…)`. Both record into the same installed `metrics-exporter-prometheus` recorder
//! (with buckets and the upkeep running), so the ratio isolates what each does per token.
//!
//! Two reference points in the same group show the floor both pay: `clock_only` (one
//! `Instant::now()`) and `record_only` (one record on a pre-registered handle of this recorder).
//! `tokenmeter` is measured per token as a server calls it, one `request.record_tokens(1)` per token:
//! the request hands its items to the sink in batches (`tokenmeter::sink::Items`), and the
//! batches' flushes happen inside the measured loop, so their cost is in the figure.
//! `tokenmeter_unbatched` is the same on a meter with `item_batch(1)` (one sink call and one
//! epoch pin per token), so `batched/unbatched` is what the batches save.
//!
//! A second group, `prometheus_batch`, measures what the sink's one epoch pin per batch saves:
//! a batch of records without and with the pin (`pinned/unpinned`).
//!
//! `cargo bench -p tokenmeter-benches --bench prometheus` prints
//! `ratio prometheus_per_token: tokenmeter/naive = …` (goal: at most 0.2).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use tokenmeter::sink::Items;
use tokenmeter::{Labels, Meter};
use tokenmeter_benches::print_ratio;
use tokenmeter_prometheus::{Builder, Profile};

const GROUP: &str = "prometheus_per_token";
const BATCH_GROUP: &str = "prometheus_batch";
/// Calls per side in each round of the interleaved ratio (about 4 s in all).
const INTERLEAVED_CALLS: u64 = 200_000;

/// One token the naive way: the clock, then a histogram looked up by name and label.
fn naive(model: &str, last: &mut Instant) {
    let now = Instant::now();
    metrics::histogram!("naive_inter_token_latency_seconds", "model" => model.to_string())
        .record(now.duration_since(*last).as_secs_f64());
    *last = now;
}

fn per_token(c: &mut Criterion) {
    // Upkeep every 100 ms keeps the samples both sides push bounded during the run.
    let (sink, handle) = Builder::new(Profile::Semconv)
        .upkeep_interval(Duration::from_millis(100))
        .install_recorder()
        .expect("install the recorder once in this process");
    let labels = Labels::server("chat").request_model("llama-3-8b");
    let unbatched = Meter::builder().sink(sink.clone()).item_batch(1).build();
    let unbatched = unbatched.series(&labels);
    let meter = Meter::builder().sink(sink).build();
    let series = meter.series(&labels);
    let model = String::from("llama-3-8b");
    let probe = metrics::histogram!("probe_seconds");

    let mut group = tokenmeter_benches::per_token_group(c, GROUP);
    group.bench_function("naive", |b| {
        let mut last = Instant::now();
        b.iter(|| naive(&model, &mut last));
    });
    group.bench_function("tokenmeter", |b| {
        let mut request = series.start();
        request.record_tokens(1);
        b.iter(|| request.record_tokens(black_box(1)));
        request.succeed();
    });
    group.bench_function("tokenmeter_unbatched", |b| {
        let mut request = unbatched.start();
        request.record_tokens(1);
        b.iter(|| request.record_tokens(black_box(1)));
        request.succeed();
    });
    let noop = Meter::builder()
        .sink(tokenmeter::sink::NoopSink)
        .build()
        .series(&Labels::server("chat").request_model("llama-3-8b"));
    group.bench_function("tokenmeter_noop_sink", |b| {
        let mut request = noop.start();
        request.record_tokens(1);
        b.iter(|| request.record_tokens(black_box(1)));
        request.succeed();
    });
    group.bench_function("clock_only", |b| b.iter(|| black_box(Instant::now())));
    group.bench_function("record_only", |b| b.iter(|| probe.record(black_box(0.02))));
    group.finish();

    // What the sink's one epoch pin per batch saves: a batch of records as the sink makes them,
    // with and without the pin held around it.
    let mut batches = tokenmeter_benches::per_token_group(c, BATCH_GROUP);
    let batch = |probe: &metrics::Histogram| {
        for _ in 0..Items::CAPACITY {
            probe.record(black_box(0.02));
        }
    };
    batches.bench_function("record_batch", |b| b.iter(|| batch(&probe)));
    batches.bench_function("record_batch_pinned", |b| {
        b.iter(|| {
            let _pinned = crossbeam_epoch::pin();
            batch(&probe);
        })
    });
    batches.finish();
    // The same two, interleaved: both sides of each ratio within a few milliseconds.
    let mut last = Instant::now();
    let interleaved = tokenmeter_benches::interleaved_per_token(&series, INTERLEAVED_CALLS, || {
        naive(&model, &mut last)
    });
    drop(handle);
    if let Some(interleaved) = interleaved {
        interleaved.print(GROUP, "tokenmeter/naive");
    }
    if tokenmeter_benches::measured() {
        print_ratio(GROUP, "tokenmeter/naive", "tokenmeter", "naive");
        print_ratio(
            GROUP,
            "batched/unbatched",
            "tokenmeter",
            "tokenmeter_unbatched",
        );
        print_ratio(GROUP, "floor: clock", "clock_only", "naive");
        print_ratio(GROUP, "floor: record", "record_only", "naive");
        print_ratio(
            BATCH_GROUP,
            "pinned/unpinned",
            "record_batch_pinned",
            "record_batch",
        );
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    per_token(&mut criterion);
    criterion.final_summary();
}
