//! The OTLP path and the Prometheus exporter's `semconv` profile land on the same Prometheus
//! series names: every instrument here, translated OTel→Prometheus, is a metric of
//! `tokenmeter_prometheus::names::semconv` with the same unit and kind, and the other way round.

use tokenmeter_otel::names::{self, Kind};
use tokenmeter_prometheus::names::{Kind as PromKind, label, semconv};

fn same_kind(ours: Kind, theirs: PromKind) -> bool {
    matches!(
        (ours, theirs),
        (Kind::Histogram, PromKind::Histogram)
            | (Kind::Counter, PromKind::Counter)
            | (Kind::UpDownCounter | Kind::Gauge, PromKind::Gauge)
    )
}

#[test]
fn every_instrument_translates_to_the_prometheus_profile_name() {
    for ours in names::ALL {
        let theirs = semconv::ALL
            .iter()
            .find(|m| m.otel == ours.name)
            .unwrap_or_else(|| panic!("{} is not in the Prometheus semconv profile", ours.name));
        assert_eq!(ours.prometheus_name(), theirs.prometheus, "{}", ours.name);
        assert_eq!(ours.unit, theirs.unit, "unit of {}", ours.name);
        assert!(same_kind(ours.kind, theirs.kind), "kind of {}", ours.name);
    }
}

#[test]
fn every_prometheus_profile_metric_has_an_instrument() {
    for theirs in semconv::ALL {
        assert!(
            names::ALL.iter().any(|m| m.name == theirs.otel),
            "{} has no OpenTelemetry instrument",
            theirs.otel
        );
    }
}

#[test]
fn attribute_keys_translate_to_the_prometheus_label_names() {
    let pairs = [
        (names::attr::OPERATION, label::OPERATION),
        (names::attr::PROVIDER, label::PROVIDER),
        (names::attr::REQUEST_MODEL, label::REQUEST_MODEL),
        (names::attr::RESPONSE_MODEL, label::RESPONSE_MODEL),
        (names::attr::SERVER_ADDRESS, label::SERVER_ADDRESS),
        (names::attr::SERVER_PORT, label::SERVER_PORT),
        (names::attr::ERROR_TYPE, label::ERROR_TYPE),
        (names::attr::TOKEN_TYPE, label::TOKEN_TYPE),
        (names::attr::ROLE, label::ROLE),
        (names::attr::OUTCOME, label::OUTCOME),
        (names::attr::KIND, label::STEP_KIND),
    ];
    for (ours, theirs) in pairs {
        assert_eq!(ours, theirs.otel);
        assert_eq!(ours.replace('.', "_"), theirs.prometheus);
    }
}

#[test]
fn bucket_layouts_match_the_prometheus_profile() {
    use tokenmeter_prometheus::{Buckets as PromBuckets, Profile};
    let ours = tokenmeter_otel::Buckets::new();
    let theirs = PromBuckets::new();
    for metric in names::ALL.iter().filter(|m| m.kind == Kind::Histogram) {
        let prom_name = metric.prometheus_name();
        assert_eq!(
            ours.edges(metric.name),
            theirs.edges(Profile::Semconv, &prom_name),
            "{}",
            metric.name
        );
    }
}

#[test]
fn engine_step_instruments_land_on_the_prometheus_engine_step_names() {
    let pairs = [
        (names::ENGINE_STEP_DURATION, semconv::ENGINE_STEP_DURATION),
        (names::ENGINE_BATCH_SIZE, semconv::ENGINE_BATCH_SIZE),
        (names::ENGINE_STEP_TOKENS, semconv::ENGINE_STEP_TOKENS),
    ];
    for (ours, theirs) in pairs {
        assert_eq!(ours.name, theirs.otel);
        assert_eq!(ours.prometheus_name(), theirs.prometheus);
        assert_eq!(ours.unit, theirs.unit);
        assert!(same_kind(ours.kind, theirs.kind), "kind of {}", ours.name);
    }
    assert_eq!(
        names::ENGINE_STEP_DURATION.prometheus_name(),
        "tokenmeter_engine_step_duration_seconds"
    );
    assert_eq!(
        names::ENGINE_BATCH_SIZE.prometheus_name(),
        "tokenmeter_engine_batch_size"
    );
    assert_eq!(
        names::ENGINE_STEP_TOKENS.prometheus_name(),
        "tokenmeter_engine_step_tokens_total"
    );
}
