//! Reading what the OpenTelemetry SDK exported, for tests that compare it with the Prometheus
//! exposition.

use std::collections::BTreeMap;

use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};

/// Every data point of `export`, as (metric name, attributes as strings).
pub fn points(export: &ResourceMetrics) -> Vec<(String, BTreeMap<String, String>)> {
    let mut out = Vec::new();
    for scope in export.scope_metrics() {
        for metric in scope.metrics() {
            let sets = match metric.data() {
                AggregatedMetrics::F64(data) => attributes(data),
                AggregatedMetrics::U64(data) => attributes(data),
                AggregatedMetrics::I64(data) => attributes(data),
            };
            out.extend(sets.into_iter().map(|a| (metric.name().to_owned(), a)));
        }
    }
    out
}

/// The attributes of each data point of `data`.
fn attributes<T>(data: &MetricData<T>) -> Vec<BTreeMap<String, String>> {
    fn collect<'a>(
        kvs: impl Iterator<Item = &'a opentelemetry::KeyValue>,
    ) -> BTreeMap<String, String> {
        kvs.map(|kv| (kv.key.to_string(), kv.value.to_string()))
            .collect()
    }
    match data {
        MetricData::Histogram(h) => h.data_points().map(|p| collect(p.attributes())).collect(),
        MetricData::ExponentialHistogram(h) => {
            h.data_points().map(|p| collect(p.attributes())).collect()
        }
        MetricData::Sum(s) => s.data_points().map(|p| collect(p.attributes())).collect(),
        MetricData::Gauge(g) => g.data_points().map(|p| collect(p.attributes())).collect(),
    }
}
