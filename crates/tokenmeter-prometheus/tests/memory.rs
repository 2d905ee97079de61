//! Recording for a while with nobody scraping: with the upkeep running, the exporter's memory
//! stays bounded; without it, the same workload grows (so the measurement can see growth).
//! Memory is measured exactly, as bytes currently allocated, with a counting allocator.

mod support;

use std::alloc::System;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cap::Cap;
use metrics_exporter_prometheus::PrometheusBuilder;
use tokenmeter::{Clock, Labels, ManualClock, Meter, Request};
use tokenmeter_prometheus::{Builder, Profile};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// Tokens recorded between two measurements.
const BURST: usize = 100_000;
/// Bursts: 2 million ITL samples in all, over 30 MB if every sample were kept.
const BURSTS: usize = 20;
/// The growth allowed while the upkeep runs.
const BOUND: usize = 4 << 20;

fn open_request(meter: &Meter, time: &ManualClock) -> Request {
    let mut request = meter
        .series(&Labels::server("chat").request_model("m"))
        .start();
    time.advance(Duration::from_millis(50));
    request.record_tokens(1);
    request
}

fn burst(request: &mut Request, time: &ManualClock) {
    for _ in 0..BURST {
        time.advance(Duration::from_micros(20));
        request.record_tokens(1);
    }
}

fn grown_since(baseline: usize) -> usize {
    ALLOCATOR.allocated().saturating_sub(baseline)
}

/// Without upkeep (a bare recorder nobody renders), samples pile up.
fn growth_without_upkeep() -> usize {
    let time = ManualClock::new();
    let recorder = PrometheusBuilder::new().build_recorder();
    let sink = Builder::new(Profile::Semconv).build_for(Arc::new(recorder));
    let meter = Meter::builder()
        .clock(Clock::manual(&time))
        .sink(sink)
        .build();
    let mut request = open_request(&meter, &time);
    let baseline = ALLOCATOR.allocated();
    for _ in 0..10 {
        burst(&mut request, &time);
    }
    grown_since(baseline)
}

/// With the upkeep thread of `build_recorder` running every 10 ms and no render at all: the
/// largest growth seen after each burst, once an upkeep pass has run.
fn peak_growth_with_upkeep() -> usize {
    let time = ManualClock::new();
    let (sink, handle) = Builder::new(Profile::Semconv)
        .upkeep_interval(Duration::from_millis(10))
        .build_recorder()
        .expect("a local exporter");
    let meter = Meter::builder()
        .clock(Clock::manual(&time))
        .sink(sink)
        .build();
    let mut request = open_request(&meter, &time);
    let wait_for_upkeep = |handle: &tokenmeter_prometheus::Handle| {
        let before = handle.upkeep_passes();
        let deadline = Instant::now() + Duration::from_secs(10);
        while handle.upkeep_passes() < before + 2 {
            assert!(
                Instant::now() < deadline,
                "the upkeep thread did not run within 10 s"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    burst(&mut request, &time);
    wait_for_upkeep(&handle);
    let baseline = ALLOCATOR.allocated();
    let mut peak = 0;
    for _ in 0..BURSTS {
        burst(&mut request, &time);
        wait_for_upkeep(&handle);
        peak = peak.max(grown_since(baseline));
    }
    assert!(handle.upkeep_passes() >= 2 * BURSTS as u64);
    peak
}

#[test]
fn memory_stays_bounded_without_scrapes_while_the_upkeep_runs() {
    // One test, run in sequence: the allocator counts the whole process.
    let unbounded = growth_without_upkeep();
    assert!(
        unbounded > 2 * BOUND,
        "the control should grow by about 16 MB (1 million samples), grew {unbounded} bytes"
    );
    let bounded = peak_growth_with_upkeep();
    assert!(
        bounded < BOUND,
        "with the upkeep running, {} samples grew memory by {bounded} bytes (bound {BOUND})",
        BURST * BURSTS
    );
    println!(
        "growth without upkeep: {unbounded} B for 1 M samples; peak with upkeep: {bounded} B for 2 M samples"
    );
}
