//! A bounded run's status ([`SloMonitor::run_status`]): no window, budget or alert longer than
//! the run, no saturation warning without a queue or a KV-cache usage behind it, and a
//! diagnosis that names the phase the data hold. The long-running status is unchanged.

use std::time::Duration;

use tokenmeter::{Clock, Labels, ManualClock, Meter, Series};
use tokenmeter_slo::alert::Severity;
use tokenmeter_slo::diagnosis::Cause;
use tokenmeter_slo::{LatencyMetric, Objective, SaturationLevel, SloMonitor, SloSpec};

struct Rig {
    time: ManualClock,
    monitor: SloMonitor,
    series: Series,
}

fn rig(spec: SloSpec, labels: &Labels<'_>) -> Rig {
    let time = ManualClock::new();
    let clock = Clock::manual(&time);
    let monitor = SloMonitor::new(spec, clock.clone());
    let meter = Meter::builder().clock(clock).sink(monitor.clone()).build();
    let series = meter.series(labels);
    Rig {
        time,
        monitor,
        series,
    }
}

fn ttft_spec() -> SloSpec {
    SloSpec::builder()
        .objective(Objective::latency(
            LatencyMetric::Ttft,
            95.0,
            Duration::from_millis(500),
        ))
        .waiting_max(2.0)
        .build()
        .expect("spec")
}

/// `n` requests one after another, each with a TTFT of `ttft`, spread over `span`.
fn requests(rig: &Rig, n: u32, ttft: Duration, span: Duration) {
    for _ in 0..n {
        let mut request = rig.series.start();
        rig.time.advance(ttft);
        request.record_tokens(1);
        request.succeed();
        rig.time.advance((span / n).saturating_sub(ttft));
    }
}

#[test]
fn a_70_second_run_shows_no_window_budget_or_alert_longer_than_itself() {
    let rig = rig(ttft_spec(), &Labels::client("chat"));
    // Every request breaks the TTFT objective: burn 20× over 70 s.
    requests(
        &rig,
        70,
        Duration::from_millis(900),
        Duration::from_secs(70),
    );
    let run = rig.monitor.run_status();
    assert!(
        (run.observed_seconds - 70.0).abs() < 1e-6,
        "{}",
        run.observed_seconds
    );
    assert_eq!(
        run.not_covered,
        ["5m", "30m", "1h", "2h", "6h", "1d", "3d"],
        "every window is longer than the run"
    );
    let class = &run.classes[0];
    assert!(class.windows.is_empty());
    assert_eq!((class.run.window.as_str(), class.run.requests), ("run", 70));
    assert!((class.run.seconds - 70.0).abs() < 1e-6);
    assert!((class.run.goodput_rps - 0.0).abs() < 1e-12);
    let ttft = &class.objectives[0];
    assert_eq!((ttft.events, ttft.good), (70, 0));
    assert_eq!(ttft.bad_fraction, Some(1.0));
    assert!((ttft.allowed_fraction - 0.05).abs() < 1e-12);
    assert!((ttft.burn_rate.unwrap() - 20.0).abs() < 1e-9);
    assert!(ttft.windows.is_empty());
    assert_eq!(
        (ttft.alert, ttft.alert_rule.as_deref()),
        (Severity::None, None)
    );
    let text = run.to_string();
    for window in ["5m 0", "5m burn", "1h", "6h", "budget left", "page"] {
        assert!(!text.contains(window), "{window:?} in:\n{text}");
    }
    assert!(
        text.contains("windows of 5m and longer not covered: the run lasted 70.0 s"),
        "{text}"
    );
    assert!(text.contains("20.00× the allowed rate"), "{text}");
    // The long-running status keeps its windows and alerts (what `serve` shows).
    let status = rig.monitor.status();
    assert_eq!(status.classes[0].objectives[0].alert, Severity::Page);
}

#[test]
fn a_two_hour_run_covers_the_windows_up_to_two_hours() {
    let rig = rig(ttft_spec(), &Labels::client("chat"));
    requests(
        &rig,
        720,
        Duration::from_millis(100),
        Duration::from_secs(7_200),
    );
    let run = rig.monitor.run_status();
    assert_eq!(run.not_covered, ["6h", "1d", "3d"]);
    let windows: Vec<&str> = run.classes[0]
        .windows
        .iter()
        .map(|w| w.window.as_str())
        .collect();
    assert_eq!(windows, ["5m", "30m", "1h", "2h"]);
    assert_eq!(run.classes[0].objectives[0].windows.len(), 4);
    assert_eq!(run.classes[0].run.requests, 720);
    assert!(run.to_string().contains("all objectives met over the run"));
}

#[test]
fn a_clients_requests_awaiting_their_first_token_are_no_queue() {
    let rig = rig(ttft_spec(), &Labels::client("chat"));
    // Five requests in flight at once, all before their first token: not a queue.
    let mut open: Vec<_> = (0..5).map(|_| rig.series.start()).collect();
    rig.time.advance(Duration::from_millis(100));
    for request in &mut open {
        request.record_tokens(1);
    }
    let run = rig.monitor.run_status();
    assert!(run.saturation.is_empty(), "{:?}", run.saturation);
    assert!(!run.to_string().contains("saturation warning"));
    for mut request in open {
        request.succeed();
    }
}

#[test]
fn a_servers_queue_is_evidence_and_warns() {
    let rig = rig(ttft_spec(), &Labels::server("chat"));
    let waiting: Vec<_> = (0..5).map(|_| rig.series.start()).collect();
    rig.time.advance(Duration::from_millis(100));
    let run = rig.monitor.run_status();
    let signal = run
        .saturation
        .iter()
        .find(|s| s.name == "waiting")
        .expect("the server's queue is observed");
    assert_eq!(
        (signal.value, signal.level),
        (5.0, SaturationLevel::Breached)
    );
    assert!(run.summary().contains("saturation warning: waiting 5.00"));
    drop(waiting);
}

#[test]
fn a_clients_ttft_breach_names_the_first_token_not_the_network() {
    let rig = rig(ttft_spec(), &Labels::client("chat"));
    requests(
        &rig,
        20,
        Duration::from_millis(100),
        Duration::from_secs(10),
    );
    requests(
        &rig,
        20,
        Duration::from_millis(900),
        Duration::from_secs(10),
    );
    let run = rig.monitor.run_status();
    let diagnosis = &run.classes[0].diagnoses[0];
    assert_eq!(diagnosis.cause, Cause::FirstToken, "{}", diagnosis.sentence);
    assert_eq!(diagnosis.window, "the run");
    assert!(
        !diagnosis.sentence.contains("network path"),
        "{}",
        diagnosis.sentence
    );
    assert!(
        diagnosis.sentence.contains("time to first token"),
        "{}",
        diagnosis.sentence
    );
}

#[test]
fn an_e2e_breach_is_not_blamed_on_the_network() {
    let spec = SloSpec::builder()
        .objective(Objective::latency(
            LatencyMetric::E2e,
            90.0,
            Duration::from_millis(500),
        ))
        .build()
        .expect("spec");
    let rig = rig(spec, &Labels::client("chat"));
    requests(
        &rig,
        10,
        Duration::from_millis(900),
        Duration::from_secs(10),
    );
    let run = rig.monitor.run_status();
    let diagnosis = &run.classes[0].diagnoses[0];
    assert_eq!(diagnosis.cause, Cause::EndToEnd);
    assert!(
        !diagnosis.sentence.contains("network"),
        "{}",
        diagnosis.sentence
    );
}
