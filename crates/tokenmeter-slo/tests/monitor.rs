//! The in-process monitor: windowed percentiles against exact ones, burn-rate alerts, the
//! low-traffic guard, published counters, saturation and diagnosis.

use std::sync::Arc;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use tokenmeter::report::percentile;
use tokenmeter::{Clock, ErrorClass, Labels, ManualClock, Meter, Series};
use tokenmeter_slo::alert::Severity;
use tokenmeter_slo::diagnosis::Cause;
use tokenmeter_slo::{LatencyMetric, Objective, SaturationLevel, SloMonitor, SloSpec};

struct Rig {
    time: ManualClock,
    monitor: SloMonitor,
    series: Series,
}

fn rig(spec: SloSpec) -> Rig {
    let time = ManualClock::new();
    let clock = Clock::manual(&time);
    let monitor = SloMonitor::new(spec, clock.clone());
    let meter = Meter::builder().clock(clock).sink(monitor.clone()).build();
    let series = meter.series(&Labels::server("chat"));
    Rig {
        time,
        monitor,
        series,
    }
}

/// A small deterministic generator of uniform numbers in (0, 1).
struct Uniform(u64);
impl Uniform {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        (-2.0 * self.next().ln()).sqrt() * (std::f64::consts::TAU * self.next()).cos()
    }
}

/// Runs one request per value, all started together, with TTFT = value.
fn run_ttfts(rig: &Rig, mut ttfts: Vec<Duration>) {
    ttfts.sort();
    let mut requests: Vec<_> = ttfts.iter().map(|_| rig.series.start()).collect();
    let start = rig.time.now();
    for (request, ttft) in requests.iter_mut().zip(&ttfts) {
        rig.time.set(start + *ttft);
        request.record_tokens(1);
    }
    for mut request in requests {
        request.succeed();
    }
}

#[test]
fn windowed_percentiles_are_within_one_percent_of_exact() {
    let mut u = Uniform(7);
    let distributions: Vec<(&str, Vec<f64>)> = vec![
        (
            "uniform 50–500 ms",
            (0..5_000).map(|_| 0.05 + 0.45 * u.next()).collect(),
        ),
        (
            "lognormal around 300 ms",
            (0..5_000)
                .map(|_| (0.3f64.ln() + 0.8 * u.normal()).exp())
                .collect(),
        ),
        (
            "exponential, mean 200 ms",
            (0..5_000).map(|_| 0.001 - 0.2 * u.next().ln()).collect(),
        ),
        (
            "bimodal 80 ms (85%) / 2 s (15%)",
            (0..5_000)
                .map(|i| {
                    if i % 20 < 3 {
                        2.0 + 0.2 * u.next()
                    } else {
                        0.08 + 0.02 * u.next()
                    }
                })
                .collect(),
        ),
    ];
    for (name, values) in distributions {
        let spec = SloSpec::builder()
            .objective(Objective::latency(
                LatencyMetric::Ttft,
                95.0,
                Duration::from_secs(1),
            ))
            .build()
            .expect("spec");
        let rig = rig(spec);
        let ttfts: Vec<Duration> = values.iter().map(|v| Duration::from_secs_f64(*v)).collect();
        run_ttfts(&rig, ttfts.clone());
        let mut exact: Vec<f64> = ttfts.iter().map(Duration::as_secs_f64).collect();
        exact.sort_by(f64::total_cmp);
        let status = rig.monitor.status();
        let window = &status.classes[0].windows[0];
        assert_eq!(window.requests, 5_000);
        for (p, got) in [
            (50.0, window.ttft.p50),
            (90.0, window.ttft.p90),
            (95.0, window.ttft.p95),
            (99.0, window.ttft.p99),
        ] {
            let want = percentile(&exact, p).expect("values");
            let got = got.expect("a percentile");
            let error = (got - want).abs() / want;
            assert!(
                error <= 0.01,
                "{name}: p{p} {got} vs exact {want}: {:.3}% off",
                error * 100.0
            );
        }
    }
}

