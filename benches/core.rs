//! Per-item cost of the core: (a) the bare stream, (b) the floor — one clock read and one relaxed
//! atomic add per item, the least a hand-written meter does — (c) the metered stream with the
//! no-op sink, (d) with the in-memory sink. Prints c÷b and d÷b from this run.
//!
//! ```text
//! cargo bench -p tokenmeter-benches --bench core
//! ```

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use futures_util::stream;
use tokenmeter::sink::{InMemorySink, NoopSink};
use tokenmeter::{Clock, Labels, Meter, MeterExt, Series};
use tokenmeter_benches::drain;

const ITEMS: usize = 1_000;
const GROUP: &str = "core_per_item";

fn series(sink: impl tokenmeter::sink::Sink) -> Series {
    Meter::builder()
        .sink(sink)
        .build()
        .series(&Labels::server("chat").request_model("m"))
}

/// The same with the OS clock (`Instant::now`, what the floor reads) instead of the default,
/// which is the time-stamp counter when the `quanta` feature is on (it is in this package,
/// through tokenmeter-prometheus).
fn series_std_clock(sink: impl tokenmeter::sink::Sink) -> Series {
    Meter::builder()
        .clock(Clock::monotonic())
        .sink(sink)
        .build()
        .series(&Labels::server("chat").request_model("m"))
}

fn per_item(c: &mut Criterion) {
    let items = vec![1u32; ITEMS];
    let mut group = c.benchmark_group(GROUP);
    group.throughput(Throughput::Elements(ITEMS as u64));
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_secs(1));

    group.bench_function("bare", |b| {
        b.iter(|| {
            drain(stream::iter(items.iter()), |i| {
                black_box(i);
            })
        });
    });

    let counter = AtomicU64::new(0);
    group.bench_function("floor", |b| {
        b.iter(|| {
            drain(stream::iter(items.iter()), |i| {
                black_box(Instant::now());
                counter.fetch_add(u64::from(*i), Ordering::Relaxed);
                black_box(i);
            })
        });
    });

    let noop = series(NoopSink);
    group.bench_function("metered_noop", |b| {
        b.iter(|| {
            drain(stream::iter(items.iter()).meter(noop.start()), |i| {
                black_box(i);
            })
        });
    });

    let noop_std = series_std_clock(NoopSink);
    group.bench_function("metered_noop_std_clock", |b| {
        b.iter(|| {
            drain(stream::iter(items.iter()).meter(noop_std.start()), |i| {
                black_box(i);
            })
        });
    });

    let memory = InMemorySink::new();
    let in_memory = series(memory.clone());
    group.bench_function("metered_in_memory", |b| {
        b.iter(|| {
            drain(stream::iter(items.iter()).meter(in_memory.start()), |i| {
                black_box(i);
            });
            memory.clear(); // keep memory flat across iterations
        });
    });
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    per_item(&mut criterion);
    criterion.final_summary();
    if tokenmeter_benches::measured() {
        tokenmeter_benches::print_ratio(GROUP, "c÷b", "metered_noop", "floor");
        tokenmeter_benches::print_ratio(
            GROUP,
            "c÷b, same OS clock",
            "metered_noop_std_clock",
            "floor",
        );
        tokenmeter_benches::print_ratio(GROUP, "d÷b", "metered_in_memory", "floor");
        tokenmeter_benches::print_ratio(GROUP, "b÷a", "floor", "bare");
    }
}
