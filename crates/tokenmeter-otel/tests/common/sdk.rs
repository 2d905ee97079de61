//! The SDK side of the unit tests: a meter provider with the in-memory exporter, and
//! assertions on what it exported.

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::{
    InMemoryMetricExporter, Instrument, PeriodicReader, SdkMeterProvider, Stream,
};
use tokenmeter::{Clock, ManualClock, Meter, Role};
use tokenmeter_otel::names::{self, attr};
use tokenmeter_otel::{Buckets, OtelSink, OtelSinkBuilder};

use super::snapshot::{Attrs, Snapshot, Value};

pub(crate) struct Sdk {
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
}

impl Sdk {
    pub(crate) fn new() -> Self {
        Self::with_view(|_| None)
    }

    pub(crate) fn with_view(
        view: impl Fn(&Instrument) -> Option<Stream> + Send + Sync + 'static,
    ) -> Self {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .with_view(view)
            .build();
        Self { provider, exporter }
    }

    pub(crate) fn sink(&self, builder: OtelSinkBuilder) -> OtelSink {
        builder.build(&self.provider.meter("tokenmeter"))
    }

    pub(crate) fn meter(&self, builder: OtelSinkBuilder) -> (Meter, ManualClock) {
        let clock = ManualClock::new();
        let meter = Meter::builder()
            .clock(Clock::manual(&clock))
            .sink(self.sink(builder))
            .build();
        (meter, clock)
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        self.provider.force_flush().expect("flush");
        Snapshot::from_sdk(&self.exporter.get_finished_metrics().expect("metrics"))
    }
}

pub(crate) fn attrs(pairs: &[(&str, &str)]) -> Attrs {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Every point's attributes, without the per-outcome ones, must be `semconv` on `gen_ai.*`
/// instruments and `semconv` + `role` on `tokenmeter.*` ones.
pub(crate) fn check_attributes(snapshot: &Snapshot, semconv: &Attrs, role: Role) {
    let mut own = semconv.clone();
    own.insert(attr::ROLE.to_owned(), role.as_str().to_owned());
    for metric in &snapshot.metrics {
        let expected = if metric.name.starts_with("gen_ai.") {
            semconv
        } else {
            &own
        };
        for point in &metric.points {
            let mut got = point.attrs.clone();
            for extra in [
                attr::ERROR_TYPE,
                attr::OUTCOME,
                attr::TOKEN_TYPE,
                attr::SOURCE,
                attr::TOKEN_MODALITY,
            ] {
                got.remove(extra);
            }
            assert_eq!(&got, expected, "attributes of {}", metric.name);
        }
    }
}

/// Units are the ones in `names`, and every histogram point has the configured bounds.
pub(crate) fn check_units_and_bounds(snapshot: &Snapshot, buckets: &Buckets) {
    for metric in &snapshot.metrics {
        let spec = names::ALL
            .iter()
            .find(|m| m.name == metric.name)
            .unwrap_or_else(|| panic!("unexpected metric {}", metric.name));
        assert_eq!(metric.unit, spec.unit, "unit of {}", metric.name);
        for point in &metric.points {
            if let Value::Histogram {
                bounds,
                buckets: counts,
                count,
                ..
            } = &point.value
            {
                assert_eq!(
                    Some(bounds.clone()),
                    buckets.edges(&metric.name),
                    "{}",
                    metric.name
                );
                assert_eq!(counts.len(), bounds.len() + 1, "{}", metric.name);
                assert_eq!(counts.iter().sum::<u64>(), *count, "{}", metric.name);
            }
        }
    }
}

pub(crate) fn bucket_counts(snapshot: &Snapshot, name: &str) -> Vec<u64> {
    let mut total: Vec<u64> = Vec::new();
    for point in &snapshot.metric(name).points {
        if let Value::Histogram { buckets, .. } = &point.value {
            total.resize(buckets.len(), 0);
            for (t, b) in total.iter_mut().zip(buckets) {
                *t += b;
            }
        }
    }
    total
}

pub(crate) fn index_of(edges: &[f64], edge: f64) -> usize {
    edges.iter().position(|&e| e == edge).expect("edge")
}