/// `per_minute` requests a minute for `minutes`, each failing when `fail` is true.
fn traffic(rig: &Rig, minutes: u64, per_minute: u64, fail: bool) {
    let gap = Duration::from_secs(60) / per_minute as u32;
    for _ in 0..minutes * per_minute {
        let mut request = rig.series.start();
        rig.time.advance(gap);
        if fail {
            request.fail(ErrorClass::ServerError);
        } else {
            request.record_tokens(1);
            request.succeed();
        }
    }
}

fn success_spec() -> SloSpec {
    SloSpec::builder()
        .objective(Objective::success_rate(0.99))
        .build()
        .expect("spec")
}

#[test]
fn burn_rate_alerts_page_then_ticket_then_clear() {
    let rig = rig(success_spec());
    traffic(&rig, 60, 100, false);
    let alert = |rig: &Rig| rig.monitor.status().classes[0].objectives[0].alert;
    assert_eq!(alert(&rig), Severity::None);

    traffic(&rig, 15, 100, true); // 15 minutes of failures: 1h ratio ≈ 0.25 > 14.4 × 1%
    let status = rig.monitor.status();
    let objective = &status.classes[0].objectives[0];
    assert_eq!(objective.alert, Severity::Page, "{status}");
    assert!(
        objective
            .alert_rule
            .as_deref()
            .is_some_and(|r| r.starts_with("1h & 5m")),
        "{:?}",
        objective.alert_rule
    );
    assert!(
        objective.budget_remaining.is_some_and(|b| b < 0.0),
        "the budget is overspent"
    );

    traffic(&rig, 60, 100, false); // an hour of recovery: the short windows clear the pages
    let status = rig.monitor.status();
    assert_eq!(
        status.classes[0].objectives[0].alert,
        Severity::Ticket,
        "{status}"
    );

    traffic(&rig, 8 * 60, 100, false); // 6h window below 1% errors: the ticket clears too
    assert_eq!(alert(&rig), Severity::None);
}

#[test]
fn low_traffic_never_alerts() {
    let rig = rig(success_spec());
    for _ in 0..24 {
        let mut request = rig.series.start();
        rig.time.advance(Duration::from_secs(300)); // one request every 5 minutes, all failing
        request.fail(ErrorClass::Timeout);
    }
    let status = rig.monitor.status();
    let objective = &status.classes[0].objectives[0];
    assert_eq!(objective.alert, Severity::None);
    assert!(objective.low_traffic, "the guard says why nothing fired");
}

#[test]
fn verdict_counters_are_published_with_cached_handles() {
    let recorder = Arc::new(DebuggingRecorder::new());
    let snapshotter = recorder.snapshotter();
    let spec = SloSpec::builder()
        .objective(Objective::latency(
            LatencyMetric::Ttft,
            90.0,
            Duration::from_millis(100),
        ))
        .objective(Objective::success_rate(0.99))
        .build()
        .expect("spec");
    let time = ManualClock::new();
    let clock = Clock::manual(&time);
    let monitor = SloMonitor::publish_to(spec, clock.clone(), recorder);
    let meter = Meter::builder().clock(clock).sink(monitor).build();
    let series = meter.series(&Labels::server("chat"));
    for (ttft_ms, tokens) in [(50, 10), (100, 20), (150, 30)] {
        let mut request = series.start();
        time.advance(Duration::from_millis(ttft_ms));
        for _ in 0..tokens {
            request.record_tokens(1);
        }
        request.succeed();
    }
    series.start().fail(ErrorClass::RateLimited);
    let values: Vec<(String, Vec<String>, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| match value {
            DebugValue::Counter(n) => Some((
                key.key().name().to_string(),
                key.key()
                    .labels()
                    .map(|l| format!("{}={}", l.key(), l.value()))
                    .collect(),
                n,
            )),
            _ => None,
        })
        .collect();
    let get = |name: &str, objective: Option<&str>| {
        values
            .iter()
            .find(|(n, labels, _)| {
                n == name && objective.is_none_or(|o| labels.contains(&format!("objective={o}")))
            })
            .map(|v| v.2)
            .unwrap_or_else(|| panic!("{name} {objective:?} missing in {values:?}"))
    };
    assert_eq!(get("tokenmeter_slo_requests_total", None), 4);
    assert_eq!(get("tokenmeter_slo_requests_good_total", None), 2); // 50 ms and 100 ms (inclusive)
    assert_eq!(get("tokenmeter_slo_output_tokens_good_total", None), 30);
    assert_eq!(get("tokenmeter_slo_output_tokens_total", None), 60);
    assert_eq!(
        get("tokenmeter_slo_objective_events_total", Some("ttft_p90")),
        3
    ); // the error had no TTFT
    assert_eq!(
        get("tokenmeter_slo_objective_good_total", Some("ttft_p90")),
        2
    );
    assert_eq!(
        get(
            "tokenmeter_slo_objective_events_total",
            Some("success_rate")
        ),
        4
    );
    assert_eq!(
        get("tokenmeter_slo_objective_good_total", Some("success_rate")),
        3
    );
}

