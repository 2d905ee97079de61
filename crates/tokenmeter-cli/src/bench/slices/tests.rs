//! Slice membership on a manual clock, and the server's view of each slice from scrapes made
//! up here.

use std::time::Duration;

use tokenmeter::ErrorClass;

use super::*;
use crate::bench::server_view::histogram::Buckets;
use crate::bench::server_view::names::Snapshot;
use crate::bench::server_view::scraper::Scrape;
use crate::bench::tests::manual_run::{MS, Run};

/// The fixture's run, with the three requests these tests cut into slices.
trait Three {
    fn three() -> Self;
}

impl Three for Run {
    /// A: first token in slice 0, end in slice 1. B: all in slice 0. C: an error in slice 2.
    fn three() -> Self {
        let mut run = Self::new();
        // In order of their ends: the manual clock only moves forward.
        run.ok(200 * MS, 100 * MS, 100 * MS, 2); // B: first 0.3 s, end 0.405 s
        run.ok(Duration::ZERO, 500 * MS, 400 * MS, 3); // A: first 0.5 s, end 1.305 s
        run.error(1500 * MS, 2500 * MS, ErrorClass::Timeout);
        run
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn ttft_by_first_token_everything_else_by_end() {
    let run = Run::three();
    let slo: Slo = "ttft=200ms".parse().unwrap();
    let s = Slices::of(
        &run.measured,
        &run.gaps,
        &slo,
        Some(Duration::from_secs(1)),
        None,
    );
    assert_eq!(s.slices.len(), 3);
    assert!(!s.automatic && s.server_metrics.is_none());
    let [zero, one, two] = [&s.slices[0], &s.slices[1], &s.slices[2]];
    // Slice 0: B ended; the first tokens of A and B arrived.
    assert_eq!((zero.summary.requests, zero.summary.ttft.count), (1, 2));
    assert!(close(zero.summary.ttft.max, 0.5));
    assert!(close(zero.summary.request_throughput, 1.0));
    assert!(close(zero.summary.goodput, 1.0), "B met ttft ≤ 200 ms");
    assert!(close(zero.summary.output_throughput, 2.0));
    // Slice 1: A ended (its E2E and ITL are here), no first token.
    assert_eq!((one.summary.requests, one.summary.ttft.count), (1, 0));
    assert!(close(one.summary.e2e.max, 1.3));
    assert_eq!(one.summary.itl.count, 2);
    assert!(
        close(one.summary.goodput, 0.0),
        "A missed the TTFT objective"
    );
    // Slice 2: the error, over the half second the run lasted in it.
    assert!(close(two.start_s, 2.0) && close(two.end_s, 2.5));
    assert_eq!((two.summary.requests, two.summary.successful), (1, 0));
    assert_eq!(two.summary.outcomes.errors.get("timeout"), Some(&1));
    // Every request is in exactly one slice.
    let ended: u64 = s.slices.iter().map(|s| s.summary.requests).sum();
    assert_eq!(ended, 3);
}

#[test]
fn automatic_widths_are_round_and_slices_bounded() {
    let secs = |s: f64| automatic_width(Duration::from_secs_f64(s)).as_secs();
    assert_eq!(
        [
            secs(0.3),
            secs(30.0),
            secs(95.0),
            secs(1000.0),
            secs(72_000.0)
        ],
        [1, 2, 5, 60, 3600]
    );
    let run = Run::three();
    let s = Slices::of(&run.measured, &run.gaps, &Slo::default(), None, None);
    assert!(s.automatic && close(s.width_s, 1.0));
    let tiny = Slices::of(
        &run.measured,
        &run.gaps,
        &Slo::default(),
        Some(Duration::from_nanos(1)),
        None,
    );
    assert!(tiny.slices.len() <= MAX_SLICES);
}

fn snapshot(waiting: f64, buckets: [f64; 3]) -> Snapshot {
    let mut ttft = Buckets::default();
    for (le, count) in [0.2, 1.0, f64::INFINITY].into_iter().zip(buckets) {
        ttft.add(le, count);
    }
    Snapshot {
        waiting: Some(waiting),
        ttft: Some(ttft),
        names: vec!["vllm:num_requests_waiting"],
        ..Snapshot::default()
    }
}

#[test]
fn the_server_view_of_each_slice_from_gauges_and_bucket_deltas() {
    let run = Run::three();
    let at = |ms: u64| Duration::from_millis(ms);
    let scrapes = Scrapes {
        ok: vec![
            Scrape {
                at: at(0),
                snapshot: snapshot(0.0, [0.0, 0.0, 0.0]),
            },
            Scrape {
                at: at(500),
                snapshot: snapshot(2.0, [1.0, 1.0, 1.0]),
            },
            Scrape {
                at: at(1000),
                snapshot: snapshot(4.0, [1.0, 2.0, 2.0]),
            },
            Scrape {
                at: at(3000),
                snapshot: snapshot(0.0, [1.0, 2.0, 2.0]),
            },
        ],
        failed: 1,
        errors: vec!["HTTP status 500".into()],
    };
    let report = scrapes.report("http://x/metrics".into(), Duration::from_millis(500));
    let s = Slices::of(
        &run.measured,
        &run.gaps,
        &Slo::default(),
        Some(Duration::from_secs(1)),
        Some((&scrapes, report)),
    );
    let zero = s.slices[0].server.as_ref().unwrap();
    assert_eq!(zero.scrapes, 2);
    let waiting = zero.waiting.unwrap();
    assert!(close(waiting.mean, 1.0) && close(waiting.max, 2.0));
    // Buckets at 1.0 s minus at 0 s: one observation ≤ 0.2, one in (0.2, 1]; p50 = rank 1,
    // all of the first bucket: 0.2.
    let ttft = zero.ttft.unwrap();
    assert!(close(ttft.count, 2.0) && close(ttft.p50, 0.2), "{ttft:?}");
    // The client's p50 of 0.1 s and 0.5 s is 0.3 s.
    assert!(close(zero.client_minus_server_ttft.unwrap().p50, 0.1));
    // Slice 1: the scrape at 1.0 s; nothing observed up to the next boundary.
    let one = s.slices[1].server.as_ref().unwrap();
    assert_eq!((one.scrapes, one.ttft), (1, None));
    // The last slice keeps the scrape after the run.
    assert_eq!(s.slices[2].server.as_ref().unwrap().scrapes, 1);
    let run_view = s.server_run.unwrap();
    assert_eq!(run_view.scrapes, 4);
    assert!(close(run_view.ttft.unwrap().count, 2.0));
    let report = s.server_metrics.unwrap();
    assert_eq!((report.scrapes, report.failed), (4, 1));
    assert_eq!(report.names, ["vllm:num_requests_waiting"]);
}
