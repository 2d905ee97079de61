//! Zero heap allocations per item, and none per request once the series exists.
//!
//! `allocation-counter` installs a counting global allocator and counts on the current thread
//! only, so the test harness's own threads do not disturb the figures.

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use futures_util::{Stream, stream};
use tokenmeter::sink::NoopSink;
use tokenmeter::{Labels, Meter, MeterExt, Series};

fn series() -> Series {
    let meter = Meter::builder().sink(NoopSink).build();
    meter.series(&Labels::server("chat").provider("p").request_model("m"))
}

/// Polls `stream` to its end without an executor (an executor may allocate on its own).
fn drain<S: Stream>(stream: S) -> usize {
    let mut stream = pin!(stream);
    let mut cx = Context::from_waker(Waker::noop());
    let mut n = 0;
    while let Poll::Ready(Some(_)) = stream.as_mut().poll_next(&mut cx) {
        n += 1;
    }
    n
}

#[test]
fn no_allocation_per_item_or_per_request() {
    let series = series();
    // Warm up once: the first request may initialise lazily held state.
    series.start().succeed();

    let items = [1u32; 10_000];
    let info = allocation_counter::measure(|| {
        for _ in 0..100 {
            let metered = stream::iter(items.iter())
                .meter(series.start())
                .with_observer(|k: &&u32| **k);
            assert_eq!(drain(metered), items.len());
        }
    });
    assert_eq!(
        info.count_total, 0,
        "100 requests × 10,000 items allocated {} times",
        info.count_total
    );
}

#[test]
fn no_allocation_in_the_loop_api() {
    let series = series();
    series.start().succeed();
    let info = allocation_counter::measure(|| {
        for _ in 0..100 {
            let mut request = series.start();
            request.set_input_tokens(100);
            request.mark_scheduled();
            for _ in 0..1_000 {
                request.record_tokens(1);
            }
            request.succeed();
        }
        drop(series.start()); // cancelled
    });
    assert_eq!(info.count_total, 0);
}

#[test]
fn resolving_an_existing_series_with_borrowed_labels_does_not_allocate() {
    let meter = Meter::builder().sink(NoopSink).build();
    let model = String::from("llama");
    let labels = Labels::server("chat").request_model(model.as_str());
    let first = meter.series(&labels);
    let info = allocation_counter::measure(|| {
        for _ in 0..100 {
            let again = meter.series(&labels);
            assert!(again.same(&first));
        }
    });
    assert_eq!(info.count_total, 0);
}

#[test]
fn the_counter_does_count() {
    // Guards against a counter that always says zero.
    let info = allocation_counter::measure(|| {
        std::hint::black_box(vec![1u8; 16]);
    });
    assert_eq!(info.count_total, 1);
}
