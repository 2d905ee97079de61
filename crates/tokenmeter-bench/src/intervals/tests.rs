use std::time::{Duration, Instant};

use tokenmeter::report::{Bounds, Confidence, SummaryBounds, wilson};

use super::itl::{self, Clusters};
use super::rates::{self, Rates};
use super::rows::Rows;
use super::*;
use crate::slices::Slices;
use crate::slo::Slo;
use crate::summary::summarize;
use crate::tests::manual_run::{MS, Run};

/// A deterministic stream of numbers in [0, 1) (a linear congruential generator).
fn uniform(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

/// `requests` requests of `per` gaps each: each gap 1 + a request's own level (drawn once
/// per request, scaled by `shared`) + its own noise (scaled by 1 − `shared`).
fn clusters(requests: usize, per: usize, shared: f64) -> Clusters {
    Clusters::from_requests(requests_of_ns(requests, per, shared))
}

/// As [`requests_of_ns`], in seconds.
fn requests_of(requests: usize, per: usize, shared: f64) -> Vec<Vec<f64>> {
    requests_of_ns(requests, per, shared)
        .into_iter()
        .map(|r| r.into_iter().map(|ns| ns as f64 / 1e9).collect())
        .collect()
}

/// The gaps of [`clusters`] in whole nanoseconds (as a run keeps them).
fn requests_of_ns(requests: usize, per: usize, shared: f64) -> Vec<Vec<u64>> {
    let mut state = 7;
    (0..requests)
        .map(|_| {
            let level = uniform(&mut state);
            (0..per)
                .map(|_| 1.0 + shared * level + (1.0 - shared) * uniform(&mut state))
                .map(|s| (s * 1e9).round() as u64)
                .collect()
        })
        .collect()
}

fn width(b: Bounds) -> f64 {
    let (lo, hi) = b.interval().expect("an interval");
    hi - lo
}

#[test]
fn the_itl_interval_widens_when_a_requests_gaps_are_correlated() {
    let level = Confidence::P95;
    for (shared, wider) in [(0.0, false), (1.0, true)] {
        let c = clusters(60, 50, shared);
        let all: Vec<f64> = requests_of(60, 50, shared).concat();
        let naive = SummaryBounds::of(all, level);
        let resampled = itl::bounds(&c, level, 1).bounds.unwrap();
        let ratio = width(resampled.p50) / width(naive.p50);
        // Independent gaps: resampling requests agrees with the order statistics. Gaps that
        // share their request's level: 60 requests carry the information, not 3,000 gaps,
        // and the interval is several times wider than the order statistics' over all gaps.
        if wider {
            assert!(ratio > 3.0, "shared {shared}: ratio {ratio}");
        } else {
            assert!(
                (0.5..2.0).contains(&ratio),
                "shared {shared}: ratio {ratio}"
            );
        }
        let mean_ratio = width(resampled.mean) / width(naive.mean);
        assert_eq!(
            mean_ratio > 3.0,
            wider,
            "mean, shared {shared}: {mean_ratio}"
        );
    }
}

/// Issue 30: the ITL's resampling copied every gap of the run at 16 bytes (with the slack of
/// a growing `Vec`), also beyond `MAX_GAPS`, where no interval is computed: 30 bytes per
/// streamed token at the end of a long run, four times what the run keeps. Now 8 bytes a gap,
/// allocated once, and nothing beyond `MAX_GAPS`.
#[test]
fn the_itl_resampling_holds_8_bytes_a_gap_and_nothing_beyond_its_limit() {
    let mut gaps = crate::gaps::Gaps::new();
    let (requests, per) = (1_000, 99_u64);
    let spans: Vec<_> = (0..requests)
        .map(|r| gaps.add((0..per).map(|k| Duration::from_nanos(40_000 + (r * 7 + k) % 997))))
        .collect();
    let with_a_long_one = gaps.add([Duration::from_secs(5), Duration::from_nanos(1)]);
    let spans: Vec<_> = spans.into_iter().chain([with_a_long_one]).collect();
    let c = Clusters::of(&gaps, &spans);
    let n = (requests * per + 2) as usize;
    let held = c.held_bytes();
    // The gaps at 8 bytes, and 16 a request (with its `Vec`'s slack) for its sum.
    let sums = 2 * (requests as usize + 1) * 16;
    assert!(held <= n * 8 + 64 + sums, "{held} bytes for {n} gaps");
    let b = itl::bounds(&c, Confidence::P95, 1);
    assert_eq!((b.gaps, b.requests), (n as u64, requests + 1));
    let (lo, hi) = b.bounds.unwrap().p99.interval().expect("an interval");
    assert!(lo > 39e-6 && hi < 42e-6, "{lo} {hi}");
    // The longest gap is the pool's maximum: p100 of a resample that holds it.
    let mut weights = vec![0; requests as usize + 1];
    weights[requests as usize] = 1;
    let (mean, at) = c.pooled(&weights, &[0.0, 50.0, 100.0, 100.0]);
    assert_eq!((at[0], at[2]), (1e-9, 5.0));
    assert_eq!(mean, (5.0 + 1e-9) / 2.0);

    let mut many = crate::gaps::Gaps::new();
    let over = itl::MAX_GAPS as u64 + 1;
    let span = many.add((0..over).map(|_| Duration::from_micros(40)));
    let too_many = Clusters::of(&many, &[span, span]);
    assert_eq!(too_many.held_bytes(), 0, "nothing copied beyond MAX_GAPS");
    let b = itl::bounds(&too_many, Confidence::P95, 1);
    assert_eq!((b.bounds, b.gaps), (None, 2 * over));
}

#[test]
fn a_resamples_pooled_percentiles_are_numpys_of_the_pool() {
    let requests = requests_of(9, 7, 0.3);
    let c = Clusters::from_requests(requests_of_ns(9, 7, 0.3));
    let percents = [50.0, 90.0, 95.0, 99.0];
    for weights in [
        vec![1; 9],
        vec![0, 3, 0, 1, 0, 0, 2, 2, 1],
        vec![0, 0, 0, 0, 9, 0, 0, 0, 0],
    ] {
        let mut pool: Vec<f64> = Vec::new();
        for (r, &w) in requests.iter().zip(&weights) {
            for _ in 0..w {
                pool.extend(r);
            }
        }
        pool.sort_by(f64::total_cmp);
        let (mean, at) = c.pooled(&weights, &percents);
        let expected = pool.iter().sum::<f64>() / pool.len() as f64;
        assert!((mean - expected).abs() < 1e-12, "{weights:?}");
        for (k, p) in percents.iter().enumerate() {
            let numpy = tokenmeter::report::percentile(&pool, *p).unwrap();
            assert!(
                (at[k] - numpy).abs() < 1e-12,
                "p{p} {weights:?}: {} {numpy}",
                at[k]
            );
        }
    }
}

#[test]
fn the_itl_resampling_is_seeded_and_marks_too_few() {
    let c = clusters(30, 5, 0.5);
    let a = itl::bounds(&c, Confidence::P95, 3);
    assert_eq!(
        a,
        itl::bounds(&c, Confidence::P95, 3),
        "same seed, same bounds"
    );
    assert_ne!(a, itl::bounds(&c, Confidence::P95, 4));
    assert_eq!((a.gaps, a.requests, a.resamples), (150, 30, 1000));
    // 150 gaps cannot bound p99 at 95%.
    let bounds = a.bounds.unwrap();
    assert_eq!(
        bounds.p99,
        Bounds::TooFew {
            have: 150,
            need: 368
        }
    );
    assert!(bounds.p95.interval().is_some());
    let one = itl::bounds(&clusters(1, 500, 0.5), Confidence::P95, 3);
    assert_eq!(
        one.bounds.unwrap().p50,
        Bounds::TooFew { have: 1, need: 2 },
        "one request: nothing to resample"
    );
}

#[test]
fn the_itl_resampling_of_25000_gaps_is_quick() {
    let c = clusters(500, 50, 0.5);
    let started = Instant::now();
    let out = itl::bounds(&c, Confidence::P95, 0);
    let took = started.elapsed();
    eprintln!(
        "ITL resampling: 25,000 gaps, {} resamples: {took:?}",
        out.resamples
    );
    assert_eq!(out.resamples, 1000);
    assert!(out.bounds.unwrap().p99.interval().is_some());
    // Generous for a debug build on a loaded machine; see the guide for the release figure.
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert_eq!(itl::resamples_for(25_000), 1000);
    assert_eq!(itl::resamples_for(100_000), 500);
    assert_eq!(itl::resamples_for(1_000_000), 200);
}

/// 200 successes (the main job's size), 40 ms TTFT apart from one another by 1 ms.
fn two_hundred() -> Run {
    let mut run = Run::new();
    for i in 0..200_u32 {
        run.ok(
            Duration::from_millis(u64::from(i) * 10),
            (40 + i % 17) * MS,
            (2 + i % 3) * MS,
            4 + i % 5,
        );
    }
    run
}

#[test]
fn p99_of_200_requests_is_too_few_and_every_row_is_the_summarys() {
    let run = two_hundred();
    let summary = summarize(&run.measured, &run.gaps, &Slo::default());
    let rows = Rows::of(&run.measured, Confidence::P95);
    assert_eq!(
        rows.ttft.p99,
        Bounds::TooFew {
            have: 200,
            need: 368
        }
    );
    for (name, b, point, count) in [
        ("ttft", rows.ttft, &summary.ttft, 200),
        ("tpot", rows.tpot, &summary.tpot, 200),
        ("e2e", rows.e2e, &summary.e2e, 200),
        ("e2e_stream", rows.e2e_stream, &summary.e2e_stream, 200),
        (
            "output_tokens",
            rows.output_tokens,
            &summary.output_tokens,
            200,
        ),
    ] {
        assert_eq!(point.count, count, "{name}");
        assert_eq!(b.too_few(), vec![("p99", count, 368)], "{name}");
        for (stat, value) in [("p50", point.p50), ("p95", point.p95), ("mean", point.mean)] {
            let bounds = b.named().into_iter().find(|(n, _)| *n == stat).unwrap().1;
            let (lo, hi) = bounds.interval().unwrap();
            assert!(
                lo <= value && value <= hi,
                "{name} {stat}: {lo} {value} {hi}"
            );
        }
    }
}

#[test]
fn attainment_and_success_are_wilson_intervals() {
    let mut run = two_hundred();
    for i in 0..10 {
        run.error(
            Duration::from_secs(3) + MS * i,
            Duration::from_secs(3) + MS * (i + 1),
            tokenmeter::ErrorClass::Timeout,
        );
    }
    // TTFT 40..=56 ms: those above 50 ms miss the objective.
    let slo: Slo = "ttft=50ms".parse().unwrap();
    let summary = summarize(&run.measured, &run.gaps, &slo);
    let slices = Slices::of(&run.measured, &run.gaps, &slo, None, None);
    let rates = Rates::of(&summary, &slices, Confidence::new(0.9).unwrap());
    let z = Confidence::new(0.9).unwrap().z();
    let (lo, hi) = wilson(summary.good_requests, 210, z).unwrap();
    assert!(summary.good_requests > 100 && summary.good_requests < 200);
    assert_eq!(rates.attainment, Bounds::Within { lo, hi });
    let (lo, hi) = wilson(200, 210, z).unwrap();
    assert_eq!(rates.success_rate, Bounds::Within { lo, hi });
}

#[test]
fn throughputs_vary_by_slice_and_need_three_slices() {
    let level = Confidence::P95;
    assert_eq!(
        rates::rate(5.0, &[5.0, 5.0], 4.0, level),
        Bounds::TooFew { have: 2, need: 3 }
    );
    assert_eq!(
        rates::rate(5.0, &[5.0; 4], 6.0, level),
        Bounds::Within { lo: 5.0, hi: 5.0 },
        "the same rate in every slice"
    );
    // Interior slices 4, 5, 6 of a run 5 slices long: s = 1, half-width t(2) / √5.
    let (lo, hi) = rates::rate(5.0, &[4.0, 5.0, 6.0], 5.0, level)
        .interval()
        .unwrap();
    let half = level.t(2) / 5f64.sqrt();
    assert!((hi - 5.0 - half).abs() < 1e-12 && (5.0 - lo - half).abs() < 1e-12);
    assert_eq!(
        rates::rate(0.1, &[0.0, 0.0, 3.0], 5.0, level)
            .interval()
            .unwrap()
            .0,
        0.0
    );
}

#[test]
fn the_first_and_last_slices_ramp_and_drain_outside_the_variation() {
    // A steady 10 requests a second, one request every 100 ms for 10 s, each 1 s long: the
    // first slice (nothing ended yet) and the last (the drain) differ by how a run starts and
    // ends, not by chance; the interior slices are steady, so the interval is tight.
    let mut run = Run::new();
    for i in 0..100u32 {
        run.ok(MS * (i * 100), MS * 50, MS * 105, 10);
    }
    let slo = Slo::default();
    let summary = summarize(&run.measured, &run.gaps, &slo);
    let slices = Slices::of(
        &run.measured,
        &run.gaps,
        &slo,
        Some(Duration::from_secs(1)),
        None,
    );
    assert!(slices.slices.len() >= 5, "{}", slices.slices.len());
    let first = slices.slices[0].summary.request_throughput;
    assert!(first < 1.0, "nothing ends in the first second: {first}");
    let rates = rates::Rates::of(&summary, &slices, Confidence::P95);
    let (lo, hi) = rates.request_throughput.interval().unwrap();
    let point = summary.request_throughput;
    assert!(
        hi - lo < 0.1 * point,
        "steady interior slices give a tight interval: {lo}..{hi} around {point}"
    );
    assert_eq!(rates.slices as usize, slices.slices.len() - 2);
}

#[test]
fn a_runs_intervals_hold_its_figures_and_go_into_the_json() {
    let run = two_hundred();
    let slo = Slo::default();
    let summary = summarize(&run.measured, &run.gaps, &slo);
    let slices = Slices::of(&run.measured, &run.gaps, &slo, None, None);
    let iv = RunIntervals::of(&Inputs {
        measured: (&run.measured).into(),
        gaps: &run.gaps,
        summary: &summary,
        slices: &slices,
        level: Confidence::P95,
        seed: 0,
    });
    assert!(iv.throughput_slices >= 3, "{}", iv.throughput_slices);
    let (lo, hi) = iv.request_throughput.interval().unwrap();
    assert!(lo < summary.request_throughput && summary.request_throughput < hi);
    let (lo, hi) = iv.itl.unwrap().p50.interval().unwrap();
    assert!(lo <= summary.itl.p50 && summary.itl.p50 <= hi);
    let plain = serde_json::to_value(&summary).unwrap();
    let mut annotated = plain.clone();
    json::annotate(&mut annotated, &iv);
    // Every key and value kept.
    for (key, value) in plain.as_object().unwrap() {
        match value.as_object() {
            Some(stat) => {
                for (k, v) in stat {
                    assert_eq!(&annotated[key][k], v, "{key}.{k}");
                }
            }
            None => assert_eq!(&annotated[key], value, "{key}"),
        }
    }
    let ttft = &annotated["ttft"];
    assert_eq!(ttft["ci"]["level"], 0.95);
    assert_eq!(ttft["ci"]["method"], "order statistics");
    assert!(ttft["ci"]["p99"].is_null());
    assert_eq!(ttft["too_few"]["p99"]["have"], 200);
    assert_eq!(ttft["too_few"]["p99"]["need"], 368);
    let p50 = ttft["ci"]["p50"].as_array().unwrap();
    assert!(p50[0].as_f64().unwrap() <= plain["ttft"]["p50"].as_f64().unwrap());
    assert_eq!(annotated["itl"]["ci"]["method"], "resampled requests");
    assert_eq!(annotated["itl"]["ci"]["resamples"], 1000);
    assert_eq!(annotated["ci"]["attainment"].as_array().unwrap().len(), 2);
    assert!(annotated["ci"]["request_throughput"].is_array());
}
