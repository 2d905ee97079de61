//! The sink against the SDK's in-memory exporter: names, units, attributes, bucket bounds and
//! counts, for both roles, with scripted requests on a manual clock.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use tokenmeter::conventions::Conventions;
use tokenmeter::{ErrorClass, Labels, Meter, Role};
use tokenmeter_otel::names::{self, attr};
use tokenmeter_otel::{
    Buckets, HistogramAggregation, Metric, OtelSink, TPOT_EDGES, TTFT_EDGES, views,
};

use common::sdk::{Sdk, attrs, bucket_counts, check_attributes, check_units_and_bounds, index_of};
use common::snapshot::Value;
use common::workload::Script;

#[test]
fn server_role_exports_semconv_names_units_attributes_bounds_and_counts() {
    let sdk = Sdk::new();
    let (meter, clock) = sdk.meter(OtelSink::builder());
    let labels = Labels::server("chat")
        .provider("vllm")
        .request_model("llama-3-8b")
        .response_model("llama-3-8b-instruct")
        .server_address("10.0.0.7")
        .server_port(8000);
    let e = Script::default().run(&meter, &clock, &labels);
    let s = sdk.snapshot();

    assert_eq!(
        s.names(),
        [
            "gen_ai.server.request.duration",
            "gen_ai.server.time_per_output_token",
            "gen_ai.server.time_to_first_token",
            "tokenmeter.input_tokens",
            "tokenmeter.input_tokens.by_source",
            "tokenmeter.inter_token_latency",
            "tokenmeter.output_tokens",
            "tokenmeter.request.computed_input_tokens",
            "tokenmeter.request.decode_time",
            "tokenmeter.request.inference_time",
            "tokenmeter.request.normalized_time_per_output_token",
            "tokenmeter.request.prefill_time",
            "tokenmeter.request.queue_time",
            "tokenmeter.request.time_to_first_output_token",
            "tokenmeter.request.time_to_second_token",
            "tokenmeter.requests",
            "tokenmeter.requests.running",
            "tokenmeter.requests.waiting",
        ]
    );
    check_units_and_bounds(&s, &Buckets::new());
    let semconv = attrs(&[
        (attr::OPERATION, "chat"),
        (attr::PROVIDER, "vllm"),
        (attr::REQUEST_MODEL, "llama-3-8b"),
        (attr::RESPONSE_MODEL, "llama-3-8b-instruct"),
        (attr::SERVER_ADDRESS, "10.0.0.7"),
        (attr::SERVER_PORT, "8000"),
    ]);
    check_attributes(&s, &semconv, Role::Server);

    let count = |name: &str, filter: &[(&str, &str)]| s.total(name, filter) as u64;
    assert_eq!(count(names::SERVER_REQUEST_DURATION.name, &[]), e.requests);
    assert_eq!(
        count(
            names::SERVER_REQUEST_DURATION.name,
            &[(attr::ERROR_TYPE, "rate_limited")]
        ),
        e.failed
    );
    assert_eq!(
        count(names::SERVER_TIME_TO_FIRST_TOKEN.name, &[]),
        e.first_tokens
    );
    assert_eq!(count(names::INTER_TOKEN_LATENCY.name, &[]), e.later_items);
    assert_eq!(
        count(names::SERVER_TIME_PER_OUTPUT_TOKEN.name, &[]),
        e.with_tpot
    );
    assert_eq!(count(names::QUEUE_TIME.name, &[]), e.requests);
    assert_eq!(count(names::PREFILL_TIME.name, &[]), e.first_tokens);
    assert_eq!(count(names::REQUESTS.name, &[]), e.requests);
    assert_eq!(
        count(names::REQUESTS.name, &[(attr::OUTCOME, "success")]),
        e.succeeded
    );
    assert_eq!(
        count(names::REQUESTS.name, &[(attr::OUTCOME, "cancelled")]),
        e.cancelled
    );
    assert_eq!(
        count(
            names::REQUESTS.name,
            &[(attr::OUTCOME, "error"), (attr::ERROR_TYPE, "rate_limited")]
        ),
        e.failed
    );
    assert_eq!(count(names::INPUT_TOKENS.name, &[]), e.input_tokens);
    assert_eq!(count(names::OUTPUT_TOKENS.name, &[]), e.output_tokens);
    assert_eq!(s.total(names::REQUESTS_WAITING.name, &[]), 0.0);
    assert_eq!(s.total(names::REQUESTS_RUNNING.name, &[]), 0.0);

    // TTFT is 200 ms for every request: all in the `le = 0.25` bucket. ITL is 20 ms: `le = 0.025`.
    let ttft = bucket_counts(&s, names::SERVER_TIME_TO_FIRST_TOKEN.name);
    assert_eq!(ttft[index_of(TTFT_EDGES, 0.25)], e.first_tokens);
    let itl = bucket_counts(&s, names::INTER_TOKEN_LATENCY.name);
    assert_eq!(itl[index_of(TPOT_EDGES, 0.025)], e.later_items);
    let ttft_point = &s.metric(names::SERVER_TIME_TO_FIRST_TOKEN.name).points[0].value;
    let Value::Histogram { sum, .. } = ttft_point else {
        panic!("{ttft_point:?}")
    };
    assert!((sum - 0.2 * e.first_tokens as f64).abs() < 1e-9, "{sum}");
}

