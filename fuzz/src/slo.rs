//! `slo_spec`: arbitrary text to the SLO spec parser ([`SloSpec::from_toml`]) and to
//! [`parse_duration`].
//!
//! [`check`] asserts: nothing panics; an error names a field and, for TOML input, a line that
//! exists; a spec that parses is valid (a period of at least 1h, objectives that leave a
//! budget, positive thresholds) and can be used: the Prometheus rules are generated, and a
//! monitor judges a request and reports its status.

use std::time::Duration;

use tokenmeter::sink::InMemorySink;
use tokenmeter::{Clock, Labels, ManualClock, Meter, Role};
use tokenmeter_slo::rules::{RuleOptions, generate};
use tokenmeter_slo::spec::{format_duration, parse_duration};
use tokenmeter_slo::{LatencyMetric, ObjectiveKind, SloMonitor, SloSpec, SpecError};

/// Runs one input and panics (a crash, for libFuzzer) when an invariant breaks.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    durations(text);
    match SloSpec::from_toml(text) {
        Ok(spec) => usable(&spec),
        Err(error) => names_a_field(&error, text),
    }
}

fn durations(text: &str) {
    match parse_duration(text) {
        Ok(d) => {
            // What `format_duration` writes (whole milliseconds), `parse_duration` reads back,
            // to within the f64 arithmetic it uses (1 ns, or 2^-50 of the value).
            let ms = Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            let written = format_duration(ms);
            let again = parse_duration(&written)
                .unwrap_or_else(|e| panic!("{text:?} -> {d:?} -> {written}: {e}"));
            let error = again.abs_diff(ms).as_secs_f64();
            let bound = 1e-9_f64.max(ms.as_secs_f64() * 2f64.powi(-50));
            assert!(
                error <= bound,
                "{text:?} -> {d:?} -> {written} -> {again:?}"
            );
        }
        Err(message) => assert!(!message.is_empty(), "an empty error for {text:?}"),
    }
}

fn names_a_field(error: &SpecError, text: &str) {
    assert!(
        !error.field.is_empty(),
        "an error without a field: {error:?}"
    );
    assert!(
        !error.message.is_empty(),
        "an error without a message: {error:?}"
    );
    let shown = error.to_string();
    assert!(
        shown.contains(&error.field),
        "{shown} does not name {}",
        error.field
    );
    if let Some(line) = error.line {
        let lines = text.split('\n').count();
        assert!(
            (1..=lines).contains(&line),
            "line {line} of a {lines}-line text: {error:?}"
        );
    }
}

fn usable(spec: &SloSpec) {
    assert!(spec.period >= Duration::from_secs(3_600), "{spec:?}");
    assert!(!spec.classes.is_empty(), "{spec:?}");
    for class in &spec.classes {
        assert!(!class.objectives.is_empty(), "{class:?}");
        for objective in &class.objectives {
            assert!(
                objective.target > 0.0 && objective.target < 1.0,
                "{objective:?}"
            );
            if let ObjectiveKind::Latency { threshold, .. } = objective.kind {
                assert!(!threshold.base.is_zero(), "{objective:?}");
            }
        }
    }
    for metric in LatencyMetric::ALL {
        let edges = spec.thresholds(metric);
        assert!(edges.windows(2).all(|w| w[0] < w[1]), "{edges:?}");
    }
    let rules = generate(
        spec,
        &RuleOptions::new(
            "tokenmeter_requests_waiting",
            "tokenmeter_kv_cache_usage_ratio",
        ),
    );
    assert!(rules.contains("\ngroups:\n"), "{rules}");
    judge_one_request(spec);
}

/// A monitor on the spec judges one request of the first class and reports.
fn judge_one_request(spec: &SloSpec) {
    let selector = &spec.classes[0].selector;
    let operation = selector.operation.clone().unwrap_or_else(|| "chat".into());
    let mut labels = match selector.role {
        Some(Role::Client) => Labels::client(operation),
        _ => Labels::server(operation),
    };
    if let Some(provider) = &selector.provider {
        labels = labels.provider(provider.clone());
    }
    if let Some(model) = &selector.request_model {
        labels = labels.request_model(model.clone());
    }
    let time = ManualClock::new();
    let clock = Clock::manual(&time);
    let monitor = SloMonitor::new(spec.clone(), clock.clone());
    let memory = InMemorySink::new();
    let meter = Meter::builder()
        .clock(clock)
        .sink(monitor.clone())
        .sink(memory.clone())
        .build();
    let mut request = meter.series(&labels).start();
    request.set_input_tokens(1_000);
    request.mark_scheduled();
    time.advance(Duration::from_millis(250));
    request.record_tokens(1);
    time.advance(Duration::from_millis(20));
    request.record_tokens(1);
    request.succeed();
    monitor.set_kv_usage(0.5);
    let status = monitor.status();
    let _ = status.to_string();
    assert_eq!(memory.len(), 1);
    assert_eq!(tokenmeter::sink::sink_panics(), 0, "a sink panicked");
}
