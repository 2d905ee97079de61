//! `bench compare`'s statistics on synthetic sides drawn from known distributions (log-normal
//! TTFT and TPOT), with fixed seeds: same-distribution pairs (A/A) rarely raise an alarm, a
//! 10% TTFT shift is detected, the bootstrap is deterministic, and repeated runs that differ
//! widen the interval. Fewer resamples than the default (300) and few pairs keep the tests
//! fast in debug builds; the intervals' level and the verdicts' rules are the command's. Set
//! `TOKENMETER_COMPARE_PAIRS=N` to run N times as many pairs and `TOKENMETER_COMPARE_RESAMPLES`
//! to change the resamples (the guide's release-build figures were measured so).

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use rand_distr::{Distribution as _, LogNormal};
use tokenmeter_bench::compare::{
    CompareSettings, Comparison, RequestFigures, RunRequests, Side, Verdict, compare, table,
    to_json,
};

/// One run of `n` requests at 10 requests/s: TTFT log-normal (median 200 ms × `ttft_scale`,
/// σ 0.4), TPOT log-normal (median 20 ms, σ 0.2), 128 output tokens; good when TTFT ≤ 500 ms
/// and TPOT ≤ 30 ms; `gaps` inter-token gaps each when `gaps` > 0.
fn run(rng: &mut StdRng, n: usize, ttft_scale: f64, gaps: usize) -> RunRequests {
    let ttft = LogNormal::new((0.2f64).ln(), 0.4).unwrap();
    let tpot = LogNormal::new((0.02f64).ln(), 0.2).unwrap();
    let mut out = RunRequests::default();
    out.duration_s = n as f64 / 10.0;
    for _ in 0..n {
        let (t, p) = (ttft.sample(rng) * ttft_scale, tpot.sample(rng));
        let mut r = RequestFigures::default();
        (r.ok, r.good) = (true, t <= 0.5 && p <= 0.03);
        (r.ttft, r.tpot, r.e2e) = (Some(t), Some(p), Some(t + p * 127.0));
        r.output_tokens = 128;
        r.itl = (0..gaps).map(|_| p * rng.random_range(0.5..1.5)).collect();
        out.requests.push(r);
    }
    out
}

fn side(runs: Vec<RunRequests>) -> Side {
    let mut side = Side::default();
    side.itl_known = runs
        .iter()
        .all(|r| r.requests.iter().all(|q| !q.itl.is_empty()));
    side.runs = runs;
    side
}

/// 300 resamples, or `TOKENMETER_COMPARE_RESAMPLES` (the command's default is 2,000).
fn settings(seed: u64) -> CompareSettings {
    let mut s = CompareSettings::default();
    let resamples = std::env::var("TOKENMETER_COMPARE_RESAMPLES").ok();
    s.resamples = resamples.and_then(|v| v.parse().ok()).unwrap_or(300);
    s.seed = seed;
    s
}

/// How many times as many pairs as by default (`TOKENMETER_COMPARE_PAIRS`, default 1).
fn scale() -> u64 {
    std::env::var("TOKENMETER_COMPARE_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1)
}

fn figure<'a>(c: &'a Comparison, name: &str) -> &'a tokenmeter_bench::compare::FigureComparison {
    c.figures.iter().find(|f| f.name == name).unwrap()
}

/// A gating figure called significant either way: a false alarm when both sides come from
/// one distribution.
fn alarm(c: &Comparison) -> bool {
    c.figures
        .iter()
        .any(|f| f.gates && matches!(f.verdict, Verdict::Regressed | Verdict::Improved))
}

#[test]
fn same_distribution_pairs_raise_no_alarm_in_95_percent() {
    let pairs = 100 * scale();
    let mut alarms = 0;
    for pair in 0..pairs {
        let mut rng = StdRng::seed_from_u64(1_000 + pair);
        let base = side(vec![run(&mut rng, 300, 1.0, 0)]);
        let new = side(vec![run(&mut rng, 300, 1.0, 0)]);
        let c = compare(&base, &new, &settings(pair)).unwrap();
        alarms += u64::from(alarm(&c));
    }
    let rate = 1.0 - alarms as f64 / pairs as f64;
    println!(
        "A/A: no alarm in {rate:.3} of {pairs} pairs (300 requests a side, {} resamples)",
        settings(0).resamples
    );
    assert!(rate >= 0.95, "A/A pairs without alarm: {rate}");
}