#[test]
fn a_growing_queue_warns_before_the_ttft_objective_breaks_and_is_diagnosed() {
    let spec = SloSpec::builder()
        .objective(Objective::latency(
            LatencyMetric::Ttft,
            95.0,
            Duration::from_secs(1),
        ))
        .waiting_max(20.0)
        .saturation_horizon(Duration::from_secs(60))
        .build()
        .expect("spec");
    let rig = rig(spec);
    // Every 300 ms the server schedules one request (prefill 200 ms) while 1.8 arrive on
    // average: the queue grows steadily.
    let mut queue = std::collections::VecDeque::new();
    let mut warned_at = None;
    let mut breached_at = None;
    for tick in 0..600u64 {
        rig.time.advance(Duration::from_millis(100));
        if tick % 5 != 4 {
            queue.push_back(rig.series.start());
        }
        queue.push_back(rig.series.start());
        if let Some(mut request) = queue.pop_front() {
            request.mark_scheduled();
            rig.time.advance(Duration::from_millis(200));
            request.record_tokens(1);
            request.succeed();
        }
        let status = rig.monitor.status();
        if warned_at.is_none()
            && status
                .saturation
                .iter()
                .any(|s| s.level != SaturationLevel::Ok)
        {
            warned_at = Some(tick);
        }
        let attainment = status.classes[0].objectives[0].windows[0].attainment;
        if breached_at.is_none() && attainment.is_some_and(|a| a < 0.95) {
            breached_at = Some(tick);
        }
    }
    let (warned, breached) = (
        warned_at.expect("a warning"),
        breached_at.expect("a breach"),
    );
    assert!(
        warned < breached,
        "warning at tick {warned} must come before the breach at tick {breached}"
    );
    let status = rig.monitor.status();
    let diagnosis = &status.classes[0].diagnoses[0];
    assert_eq!(diagnosis.cause, Cause::Queueing, "{}", diagnosis.sentence);
    assert!(
        diagnosis
            .sentence
            .contains("queueing: scale on queue depth"),
        "{}",
        diagnosis.sentence
    );
    assert!(
        status.summary().contains("saturation warning: waiting"),
        "{}",
        status.summary()
    );
}

#[test]
fn kv_cache_usage_reaches_the_monitor_through_the_meters_engine_recorder() {
    let spec = SloSpec::builder()
        .objective(Objective::latency(
            LatencyMetric::Ttft,
            95.0,
            Duration::from_secs(1),
        ))
        .kv_usage_max(0.9)
        .build()
        .expect("spec");
    let time = ManualClock::new();
    let clock = Clock::manual(&time);
    let monitor = SloMonitor::new(spec, clock.clone());
    let meter = Meter::builder().clock(clock).sink(monitor.clone()).build();
    let engine = meter.engine(&Labels::server("").request_model("m"));
    let kv = |monitor: &SloMonitor| {
        let status = monitor.status();
        let signal = status
            .saturation
            .iter()
            .find(|s| s.name == "kv_usage")
            .cloned()
            .expect("a kv_usage signal");
        (signal.value, signal.level)
    };
    engine.set_kv_cache_usage(0.5);
    assert_eq!(kv(&monitor), (0.5, SaturationLevel::Ok));
    time.advance(Duration::from_secs(1));
    engine.set_kv_cache_usage(1.7); // clamped to 1 by the recorder
    assert_eq!(kv(&monitor), (1.0, SaturationLevel::Breached));
}
