//! The figures across runs computed from runs measured on a manual clock: each run's own
//! summary, the pooled sample, the rates over summed durations, the attainment's Wilson interval.

use std::time::Duration;

use tokenmeter::ErrorClass;
use tokenmeter::report::{Bounds, Confidence, wilson};

use super::figures::{Part, of_parts};
use crate::slo::Slo;
use crate::summary::summarize;
use crate::tests::manual_run::{MS, Run as Manual};

/// `ttfts` successes of 3 tokens 10 ms apart, sent 100 ms apart, and `errors` errors.
fn run(ttfts: &[u32], errors: usize) -> Manual {
    let mut run = Manual::new();
    let mut at = Duration::ZERO;
    for ttft in ttfts {
        run.ok(at, MS * *ttft, 10 * MS, 3);
        at += 100 * MS;
    }
    for _ in 0..errors {
        run.error(at, at + MS, ErrorClass::ServerError);
        at += 100 * MS;
    }
    run
}

#[test]
fn pooled_is_one_sample_of_every_run_and_each_run_its_own_summary() {
    let slo: Slo = "ttft=35ms".parse().unwrap();
    let (a, b) = (run(&[10, 20, 30], 0), run(&[40, 50, 60, 70], 1));
    let summaries = [&a, &b].map(|r| summarize(&r.measured, &r.gaps, &slo));
    let parts: Vec<Part<'_>> = [&a, &b]
        .iter()
        .zip(&summaries)
        .map(|(r, summary)| Part {
            measured: (&r.measured).into(),
            gaps: &r.gaps,
            summary,
        })
        .collect();
    let figures = of_parts(&parts, Confidence::P95);
    let get = |name: &str| figures.iter().find(|f| f.name == name).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;

    // Each run's TTFT p50 is its own summary's; the mean is theirs.
    let p50 = get("ttft_p50");
    assert!(close(p50.runs[0].unwrap(), 0.020) && close(p50.runs[1].unwrap(), 0.055));
    assert!(close(p50.mean.unwrap(), 0.0375));
    // Pooled: the median of the seven TTFTs 10..70 ms, with an order-statistic interval
    // (7 samples are enough for a median at 95%), and no p95 interval (needs 72).
    assert!(close(p50.pooled.unwrap(), 0.040));
    let (lo, hi) = p50.pooled_bounds.unwrap().interval().unwrap();
    assert!(lo < 0.040 && 0.040 < hi, "{lo} {hi}");
    assert_eq!(
        get("ttft_p95").pooled_bounds,
        Some(Bounds::TooFew { have: 7, need: 72 })
    );
    // ITL: every gap is 10 ms, in every run.
    assert!(close(get("itl_p95").pooled.unwrap(), 0.010));

    // Rates pool over the summed durations; no interval of their own.
    let duration = summaries[0].duration_s + summaries[1].duration_s;
    let rate = get("request_throughput");
    assert!(close(rate.pooled.unwrap(), 7.0 / duration));
    assert_eq!(rate.pooled_bounds, None);
    assert!(close(
        rate.runs[0].unwrap(),
        summaries[0].request_throughput
    ));

    // Attainment: good (TTFT ≤ 35 ms: 3 of 3, then 0 of 5) over all sent, Wilson.
    let attainment = get("attainment");
    assert_eq!(attainment.runs, vec![Some(1.0), Some(0.0)]);
    // Its t interval (0.5 ± 6.35) is clipped to what an attainment can be.
    assert_eq!(attainment.mean_bounds, Bounds::Within { lo: 0.0, hi: 1.0 });
    let (lo, _) = get("ttft_p50").mean_bounds.interval().unwrap();
    assert!(lo >= 0.0, "a latency is not negative: {lo}");
    assert!(close(attainment.pooled.unwrap(), 3.0 / 8.0));
    let (lo, hi) = wilson(3, 8, Confidence::P95.z()).unwrap();
    assert_eq!(attainment.pooled_bounds, Some(Bounds::Within { lo, hi }));
    assert_eq!(figures.len(), 13);
}

#[test]
fn a_run_with_no_success_has_no_latency_and_is_left_out_of_the_mean() {
    let slo = Slo::default();
    let (a, b) = (run(&[10, 30], 0), run(&[], 2));
    let summaries = [&a, &b].map(|r| summarize(&r.measured, &r.gaps, &slo));
    let parts: Vec<Part<'_>> = [&a, &b]
        .iter()
        .zip(&summaries)
        .map(|(r, summary)| Part {
            measured: (&r.measured).into(),
            gaps: &r.gaps,
            summary,
        })
        .collect();
    let figures = of_parts(&parts, Confidence::P95);
    let p50 = figures.iter().find(|f| f.name == "ttft_p50").unwrap();
    assert!((p50.runs[0].unwrap() - 0.020).abs() < 1e-9 && p50.runs[1].is_none());
    assert_eq!(p50.mean, p50.runs[0]);
    assert_eq!(p50.mean_bounds, Bounds::TooFew { have: 1, need: 2 });
}
