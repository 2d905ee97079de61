//! The sink works with any `metrics` recorder: here `metrics-util`'s debugging recorder, which
//! keeps every raw sample, shows that each series registers its handles once, that a token is
//! exactly one histogram record, that an engine step registers nothing and records each of its
//! values once, and that `PrometheusSink::global` (deprecated) follows a thread-local recorder
//! (so tests need no global state).

use std::sync::Arc;
use std::time::Duration;

use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use tokenmeter::sink::{Step, StepKind};
use tokenmeter::{Clock, ErrorClass, Labels, ManualClock, Meter};
use tokenmeter_prometheus::{Builder, Profile, PrometheusSink};

/// Every registered key with its value; histograms as their raw samples.
fn snapshot(snapshotter: &Snapshotter) -> Vec<(String, Option<Unit>, Option<String>, DebugValue)> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, unit, help, value)| {
            let key = key.key();
            let labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            let name = format!("{}{{{}}}", key.name(), labels.join(","));
            (name, unit, help.map(|h| h.to_string()), value)
        })
        .collect()
}

fn samples(
    snapshot: &[(String, Option<Unit>, Option<String>, DebugValue)],
    name: &str,
) -> Vec<f64> {
    snapshot
        .iter()
        .filter(|(key, ..)| key.starts_with(&format!("{name}{{")))
        .flat_map(|(.., value)| match value {
            DebugValue::Histogram(values) => values.iter().map(|v| v.into_inner()).collect(),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn a_series_registers_once_and_each_token_is_one_histogram_record() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let time = ManualClock::new();
    let sink = Builder::new(Profile::Semconv).build_for(Arc::new(recorder));
    let meter = Meter::builder()
        .clock(Clock::manual(&time))
        .sink(sink)
        .build();
    let series = meter.series(&Labels::server("chat").request_model("m"));
    let registered = snapshot(&snapshotter).len();

    let mut request = series.start();
    time.advance(Duration::from_millis(30));
    for _ in 0..100 {
        request.record_tokens(1);
        time.advance(Duration::from_millis(2));
    }
    request.fail(ErrorClass::Timeout);
    let mut again = series.start();
    again.record_tokens(1);
    drop(again);

    let after = snapshot(&snapshotter);
    assert_eq!(after.len(), registered, "requests registered nothing new");
    let itl = samples(&after, "tokenmeter_inter_token_latency_seconds");
    assert_eq!(itl.len(), 99, "one ITL record per item after the first");
    assert!(itl.iter().all(|&gap| gap == 0.002), "{itl:?}");
    assert_eq!(
        samples(&after, "gen_ai_server_time_to_first_token_seconds"),
        [0.03, 0.0]
    );
    let timeouts: Vec<f64> = after
        .iter()
        .filter(|(key, ..)| {
            key.starts_with("gen_ai_server_request_duration_seconds{")
                && key.contains("error_type=timeout")
        })
        .flat_map(|(.., v)| match v {
            DebugValue::Histogram(values) => values.iter().map(|v| v.into_inner()).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(timeouts, [0.23]);
    let counter = |needle: &str| {
        after
            .iter()
            .find_map(|(key, _, _, value)| match value {
                DebugValue::Counter(n)
                    if key.starts_with("tokenmeter_requests_total{") && key.contains(needle) =>
                {
                    Some(*n)
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("no counter with {needle}"))
    };
    assert_eq!(counter("outcome=cancelled"), 1);
    assert_eq!(counter("error_type=timeout"), 1);
    assert_eq!(counter("outcome=success"), 0);
}

#[test]
fn descriptions_carry_units_and_help() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let sink = Builder::new(Profile::Vllm).build_for(Arc::new(recorder));
    let meter = Meter::builder().sink(sink).build();
    drop(
        meter
            .series(&Labels::server("chat").request_model("m"))
            .start(),
    );
    let all = snapshot(&snapshotter);
    let ttft = all
        .iter()
        .find(|(key, ..)| key.starts_with("vllm:time_to_first_token_seconds{"))
        .expect("registered");
    assert_eq!(ttft.1, Some(Unit::Seconds));
    assert!(
        ttft.2
            .as_deref()
            .is_some_and(|h| h.contains("time to first token"))
    );
}

#[test]
#[allow(deprecated)] // `PrometheusSink::global` goes in 0.3.0, and this test with it
fn the_global_sink_follows_a_thread_local_recorder() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let time = ManualClock::new();
    // Handles are registered when the series is resolved: do that under the local recorder.
    let series = metrics::with_local_recorder(&recorder, || {
        let sink = PrometheusSink::global(Profile::Vllm);
        let meter = Meter::builder()
            .clock(Clock::manual(&time))
            .sink(sink)
            .build();
        meter.series(&Labels::server("chat").request_model("m"))
    });
    // Recording needs no recorder in scope: the handles point at its storage.
    let mut request = series.start();
    time.advance(Duration::from_millis(40));
    request.record_tokens(1);
    request.succeed();
    let all = snapshot(&snapshotter);
    assert_eq!(samples(&all, "vllm:time_to_first_token_seconds"), [0.04]);
    assert!(all.iter().any(|(key, _, _, value)| {
        key == "vllm:request_success_total{model_name=m,engine=0,finished_reason=stop}"
            && *value == DebugValue::Counter(1)
    }));
}

#[test]
fn engine_gauges_clamp_to_a_fraction_and_ignore_nan() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let sink = Builder::new(Profile::Semconv).build_for(Arc::new(recorder));
    let meter = Meter::builder().sink(sink).build();
    let engine = meter.engine(&Labels::server("chat").provider("vllm").request_model("m"));
    let kv = || {
        snapshot(&snapshotter)
            .into_iter()
            .find_map(|(key, _, _, value)| match value {
                DebugValue::Gauge(v) if key.starts_with("tokenmeter_kv_cache_usage_ratio{") => {
                    assert_eq!(key, "tokenmeter_kv_cache_usage_ratio{gen_ai_provider_name=vllm,gen_ai_request_model=m}");
                    Some(v.into_inner())
                }
                _ => None,
            })
    };
    engine.set_kv_cache_usage(0.5);
    assert_eq!(kv(), Some(0.5));
    engine.set_kv_cache_usage(1.7);
    assert_eq!(kv(), Some(1.0));
    // (A snapshot of the debugging recorder resets gauges to 0.)
    engine.set_kv_cache_usage(0.3);
    engine.set_kv_cache_usage(f64::NAN);
    assert_eq!(kv(), Some(0.3));
    engine.set_kv_cache_usage(-0.2);
    assert_eq!(kv(), Some(0.0));
}

#[test]
fn engine_steps_register_once_and_record_raw_values() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let sink = Builder::new(Profile::Vllm).build_for(Arc::new(recorder));
    let meter = Meter::builder().sink(sink).build();
    let steps = meter.engine(&Labels::server("").provider("vllm").request_model("m"));
    let registered = snapshot(&snapshotter);
    let step_keys = registered
        .iter()
        .filter(|(key, ..)| key.starts_with("tokenmeter_engine_") || key.starts_with("vllm:iter"))
        .count();
    // 3 kinds x (duration, batch size, tokens) + iteration tokens + admission rejections (2
    // reasons; the info gauges register only when given their labels).
    assert_eq!(step_keys, 12, "{registered:?}");
    for _ in 0..50 {
        steps.record(&Step::new(StepKind::Decode, 8, 8, Duration::from_millis(8)));
    }
    let after = snapshot(&snapshotter);
    assert_eq!(
        after.len(),
        registered.len(),
        "steps registered nothing new"
    );
    let only = |name: &str| {
        let values: Vec<f64> = after
            .iter()
            .filter(|(key, ..)| key == name)
            .flat_map(|(.., v)| match v {
                DebugValue::Histogram(values) => values.iter().map(|v| v.into_inner()).collect(),
                _ => Vec::new(),
            })
            .collect();
        values
    };
    let decode = "model_name=m,engine=0,kind=decode";
    assert_eq!(
        only(&format!(
            "tokenmeter_engine_step_duration_seconds{{{decode}}}"
        )),
        [0.008; 50]
    );
    assert_eq!(
        only(&format!("tokenmeter_engine_batch_size{{{decode}}}")),
        [8.0; 50]
    );
    assert_eq!(
        only("vllm:iteration_tokens_total{model_name=m,engine=0}"),
        [8.0; 50]
    );
    let tokens = after.iter().find_map(|(key, unit, _, value)| match value {
        DebugValue::Counter(n)
            if key == &format!("tokenmeter_engine_step_tokens_total{{{decode}}}") =>
        {
            Some((*n, *unit))
        }
        _ => None,
    });
    assert_eq!(tokens, Some((400, Some(Unit::Count))));
}
