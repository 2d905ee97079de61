//! [`Snapshot`]: exported metrics as plain owned values, so the same assertions serve the SDK's
//! in-memory exporter and the OTLP receivers.

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue as ProtoKeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};

/// Attributes as strings, sorted by key.
pub(crate) type Attrs = BTreeMap<String, String>;

/// One data point.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Histogram {
        count: u64,
        sum: f64,
        bounds: Vec<f64>,
        buckets: Vec<u64>,
    },
    Exponential {
        count: u64,
        sum: f64,
        scale: i32,
    },
    Sum(f64),
    Gauge(f64),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Point {
    pub(crate) attrs: Attrs,
    pub(crate) value: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Metric {
    pub(crate) name: String,
    pub(crate) unit: String,
    pub(crate) points: Vec<Point>,
}

/// Every metric of one export, and the resource's attributes.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Snapshot {
    pub(crate) resource: Attrs,
    pub(crate) metrics: Vec<Metric>,
}

impl Snapshot {
    pub(crate) fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.metrics.iter().map(|m| m.name.as_str()).collect();
        names.sort_unstable();
        names
    }

    pub(crate) fn metric(&self, name: &str) -> &Metric {
        self.find(name)
            .unwrap_or_else(|| panic!("no metric `{name}` in {:?}", self.names()))
    }

    pub(crate) fn find(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// Sum of counts (histograms) or values (sums) over the points whose attributes contain
    /// every pair of `filter`; 0 when the metric is missing.
    pub(crate) fn total(&self, name: &str, filter: &[(&str, &str)]) -> f64 {
        let Some(metric) = self.find(name) else {
            return 0.0;
        };
        metric
            .points
            .iter()
            .filter(|p| {
                filter
                    .iter()
                    .all(|(k, v)| p.attrs.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|p| match &p.value {
                Value::Histogram { count, .. } | Value::Exponential { count, .. } => *count as f64,
                Value::Sum(v) | Value::Gauge(v) => *v,
            })
            .sum()
    }

    /// The last in-memory export of `exported`.
    pub(crate) fn from_sdk(exported: &[ResourceMetrics]) -> Self {
        let Some(last) = exported.last() else {
            return Self::default();
        };
        let resource = last
            .resource()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut metrics = Vec::new();
        for scope in last.scope_metrics() {
            for m in scope.metrics() {
                let points = match m.data() {
                    AggregatedMetrics::F64(data) => sdk_points(data, |v| v),
                    AggregatedMetrics::U64(data) => sdk_points(data, |v| v as f64),
                    AggregatedMetrics::I64(data) => sdk_points(data, |v| v as f64),
                };
                metrics.push(Metric {
                    name: m.name().to_owned(),
                    unit: m.unit().to_owned(),
                    points,
                });
            }
        }
        Self { resource, metrics }
    }

    /// One OTLP export request, as a receiver decoded it.
    pub(crate) fn from_proto(request: &ExportMetricsServiceRequest) -> Self {
        let mut snapshot = Self::default();
        for rm in &request.resource_metrics {
            if let Some(resource) = &rm.resource {
                snapshot.resource.extend(proto_attrs(&resource.attributes));
            }
            for scope in &rm.scope_metrics {
                for m in &scope.metrics {
                    snapshot.metrics.push(Metric {
                        name: m.name.clone(),
                        unit: m.unit.clone(),
                        points: proto_points(m.data.as_ref()),
                    });
                }
            }
        }
        snapshot
    }
}

fn sdk_attrs<'a>(kvs: impl Iterator<Item = &'a opentelemetry::KeyValue>) -> Attrs {
    kvs.map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect()
}

fn sdk_points<T: Copy>(data: &MetricData<T>, f: impl Fn(T) -> f64) -> Vec<Point> {
    match data {
        MetricData::Histogram(h) => h
            .data_points()
            .map(|p| Point {
                attrs: sdk_attrs(p.attributes()),
                value: Value::Histogram {
                    count: p.count(),
                    sum: f(p.sum()),
                    bounds: p.bounds().collect(),
                    buckets: p.bucket_counts().collect(),
                },
            })
            .collect(),
        MetricData::ExponentialHistogram(h) => h
            .data_points()
            .map(|p| Point {
                attrs: sdk_attrs(p.attributes()),
                value: Value::Exponential {
                    count: p.count() as u64,
                    sum: f(p.sum()),
                    scale: i32::from(p.scale()),
                },
            })
            .collect(),
        MetricData::Sum(s) => s
            .data_points()
            .map(|p| Point {
                attrs: sdk_attrs(p.attributes()),
                value: Value::Sum(f(p.value())),
            })
            .collect(),
        MetricData::Gauge(g) => g
            .data_points()
            .map(|p| Point {
                attrs: sdk_attrs(p.attributes()),
                value: Value::Gauge(f(p.value())),
            })
            .collect(),
    }
}

fn any_value(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        other => format!("{other:?}"),
    }
}

fn proto_attrs(kvs: &[ProtoKeyValue]) -> Attrs {
    kvs.iter()
        .map(|kv| (kv.key.clone(), any_value(kv.value.as_ref())))
        .collect()
}

fn number(value: Option<number_data_point::Value>) -> f64 {
    match value {
        Some(number_data_point::Value::AsDouble(d)) => d,
        Some(number_data_point::Value::AsInt(i)) => i as f64,
        None => f64::NAN,
    }
}

fn proto_points(data: Option<&metric::Data>) -> Vec<Point> {
    match data {
        Some(metric::Data::Histogram(h)) => h
            .data_points
            .iter()
            .map(|p| Point {
                attrs: proto_attrs(&p.attributes),
                value: Value::Histogram {
                    count: p.count,
                    sum: p.sum.unwrap_or(f64::NAN),
                    bounds: p.explicit_bounds.clone(),
                    buckets: p.bucket_counts.clone(),
                },
            })
            .collect(),
        Some(metric::Data::ExponentialHistogram(h)) => h
            .data_points
            .iter()
            .map(|p| Point {
                attrs: proto_attrs(&p.attributes),
                value: Value::Exponential {
                    count: p.count,
                    sum: p.sum.unwrap_or(f64::NAN),
                    scale: p.scale,
                },
            })
            .collect(),
        Some(metric::Data::Sum(s)) => s
            .data_points
            .iter()
            .map(|p| Point {
                attrs: proto_attrs(&p.attributes),
                value: Value::Sum(number(p.value)),
            })
            .collect(),
        Some(metric::Data::Gauge(g)) => g
            .data_points
            .iter()
            .map(|p| Point {
                attrs: proto_attrs(&p.attributes),
                value: Value::Gauge(number(p.value)),
            })
            .collect(),
        _ => Vec::new(),
    }
}
