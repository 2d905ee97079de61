//! The Gateway API Inference Extension's model-server protocol (what llm-d's endpoint picker
//! scrapes), as one table, and the checks of a Prometheus exposition and of an OpenTelemetry
//! export against it. The tests of `serve`, of a library server and of the OTel exporter all
//! check against this one table.

use std::collections::{BTreeMap, HashMap};

use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};

/// One signal of the protocol: its name per profile and in OpenTelemetry, its types, the
/// labels a gateway reads from it, and whether the protocol requires it.
#[derive(Debug)]
pub struct Signal {
    /// The name in the semconv profile.
    pub semconv: &'static str,
    /// The name in the vLLM profile (vLLM's own where it has one).
    pub vllm: &'static str,
    /// The OpenTelemetry instrument.
    pub otel: &'static str,
    /// The Prometheus `# TYPE`.
    pub kind: &'static str,
    /// The OpenTelemetry data: `gauge`, `updowncounter` (a non-monotonic sum) or `counter`.
    pub otel_kind: &'static str,
    /// The labels (attributes) a reader needs, in every profile.
    pub labels: &'static [&'static str],
    /// Every label of a series in the vLLM profile: vLLM's label set (for the cache
    /// configuration, the part of vLLM's that gateways read).
    pub vllm_labels: &'static [&'static str],
    /// Whether the protocol requires it (the rest is optional).
    pub required: bool,
}

/// The protocol's table: GAIE's `docs/proposals/003-model-server-protocol` (queued and running
/// requests, KV-cache utilisation 0–1, the LoRA info, the cache configuration), with vLLM's
/// names and label sets, plus vLLM's waiting-by-reason gauge and tokenmeter's admission
/// rejections.
pub const PROTOCOL: &[Signal] = &[
    Signal {
        semconv: "tokenmeter_requests_waiting",
        vllm: "vllm:num_requests_waiting",
        otel: "tokenmeter.requests.waiting",
        kind: "gauge",
        otel_kind: "updowncounter",
        labels: &[],
        vllm_labels: &["engine", "model_name"],
        required: true,
    },
    Signal {
        semconv: "tokenmeter_requests_running",
        vllm: "vllm:num_requests_running",
        otel: "tokenmeter.requests.running",
        kind: "gauge",
        otel_kind: "updowncounter",
        labels: &[],
        vllm_labels: &["engine", "model_name"],
        required: true,
    },
    Signal {
        semconv: "tokenmeter_kv_cache_usage_ratio",
        vllm: "vllm:kv_cache_usage_perc",
        otel: "tokenmeter.kv_cache.usage",
        kind: "gauge",
        otel_kind: "gauge",
        labels: &[],
        vllm_labels: &["engine", "model_name"],
        required: true,
    },
    Signal {
        semconv: "tokenmeter_engine_cache_config_info",
        vllm: "vllm:cache_config_info",
        otel: "tokenmeter.engine.cache_config.info",
        kind: "gauge",
        otel_kind: "gauge",
        labels: &["block_size", "num_gpu_blocks"],
        vllm_labels: &["engine", "block_size", "num_gpu_blocks"],
        required: false,
    },
    Signal {
        semconv: "tokenmeter_engine_lora_requests_info",
        vllm: "vllm:lora_requests_info",
        otel: "tokenmeter.engine.lora_requests.info",
        kind: "gauge",
        otel_kind: "gauge",
        labels: &["max_lora", "running_lora_adapters", "waiting_lora_adapters"],
        vllm_labels: &["max_lora", "running_lora_adapters", "waiting_lora_adapters"],
        required: false,
    },
    Signal {
        semconv: "tokenmeter_engine_requests_waiting_by_reason",
        vllm: "vllm:num_requests_waiting_by_reason",
        otel: "tokenmeter.engine.requests.waiting_by_reason",
        kind: "gauge",
        otel_kind: "gauge",
        labels: &["reason"],
        vllm_labels: &["engine", "model_name", "reason"],
        required: false,
    },
    Signal {
        semconv: "tokenmeter_engine_admission_rejections_total",
        vllm: "tokenmeter_engine_admission_rejections_total",
        otel: "tokenmeter.engine.admission_rejections",
        kind: "counter",
        otel_kind: "counter",
        labels: &["reason"],
        vllm_labels: &["engine", "model_name", "reason"],
        required: false,
    },
];

/// The signal whose semconv name is `semconv`.
pub fn signal(semconv: &str) -> &'static Signal {
    PROTOCOL
        .iter()
        .find(|s| s.semconv == semconv)
        .unwrap_or_else(|| panic!("{semconv} is not in the protocol's table"))
}

/// One sample: its labels and value.
pub type Sample = (HashMap<String, String>, f64);

/// A parsed exposition: `# TYPE` per name, and the samples per name.
#[derive(Debug, Default)]
pub struct Exposition {
    pub types: HashMap<String, String>,
    pub samples: HashMap<String, Vec<Sample>>,
}

impl Exposition {
    /// The samples of `signal` under the profile's name.
    pub fn of(&self, signal: &Signal, vllm: bool) -> &[Sample] {
        let name = if vllm { signal.vllm } else { signal.semconv };
        self.samples.get(name).map_or(&[], Vec::as_slice)
    }
}

