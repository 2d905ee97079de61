//! Engine steps against the SDK's in-memory exporter: a decode step of batch 8 taking 8 ms
//! lands in the right buckets with the engine's attributes, the counters add up per kind, and
//! bucket settings apply to the step instruments.

mod common;

use std::time::Duration;

use tokenmeter::Labels;
use tokenmeter::sink::{Step, StepKind};
use tokenmeter_otel::names::{self, attr};
use tokenmeter_otel::{BATCH_SIZE_EDGES, Buckets, Metric, OtelSink, STEP_DURATION_EDGES};

use common::sdk::{Sdk, attrs, check_units_and_bounds, index_of};
use common::snapshot::{Attrs, Snapshot, Value};

fn engine() -> Labels<'static> {
    Labels::server("")
        .provider("vllm")
        .request_model("llama-3-8b")
}

fn engine_attrs(kind: StepKind) -> Attrs {
    attrs(&[
        (attr::PROVIDER, "vllm"),
        (attr::REQUEST_MODEL, "llama-3-8b"),
        (attr::KIND, kind.as_str()),
    ])
}

/// The bucket counts of `name`'s point with exactly `attrs`.
fn histogram(s: &Snapshot, name: &str, attrs: &Attrs) -> (u64, f64, Vec<f64>, Vec<u64>) {
    let point = s
        .metric(name)
        .points
        .iter()
        .find(|p| &p.attrs == attrs)
        .unwrap_or_else(|| panic!("no {name} point with {attrs:?}"));
    match &point.value {
        Value::Histogram {
            count,
            sum,
            bounds,
            buckets,
        } => (*count, *sum, bounds.clone(), buckets.clone()),
        other => panic!("{name} is not an explicit histogram: {other:?}"),
    }
}

/// One sample, in the bucket whose upper bound is `edge` (OTel buckets are `(lower, upper]`).
fn one_sample_in(buckets: &[u64], bounds: &[f64], edge: f64) {
    let index = index_of(bounds, edge);
    for (i, &n) in buckets.iter().enumerate() {
        assert_eq!(n, u64::from(i == index), "bucket {i} of {buckets:?}");
    }
}

#[test]
fn a_decode_step_of_batch_8_in_8_ms_lands_in_its_buckets_with_the_engine_attributes() {
    let sdk = Sdk::new();
    let (meter, _clock) = sdk.meter(OtelSink::builder());
    let steps = meter.engine(&engine());
    steps.record(&Step::new(StepKind::Decode, 8, 8, Duration::from_millis(8)));
    let s = sdk.snapshot();
    assert_eq!(
        s.names(),
        [
            "tokenmeter.engine.batch_size",
            "tokenmeter.engine.step.duration",
            "tokenmeter.engine.step.tokens",
        ]
    );
    check_units_and_bounds(&s, &Buckets::new());
    let decode = engine_attrs(StepKind::Decode);

    let (count, sum, bounds, buckets) = histogram(&s, names::ENGINE_STEP_DURATION.name, &decode);
    assert_eq!((count, sum), (1, 0.008));
    assert_eq!(bounds, STEP_DURATION_EDGES);
    one_sample_in(&buckets, &bounds, 0.008);

    let (count, sum, bounds, buckets) = histogram(&s, names::ENGINE_BATCH_SIZE.name, &decode);
    assert_eq!((count, sum), (1, 8.0));
    assert_eq!(bounds, BATCH_SIZE_EDGES);
    one_sample_in(&buckets, &bounds, 8.0);

    let tokens = s.metric(names::ENGINE_STEP_TOKENS.name);
    assert_eq!(tokens.points.len(), 1);
    assert_eq!(tokens.points[0].attrs, decode);
    assert_eq!(tokens.points[0].value, Value::Sum(8.0));
}

#[test]
fn step_counters_and_sums_add_up_per_kind() {
    let ms = Duration::from_millis;
    let recorded = [
        Step::new(StepKind::Prefill, 2, 300, ms(40)),
        Step::new(StepKind::Decode, 8, 8, ms(8)),
        Step::new(StepKind::Decode, 32, 32, ms(12)),
        Step::new(StepKind::Decode, 64, 64, ms(18)),
        Step::new(StepKind::Mixed, 4, 131, ms(25)),
        Step::new(StepKind::Prefill, 1, 1000, ms(90)),
    ];
    let sdk = Sdk::new();
    let (meter, _clock) = sdk.meter(OtelSink::builder());
    let steps = meter.engine(&engine());
    for step in &recorded {
        steps.record(step);
    }
    let s = sdk.snapshot();
    for kind in [StepKind::Prefill, StepKind::Decode, StepKind::Mixed] {
        let of_kind: Vec<&Step> = recorded.iter().filter(|s| s.kind == kind).collect();
        let filter = [(attr::KIND, kind.as_str())];
        let tokens: u32 = of_kind.iter().map(|s| s.tokens).sum();
        assert_eq!(
            s.total(names::ENGINE_STEP_TOKENS.name, &filter),
            f64::from(tokens),
            "{kind:?}"
        );
        let attrs = engine_attrs(kind);
        let (count, sum, ..) = histogram(&s, names::ENGINE_BATCH_SIZE.name, &attrs);
        let batch: u32 = of_kind.iter().map(|s| s.batch_size).sum();
        assert_eq!((count, sum), (of_kind.len() as u64, f64::from(batch)));
        let (count, sum, ..) = histogram(&s, names::ENGINE_STEP_DURATION.name, &attrs);
        let seconds: f64 = of_kind.iter().map(|s| s.duration.as_secs_f64()).sum();
        assert_eq!(count, of_kind.len() as u64);
        assert!((sum - seconds).abs() < 1e-9, "{sum} != {seconds}");
    }
    let all: u32 = recorded.iter().map(|s| s.tokens).sum();
    assert_eq!(s.total(names::ENGINE_STEP_TOKENS.name, &[]), f64::from(all));
}

#[test]
fn step_bucket_settings_apply_to_the_step_instruments() {
    let mut buckets = Buckets::new();
    buckets
        .add_edges(Metric::StepDuration, &[0.01])
        .and_then(|b| b.set(Metric::BatchSize, &[96.0, 48.0, 1.0]))
        .expect("valid edges");
    let sdk = Sdk::new();
    let (meter, _clock) = sdk.meter(OtelSink::builder().buckets(buckets.clone()));
    meter
        .engine(&engine())
        .record(&Step::new(StepKind::Decode, 8, 8, Duration::from_millis(8)));
    let s = sdk.snapshot();
    check_units_and_bounds(&s, &buckets);
    let decode = engine_attrs(StepKind::Decode);
    let (_, _, bounds, counts) = histogram(&s, names::ENGINE_BATCH_SIZE.name, &decode);
    assert_eq!((bounds, counts), (vec![1.0, 48.0, 96.0], vec![0, 1, 0, 0]));
    let (_, _, bounds, _) = histogram(&s, names::ENGINE_STEP_DURATION.name, &decode);
    assert!(bounds.contains(&0.01) && bounds.contains(&0.008));
}
