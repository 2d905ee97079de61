//! Slice membership on a manual clock, and the server's view of each slice from scrapes made
//! up here.

use std::time::Duration;

use tokenmeter::ErrorClass;

use super::*;
use crate::server_view::histogram::Buckets;
use crate::server_view::names::Snapshot;
use crate::server_view::scraper::Scrape;
use crate::server_view::totals::{Sums, Totals};
use crate::tests::manual_run::{MS, Run};

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

/// A scrape at `ms` whose TTFT, E2E and queue histograms hold `(sum, count)`.
fn sums_at(ms: u64, ttft: (f64, f64), e2e: (f64, f64), queue: (f64, f64)) -> Scrape {
    let totals = |(sum, count): (f64, f64)| Some(Totals { sum, count });
    Scrape {
        at: Duration::from_millis(ms),
        snapshot: Snapshot {
            sums: Sums {
                ttft: totals(ttft),
                e2e: totals(e2e),
                queue: totals(queue),
                itl: None,
            },
            ..Snapshot::default()
        },
    }
}

#[test]
fn client_minus_server_is_a_difference_of_exact_means() {
    // A: first token at 0.5 s (TTFT 0.5), end 1.305 s. B: sent 0.2 s, first token at 0.3 s
    // (TTFT 0.1), end 0.405 s. C: sent 1.5 s, an error at 2.5 s (E2E 1.0), no token.
    let run = Run::three();
    // The server saw each request 1-3 ms shorter: TTFT 0.099 (B) and 0.498 (A); E2E 0.204
    // (B), 1.303 (A), 0.999 (C); queue 2 ms each.
    let scrapes = Scrapes {
        ok: vec![
            sums_at(0, (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)),
            sums_at(500, (0.099, 1.0), (0.204, 1.0), (0.002, 1.0)),
            sums_at(1000, (0.597, 2.0), (0.204, 1.0), (0.004, 2.0)),
            sums_at(3000, (0.597, 2.0), (2.506, 3.0), (0.006, 3.0)),
        ],
        ..Scrapes::default()
    };
    let report = scrapes.report("http://x/metrics".into(), Duration::from_millis(500));
    let s = Slices::of(
        &run.measured,
        &run.gaps,
        &Slo::default(),
        Some(Duration::from_secs(1)),
        Some((&scrapes, report)),
    );
    // Slice 0, between the scrapes at 0 and 1 s: the client's TTFT of A and B (mean 0.3)
    // against Δsum/Δcount = 0.597 / 2.
    let zero = s.slices[0].server.as_ref().unwrap();
    assert_eq!(zero.window_s, Some((0.0, 1.0)));
    let ttft = zero.ttft_mean.unwrap();
    assert!(close(ttft.client.mean_s, 0.3) && ttft.client.count == 2.0);
    assert!(close(ttft.server.mean_s, 0.2985) && ttft.server.count == 2.0);
    assert!(close(zero.client_minus_server_ttft_mean.unwrap(), 0.0015));
    // E2E: B ended in the window (0.205 against 0.204).
    assert!(close(zero.client_minus_server_e2e_mean.unwrap(), 0.001));
    assert!(close(zero.queue_server_mean.unwrap().mean_s, 0.002));
    // Slice 1: both bounds are the scrape at 1 s: nothing to compare.
    let one = s.slices[1].server.as_ref().unwrap();
    assert_eq!(
        (one.client_minus_server_ttft_mean, one.e2e_mean),
        (None, None)
    );
    // Slice 2 (the last): from 1 s to the scrape after the run; A and C ended.
    let two = s.slices[2].server.as_ref().unwrap();
    assert!(close(two.client_minus_server_e2e_mean.unwrap(), 0.0015));
    assert_eq!(two.ttft_mean, None, "no first token");
    // The whole run: first scrape to last.
    let run_view = s.server_run.as_ref().unwrap();
    assert!(close(
        run_view.client_minus_server_ttft_mean.unwrap(),
        0.0015
    ));
    let e2e = run_view.e2e_mean.unwrap();
    assert!(close(e2e.client.mean_s, (0.205 + 1.305 + 1.0) / 3.0));
    assert!(close(e2e.difference(), 0.004 / 3.0));
    // In --json, under the names the docs give.
    let json = serde_json::to_value(&s).unwrap();
    let first = &json["slices"][0]["server"];
    assert!(close(
        first["client_minus_server_ttft_mean"].as_f64().unwrap(),
        0.0015
    ));
    assert!(first["ttft_mean"]["server"]["mean_s"].is_f64());
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
    assert!(
        close(ttft.count, 2.0) && close(ttft.p50.estimate, 0.2),
        "{ttft:?}"
    );
    // Shown as the bucket it falls in: (0, 200] ms.
    assert_eq!(ttft.p50.bucket, (0.0, Some(0.2)));
    assert_eq!(ttft.p50.interval_ms(), "(0, 200]");
    // No _sum/_count scraped: no difference of means, and never one of percentiles.
    assert_eq!(zero.client_minus_server_ttft_mean, None);
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