/// Parses a text exposition (label values here hold no quote or escape but may hold commas).
pub fn parse(text: &str) -> Exposition {
    let mut out = Exposition::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("a # TYPE line has a type");
            out.types.insert(name.to_owned(), kind.to_owned());
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
        let value: f64 = value.parse().expect("a sample's value is a number");
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, parse_labels(rest.trim_end_matches('}'))),
            None => (series, HashMap::new()),
        };
        out.samples
            .entry(name.to_owned())
            .or_default()
            .push((labels, value));
    }
    out
}

/// `k="v",k2="v2"`.
fn parse_labels(text: &str) -> HashMap<String, String> {
    let mut labels = HashMap::new();
    let mut rest = text;
    while let Some((key, after)) = rest.split_once("=\"") {
        let end = after.find('"').expect("a label value is closed");
        labels.insert(
            key.trim_start_matches(',').to_owned(),
            after[..end].to_owned(),
        );
        rest = &after[end + 1..];
    }
    labels
}

/// Checks `exposition` against [`PROTOCOL`] under the vLLM profile's names (`vllm`) or the
/// semconv profile's: every signal present with its type and labels (in the vLLM profile,
/// exactly vLLM's label set), every value finite, the KV-cache usage within 0–1.
pub fn check(exposition: &Exposition, vllm: bool) {
    for signal in PROTOCOL {
        let name = if vllm { signal.vllm } else { signal.semconv };
        assert_eq!(
            exposition.types.get(name).map(String::as_str),
            Some(signal.kind),
            "{name}'s type (required: {})",
            signal.required
        );
        let samples = exposition.of(signal, vllm);
        assert!(!samples.is_empty(), "{name} has no sample");
        for (labels, value) in samples {
            for label in signal.labels {
                assert!(
                    labels.contains_key(*label),
                    "{name} lacks {label}: {labels:?}"
                );
            }
            if vllm {
                let mut keys: Vec<&str> = labels.keys().map(String::as_str).collect();
                let mut want = signal.vllm_labels.to_vec();
                keys.sort_unstable();
                want.sort_unstable();
                assert_eq!(keys, want, "{name}'s labels are vLLM's");
            }
            assert!(value.is_finite(), "{name} {value}");
        }
        check_kv(name, signal, samples.iter().map(|(_, v)| *v));
    }
}

fn check_kv(name: &str, signal: &Signal, values: impl Iterator<Item = f64>) {
    if signal.otel == "tokenmeter.kv_cache.usage" {
        for value in values {
            assert!(
                (0.0..=1.0).contains(&value),
                "{name} {value} is outside 0–1"
            );
        }
    }
}

/// One OpenTelemetry data point: the instrument's kind as the table names it, the attributes,
/// the value.
pub type Point = (&'static str, BTreeMap<String, String>, f64);

/// Every data point of `export` per instrument name.
pub fn otel_points(export: &ResourceMetrics) -> HashMap<String, Vec<Point>> {
    let mut out: HashMap<String, Vec<Point>> = HashMap::new();
    for scope in export.scope_metrics() {
        for metric in scope.metrics() {
            let points = match metric.data() {
                AggregatedMetrics::F64(data) => points(data, |v| v),
                AggregatedMetrics::U64(data) => points(data, |v| v as f64),
                AggregatedMetrics::I64(data) => points(data, |v| v as f64),
            };
            out.entry(metric.name().to_owned())
                .or_default()
                .extend(points);
        }
    }
    out
}

fn points<T: Copy>(data: &MetricData<T>, f: impl Fn(T) -> f64) -> Vec<Point> {
    fn attrs<'a>(
        kvs: impl Iterator<Item = &'a opentelemetry::KeyValue>,
    ) -> BTreeMap<String, String> {
        kvs.map(|kv| (kv.key.to_string(), kv.value.to_string()))
            .collect()
    }
    match data {
        MetricData::Gauge(g) => g
            .data_points()
            .map(|p| ("gauge", attrs(p.attributes()), f(p.value())))
            .collect(),
        MetricData::Sum(s) => {
            let kind = if s.is_monotonic() {
                "counter"
            } else {
                "updowncounter"
            };
            s.data_points()
                .map(|p| (kind, attrs(p.attributes()), f(p.value())))
                .collect()
        }
        MetricData::Histogram(_) | MetricData::ExponentialHistogram(_) => Vec::new(),
    }
}

/// Checks an OpenTelemetry export against [`PROTOCOL`]: every signal's instrument present with
/// its kind and attributes, every value finite, the KV-cache usage within 0–1.
pub fn check_otel(points: &HashMap<String, Vec<Point>>) {
    for signal in PROTOCOL {
        let name = signal.otel;
        let found = points.get(name).map_or(&[][..], Vec::as_slice);
        assert!(
            !found.is_empty(),
            "{name} has no data point (required: {})",
            signal.required
        );
        for (kind, attrs, value) in found {
            assert_eq!(*kind, signal.otel_kind, "{name}'s kind");
            for label in signal.labels {
                assert!(
                    attrs.contains_key(*label),
                    "{name} lacks {label}: {attrs:?}"
                );
            }
            assert!(value.is_finite(), "{name} {value}");
        }
        check_kv(name, signal, found.iter().map(|(_, _, v)| *v));
    }
}