#[test]
fn client_role_exports_client_names_and_token_usage_by_type() {
    let sdk = Sdk::new();
    // The superseded names asked for: the whole built-in table.
    let (meter, clock) = sdk.meter(OtelSink::builder().conventions(Conventions::default()));
    let labels = Labels::client("chat")
        .provider("openai")
        .request_model("gpt-4o");
    let script = Script {
        errors: vec![ErrorClass::Timeout, ErrorClass::ServerError],
        ..Script::default()
    };
    let e = script.run(&meter, &clock, &labels);
    let s = sdk.snapshot();

    assert_eq!(
        s.names(),
        [
            "gen_ai.client.inference.duration",
            "gen_ai.client.inference.operation.input_tokens",
            "gen_ai.client.inference.operation.output_tokens",
            "gen_ai.client.inference.time_per_output_chunk",
            "gen_ai.client.inference.time_to_first_chunk",
            "gen_ai.client.inference.usage.input_tokens",
            "gen_ai.client.inference.usage.output_tokens",
            "gen_ai.client.operation.duration",
            "gen_ai.client.operation.time_per_output_chunk",
            "gen_ai.client.operation.time_to_first_chunk",
            "gen_ai.client.token.usage",
            "tokenmeter.input_tokens",
            "tokenmeter.input_tokens.by_source",
            "tokenmeter.output_tokens",
            "tokenmeter.request.decode_time",
            "tokenmeter.request.normalized_time_per_output_token",
            "tokenmeter.request.time_to_first_output_token",
            "tokenmeter.request.time_to_second_token",
            "tokenmeter.requests",
            "tokenmeter.requests.running",
            "tokenmeter.requests.waiting",
            "tokenmeter.time_per_output_token",
        ]
    );
    check_units_and_bounds(&s, &Buckets::new());
    let semconv = attrs(&[
        (attr::OPERATION, "chat"),
        (attr::PROVIDER, "openai"),
        (attr::REQUEST_MODEL, "gpt-4o"),
    ]);
    check_attributes(&s, &semconv, Role::Client);

    let count = |name: &str, filter: &[(&str, &str)]| s.total(name, filter) as u64;
    assert_eq!(
        count(names::CLIENT_OPERATION_DURATION.name, &[]),
        e.requests
    );
    for class in ["timeout", "server_error"] {
        let filter = [(attr::ERROR_TYPE, class)];
        assert_eq!(count(names::CLIENT_OPERATION_DURATION.name, &filter), 1);
    }
    assert_eq!(
        count(names::CLIENT_TIME_TO_FIRST_CHUNK.name, &[]),
        e.first_tokens
    );
    assert_eq!(
        count(names::CLIENT_TIME_PER_OUTPUT_CHUNK.name, &[]),
        e.later_items
    );
    assert_eq!(count(names::TIME_PER_OUTPUT_TOKEN.name, &[]), e.with_tpot);
    let usage = names::CLIENT_TOKEN_USAGE.name;
    assert_eq!(count(usage, &[(attr::TOKEN_TYPE, "input")]), e.requests);
    assert_eq!(count(usage, &[(attr::TOKEN_TYPE, "output")]), e.requests);
    let sums: BTreeMap<String, f64> = s
        .metric(usage)
        .points
        .iter()
        .map(|p| match &p.value {
            Value::Histogram { sum, .. } => (p.attrs[attr::TOKEN_TYPE].clone(), *sum),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(sums["input"], e.input_tokens as f64);
    assert_eq!(sums["output"], e.output_tokens as f64);
    // The GenAI conventions v0.1.0: the renamed histograms carry the same samples, the usage
    // counters the sums by modality, the per-request histograms one sample per request.
    for (old, new) in [
        (
            names::CLIENT_OPERATION_DURATION,
            names::CLIENT_INFERENCE_DURATION,
        ),
        (
            names::CLIENT_TIME_TO_FIRST_CHUNK,
            names::CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK,
        ),
        (
            names::CLIENT_TIME_PER_OUTPUT_CHUNK,
            names::CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK,
        ),
    ] {
        assert_eq!(s.total(old.name, &[]), s.total(new.name, &[]), "{new}");
        assert_eq!(bucket_counts(&s, old.name), bucket_counts(&s, new.name));
    }
    let text = [(attr::TOKEN_MODALITY, "text")];
    let counted = |name: &str| s.total(name, &text);
    assert_eq!(
        counted(names::CLIENT_USAGE_INPUT_TOKENS.name),
        e.input_tokens as f64
    );
    assert_eq!(
        counted(names::CLIENT_USAGE_OUTPUT_TOKENS.name),
        e.output_tokens as f64
    );
    assert_eq!(
        count(names::CLIENT_OPERATION_INPUT_TOKENS.name, &[]),
        e.requests
    );
    assert_eq!(
        count(names::CLIENT_OPERATION_OUTPUT_TOKENS.name, &[]),
        e.requests
    );
    // The client TTFT follows the doubling layout: 200 ms is in `le = 0.32`.
    let ttfc = bucket_counts(&s, names::CLIENT_TIME_TO_FIRST_CHUNK.name);
    assert_eq!(
        ttfc[index_of(tokenmeter_otel::DURATION_EDGES, 0.32)],
        e.first_tokens
    );
}

#[test]
fn by_default_a_client_series_publishes_no_superseded_name_and_records_each_gap_once() {
    let sdk = Sdk::new();
    let (meter, clock) = sdk.meter(OtelSink::builder());
    let labels = Labels::client("chat")
        .provider("openai")
        .request_model("gpt-4o");
    let e = Script::default().run(&meter, &clock, &labels);
    let s = sdk.snapshot();

    let published = s.names();
    for old in names::SUPERSEDED {
        assert!(
            !published.contains(&old.name),
            "{} is published without being asked for: {published:?}",
            old.name
        );
    }
    // Each gap is one sample, under the v0.1.0 name; the other renamed instruments and the
    // token instruments that replace `gen_ai.client.token.usage` are all there.
    let count = |name: &str| s.total(name, &[]) as u64;
    assert_eq!(
        count(names::CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK.name),
        e.later_items
    );
    assert_eq!(
        count(names::CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK.name),
        e.first_tokens
    );
    assert_eq!(count(names::CLIENT_INFERENCE_DURATION.name), e.requests);
    assert_eq!(
        count(names::CLIENT_OPERATION_OUTPUT_TOKENS.name),
        e.requests
    );
    assert_eq!(
        s.total(names::CLIENT_USAGE_OUTPUT_TOKENS.name, &[]),
        e.output_tokens as f64
    );
    let gap_histograms: Vec<&str> = published
        .into_iter()
        .filter(|name| name.ends_with("time_per_output_chunk"))
        .collect();
    assert_eq!(
        gap_histograms,
        [names::CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK.name]
    );
}

#[test]
fn gauges_follow_requests_in_flight() {
    let sdk = Sdk::new();
    let (meter, _clock) = sdk.meter(OtelSink::builder());
    let series = meter.series(&Labels::server("chat"));
    let waiting = series.start();
    let mut running = series.start();
    running.record_tokens(1);
    let s = sdk.snapshot();
    assert_eq!(s.total(names::REQUESTS_WAITING.name, &[]), 1.0);
    assert_eq!(s.total(names::REQUESTS_RUNNING.name, &[]), 1.0);
    drop((waiting, running));
    let s = sdk.snapshot();
    assert_eq!(s.total(names::REQUESTS_WAITING.name, &[]), 0.0);
    assert_eq!(s.total(names::REQUESTS_RUNNING.name, &[]), 0.0);
    assert_eq!(
        s.total(names::REQUESTS.name, &[(attr::OUTCOME, "cancelled")]),
        2.0
    );
}

#[test]
fn extra_edges_become_exported_bounds_and_count_inclusively() {
    let mut buckets = Buckets::new();
    buckets.add_edges(Metric::Ttft, &[0.35]).unwrap();
    buckets.set(Metric::Itl, &[0.05, 0.02]).unwrap();
    let sdk = Sdk::new();
    let (meter, clock) = sdk.meter(OtelSink::builder().buckets(buckets.clone()));
    let script = Script {
        ok: 2,
        errors: vec![],
        cancelled: 0,
        ttft: Duration::from_millis(350),
        ..Script::default()
    };
    let e = script.run(&meter, &clock, &Labels::server("chat"));
    let s = sdk.snapshot();
    check_units_and_bounds(&s, &buckets);

    let edges = buckets
        .edges(names::SERVER_TIME_TO_FIRST_TOKEN.name)
        .unwrap();
    assert!(edges.contains(&0.35) && edges.contains(&0.25) && edges.contains(&0.5));
    let ttft = bucket_counts(&s, names::SERVER_TIME_TO_FIRST_TOKEN.name);
    assert_eq!(
        ttft[index_of(&edges, 0.35)],
        e.first_tokens,
        "a value on an edge counts in it"
    );
    let itl = bucket_counts(&s, names::INTER_TOKEN_LATENCY.name);
    assert_eq!(
        itl,
        [e.later_items, 0, 0],
        "20 ms is in `le = 0.02`: bounds are inclusive"
    );
}

#[test]
fn exponential_view_replaces_explicit_buckets_for_histograms_only() {
    let sdk = Sdk::with_view(views(HistogramAggregation::exponential(), None));
    let (meter, clock) = sdk.meter(OtelSink::builder());
    let e = Script::default().run(&meter, &clock, &Labels::server("chat"));
    let s = sdk.snapshot();
    for metric in &s.metrics {
        let spec = names::ALL.iter().find(|m| m.name == metric.name).unwrap();
        for point in &metric.points {
            match (&point.value, spec.kind) {
                (Value::Exponential { scale, .. }, names::InstrumentKind::Histogram) => {
                    assert!(*scale <= 20, "{}", metric.name)
                }
                (
                    Value::Sum(_),
                    names::InstrumentKind::Counter | names::InstrumentKind::UpDownCounter,
                ) => {}
                other => panic!("{}: {other:?}", metric.name),
            }
        }
    }
    assert_eq!(
        s.total(names::INTER_TOKEN_LATENCY.name, &[]) as u64,
        e.later_items
    );
    assert_eq!(
        s.total(names::SERVER_REQUEST_DURATION.name, &[]) as u64,
        e.requests
    );
}

#[test]
fn folded_series_are_counted_by_role() {
    let sdk = Sdk::new();
    let meter = Meter::builder()
        .sink(sdk.sink(OtelSink::builder()))
        .max_series(1)
        .build();
    meter.series(&Labels::server("chat").request_model("a"));
    let folded = meter.series(&Labels::server("chat").request_model("b"));
    meter.series(&Labels::client("chat").request_model("c"));
    let mut request = folded.start();
    request.record_tokens(1);
    request.succeed();
    let s = sdk.snapshot();
    let folded = names::SERIES_FOLDED.name;
    assert_eq!(s.total(folded, &[(attr::ROLE, "server")]), 1.0);
    assert_eq!(s.total(folded, &[(attr::ROLE, "client")]), 1.0);
    let duration = s.metric(names::SERVER_REQUEST_DURATION.name);
    assert_eq!(duration.points[0].attrs[attr::REQUEST_MODEL], "_OTHER");
}

#[test]
fn engine_gauges_carry_the_series_attributes_without_the_operation() {
    let sdk = Sdk::new();
    let (meter, _clock) = sdk.meter(OtelSink::builder());
    let engine = meter.engine(&Labels::server("chat").request_model("llama"));
    engine.set_kv_cache_usage(1.5);
    engine.set_kv_cache_usage(f64::NAN);
    engine.add_preemptions(2);
    let s = sdk.snapshot();
    let kv = s.metric(names::KV_CACHE_USAGE.name);
    assert_eq!(kv.unit, "1");
    assert_eq!(
        kv.points[0].value,
        Value::Gauge(1.0),
        "clamped, NaN ignored"
    );
    assert_eq!(kv.points[0].attrs, attrs(&[(attr::REQUEST_MODEL, "llama")]));
    assert_eq!(s.total(names::PREEMPTIONS.name, &[]), 2.0);
}

#[test]
fn cardinality_limit_folds_extra_attribute_sets_into_overflow() {
    let sdk = Sdk::with_view(views(HistogramAggregation::Explicit, Some(3)));
    let (meter, clock) = sdk.meter(OtelSink::builder());
    for model in ["a", "b", "c", "d", "e"] {
        let labels = Labels::server("chat").request_model(model);
        Script::default().run(&meter, &clock, &labels);
    }
    let s = sdk.snapshot();
    let duration = s.metric(names::SERVER_REQUEST_DURATION.name);
    // Three attribute sets, then the SDK's overflow set for the rest.
    assert_eq!(duration.points.len(), 4, "{:?}", duration.points);
    assert!(
        duration
            .points
            .iter()
            .any(|p| p.attrs.contains_key("otel.metric.overflow"))
    );
    assert_eq!(
        s.total(names::SERVER_REQUEST_DURATION.name, &[]),
        25.0,
        "nothing lost"
    );
}

#[cfg(feature = "bound-instruments")]
#[test]
fn bound_and_portable_paths_export_the_same_values() {
    let run = |bound: bool| {
        let sdk = Sdk::new();
        let (meter, clock) = sdk.meter(OtelSink::builder().bound_instruments(bound));
        Script::default().run(&meter, &clock, &Labels::server("chat").request_model("m"));
        Script::default().run(&meter, &clock, &Labels::client("chat").request_model("m"));
        let mut s = sdk.snapshot();
        s.metrics.sort_by(|a, b| a.name.cmp(&b.name));
        for m in &mut s.metrics {
            m.points.sort_by(|a, b| a.attrs.cmp(&b.attrs));
        }
        s
    };
    let (bound, portable) = (run(true), run(false));
    assert_eq!(bound.metrics, portable.metrics);
    assert!(bound.total(names::INTER_TOKEN_LATENCY.name, &[]) > 0.0);
}