#[test]
fn a_ten_percent_ttft_shift_is_detected() {
    let pairs = 16 * scale();
    let (mut detected, mut beyond) = (0, 0);
    for pair in 0..pairs {
        let mut rng = StdRng::seed_from_u64(2_000 + pair);
        let base = side(vec![run(&mut rng, 2_000, 1.0, 0)]);
        let new = side(vec![run(&mut rng, 2_000, 1.10, 0)]);
        let c = compare(&base, &new, &settings(pair)).unwrap();
        let ttft = figure(&c, "ttft_p95_ms");
        detected += u64::from(ttft.verdict == Verdict::Regressed && c.regressed());
        // The stricter rule the guide weighs: the whole interval beyond the threshold.
        let (lo, _) = ttft.relative_bounds.unwrap().interval().unwrap();
        beyond += u64::from(lo > 0.05);
    }
    let strict = beyond as f64 / pairs as f64;
    println!("the interval wholly beyond 5% in {strict:.3} of {pairs} pairs");
    let power = detected as f64 / pairs as f64;
    println!(
        "power: TTFT ×1.10 detected in {power:.3} of {pairs} pairs (2,000 requests a side, {} resamples)",
        settings(0).resamples
    );
    assert!(power >= 0.75, "power {power}");
}

#[test]
fn the_same_seed_gives_the_same_comparison() {
    let mut rng = StdRng::seed_from_u64(7);
    let base = side(vec![run(&mut rng, 300, 1.0, 4), run(&mut rng, 300, 1.0, 4)]);
    let new = side(vec![run(&mut rng, 300, 1.05, 4)]);
    let a = compare(&base, &new, &settings(3)).unwrap();
    let again = compare(&base, &new, &settings(3)).unwrap();
    assert_eq!(a, again);
    let text = table(&a);
    println!("{text}");
    assert_eq!(text, table(&again));
    assert_eq!(to_json(&a), to_json(&again));
    assert!(text.contains("(2 runs)") && text.lines().all(|l| l.chars().count() <= 110));
    assert!(a.figures.iter().any(|f| f.name == "itl_p95_ms"));
    let other = compare(&base, &new, &settings(4)).unwrap();
    assert_ne!(
        figure(&a, "ttft_p50_ms").relative_bounds,
        figure(&other, "ttft_p50_ms").relative_bounds
    );
}

#[test]
fn runs_that_differ_widen_the_interval() {
    // Three repeated runs each side whose TTFT level drifts ±20% from run to run.
    let mut rng = StdRng::seed_from_u64(11);
    let runs = |rng: &mut StdRng| -> Vec<RunRequests> {
        [0.8, 1.0, 1.2]
            .iter()
            .map(|&s| run(rng, 400, s, 0))
            .collect()
    };
    let (base_runs, new_runs) = (runs(&mut rng), runs(&mut rng));
    // The same requests as one run each side: only the request-level variation is seen.
    let pooled = |runs: &[RunRequests]| {
        let mut one = RunRequests::default();
        one.requests = runs.iter().flat_map(|r| r.requests.clone()).collect();
        one.duration_s = runs.iter().map(|r| r.duration_s).sum();
        side(vec![one])
    };
    let width = |c: &Comparison| {
        let (lo, hi) = figure(c, "ttft_p50_ms")
            .relative_bounds
            .unwrap()
            .interval()
            .unwrap();
        hi - lo
    };
    let two_level = compare(
        &side(base_runs.clone()),
        &side(new_runs.clone()),
        &settings(5),
    )
    .unwrap();
    let one_level = compare(&pooled(&base_runs), &pooled(&new_runs), &settings(5)).unwrap();
    let (wide, narrow) = (width(&two_level), width(&one_level));
    println!("TTFT p50 interval width: {wide:.3} over runs, {narrow:.3} over requests alone");
    assert!(
        wide > 2.0 * narrow,
        "two-level {wide} vs one-level {narrow}"
    );
    assert!(
        two_level
            .notes
            .iter()
            .any(|n| n.contains("runs resampled first"))
    );
}

#[test]
fn a_percentile_of_too_few_requests_says_so() {
    let mut rng = StdRng::seed_from_u64(13);
    let base = side(vec![run(&mut rng, 100, 1.0, 0)]);
    let new = side(vec![run(&mut rng, 100, 3.0, 0)]);
    let c = compare(&base, &new, &settings(0)).unwrap();
    let p99 = figure(&c, "ttft_p99_ms");
    assert_eq!(p99.verdict, Verdict::TooFew);
    assert_eq!(
        p99.relative_bounds,
        Some(tokenmeter::report::Bounds::TooFew {
            have: 100,
            need: 368
        })
    );
    // The median of the same 100 requests tripled is told apart.
    assert_eq!(figure(&c, "ttft_p50_ms").verdict, Verdict::Regressed);
    assert!(c.notes.iter().any(|n| n.starts_with("ITL not compared")));
}

