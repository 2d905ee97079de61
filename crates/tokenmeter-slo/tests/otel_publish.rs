//! With the `otel` feature, the verdict counters go to an OpenTelemetry meter under names whose
//! Prometheus translation equals the `metrics` path's names.
#![cfg(feature = "otel")]

use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use tokenmeter::{Clock, ErrorClass, Labels, ManualClock, Meter};
use tokenmeter_slo::{LatencyMetric, Objective, SloMonitor, SloSpec, names};

#[test]
fn verdict_counters_reach_an_opentelemetry_meter() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let spec = SloSpec::builder()
        .objective(Objective::latency(
            LatencyMetric::Ttft,
            90.0,
            Duration::from_millis(100),
        ))
        .build()
        .expect("spec");
    let time = ManualClock::new();
    let clock = Clock::manual(&time);
    let monitor = SloMonitor::publish_otel(spec, clock.clone(), provider.meter("tokenmeter"));
    let meter = Meter::builder().clock(clock).sink(monitor).build();
    let series = meter.series(&Labels::server("chat"));
    for ttft_ms in [50, 150] {
        let mut request = series.start();
        time.advance(Duration::from_millis(ttft_ms));
        request.record_tokens(3);
        request.succeed();
    }
    series.start().fail(ErrorClass::Timeout);

    provider.force_flush().expect("flush");
    let exported = exporter.get_finished_metrics().expect("metrics");
    let last = exported.last().expect("an export");
    let mut sums = Vec::new();
    for scope in last.scope_metrics() {
        for metric in scope.metrics() {
            if let AggregatedMetrics::U64(MetricData::Sum(sum)) = metric.data() {
                let total: u64 = sum.data_points().map(|p| p.value()).sum();
                sums.push((metric.name().to_owned(), metric.unit().to_owned(), total));
            }
        }
    }
    let get = |prometheus: &str| {
        let (name, unit) = names::otel(prometheus);
        sums.iter()
            .find(|(n, u, _)| n == name && u == unit)
            .map(|s| s.2)
            .unwrap_or_else(|| panic!("{name} [{unit}] missing in {sums:?}"))
    };
    assert_eq!(get(names::REQUESTS), 3);
    assert_eq!(get(names::REQUESTS_GOOD), 1);
    assert_eq!(get(names::OUTPUT_TOKENS_GOOD), 3);
    assert_eq!(get(names::OBJECTIVE_EVENTS), 2, "the timeout had no TTFT");
    assert_eq!(get(names::OBJECTIVE_GOOD), 1);
    // `tokenmeter.slo.requests_good` + counter → `tokenmeter_slo_requests_good_total`.
    for prometheus in [
        names::REQUESTS,
        names::REQUESTS_GOOD,
        names::OBJECTIVE_EVENTS,
    ] {
        let translated = format!("{}_total", names::otel(prometheus).0.replace('.', "_"));
        assert_eq!(translated, prometheus);
    }
}