#[test]
fn different_shapes_are_refused_unless_allowed() {
    let mut rng = StdRng::seed_from_u64(17);
    let mut base = side(vec![run(&mut rng, 50, 1.0, 0)]);
    let mut new = side(vec![run(&mut rng, 50, 1.0, 0)]);
    base.shape.facets = vec![
        ("model".into(), "a".into()),
        ("output_tokens".into(), "128".into()),
    ];
    new.shape.facets = vec![
        ("model".into(), "b".into()),
        ("output_tokens".into(), "128".into()),
    ];
    let err = compare(&base, &new, &settings(0)).unwrap_err().to_string();
    assert!(
        err.contains("model: a vs b") && err.contains("--allow-different-shapes"),
        "{err}"
    );
    let mut allowed = settings(0);
    allowed.allow_different_shapes = true;
    let c = compare(&base, &new, &allowed).unwrap();
    assert_eq!(c.shape_differences, ["model: a vs b"]);
    let empty = compare(&base, &side(vec![RunRequests::default()]), &allowed);
    assert!(
        empty
            .unwrap_err()
            .to_string()
            .contains("new side () has no request")
    );
}

/// The command's full size: two 2,000-request sides with 128 inter-token gaps each, at the
/// default 2,000 resamples. Slow in a debug build: run it in a release build to see the time
/// a comparison takes (`cargo test --release -p tokenmeter-bench --test compare_statistics
/// -- --ignored`).
#[test]
#[ignore = "full size: run in a release build"]
fn a_full_size_comparison() {
    let mut rng = StdRng::seed_from_u64(19);
    let base = side(vec![run(&mut rng, 2_000, 1.0, 128)]);
    let new = side(vec![run(&mut rng, 2_000, 1.0, 128)]);
    let c = compare(&base, &new, &CompareSettings::default()).unwrap();
    assert!(!alarm(&c), "{c:?}");
    assert!(figure(&c, "itl_p95_ms").relative_bounds.is_some());
}

#[test]
fn odd_values_neither_panic_nor_poison_the_figures() {
    let mut rng = StdRng::seed_from_u64(23);
    let mut odd = run(&mut rng, 200, 1.0, 2);
    // A library caller's odd data: non-finite latencies and gaps, a run of no time, an empty run.
    odd.requests[0].ttft = Some(f64::NAN);
    odd.requests[1].e2e = Some(f64::INFINITY);
    for r in &mut odd.requests[2..40] {
        r.itl = vec![f64::NAN, -f64::INFINITY];
    }
    let mut no_time = run(&mut rng, 50, 1.0, 2);
    no_time.duration_s = 0.0;
    let base = side(vec![odd, no_time, RunRequests::default()]);
    let new = side(vec![run(&mut rng, 200, 1.0, 2)]);
    let c = compare(&base, &new, &settings(1)).unwrap();
    for f in &c.figures {
        assert!(f.base.is_finite() && f.new.is_finite(), "{}: {f:?}", f.name);
        if let Some((lo, hi)) = f.difference_bounds.interval() {
            assert!(
                lo.is_finite() && hi.is_finite() && lo <= hi,
                "{}: {f:?}",
                f.name
            );
        }
    }
    assert!(to_json(&c)["figures"].as_array().unwrap().len() == c.figures.len());
}

#[test]
fn one_runs_rates_have_no_interval_and_repeated_runs_do() {
    // A run's rate is its count over its duration: resampling its requests cannot move it, so
    // one run a side would give an interval of zero width that looks exact (seen: goodput
    // "-6.6% [-6.6%, -6.6%] regressed" between two runs of one engine).
    let mut rng = StdRng::seed_from_u64(11);
    let (base, mut new) = (run(&mut rng, 400, 1.0, 0), run(&mut rng, 400, 1.0, 0));
    new.duration_s *= 1.2; // the same requests over a longer run: every rate 1/1.2
    let one = compare(
        &side(vec![base.clone()]),
        &side(vec![new.clone()]),
        &settings(1),
    )
    .unwrap();
    for name in ["request_throughput", "output_throughput", "goodput"] {
        let f = figure(&one, name);
        assert_eq!(f.verdict, Verdict::TooFew, "{name}: {}", table(&one));
        assert!(f.relative_bounds.unwrap().interval().is_none());
    }
    assert!(
        one.notes.iter().any(|n| n.contains("--repeat")),
        "{:?}",
        one.notes
    );
    assert!(!one.regressed());
    // Three runs a side: the rates are judged, the 20% drop regresses goodput.
    let runs = |r: &RunRequests| vec![r.clone(), r.clone(), r.clone()];
    let three = compare(&side(runs(&base)), &side(runs(&new)), &settings(1)).unwrap();
    let goodput = figure(&three, "goodput");
    assert!(goodput.relative_bounds.unwrap().interval().is_some());
    assert_eq!(goodput.verdict, Verdict::Regressed, "{}", table(&three));
}
