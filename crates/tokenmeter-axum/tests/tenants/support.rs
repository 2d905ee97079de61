//! What the tenant tests share: a meter with both exporters, the layer's chooser, an axum
//! server on loopback, and readers of the Prometheus exposition and the OTel export.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::net::SocketAddr;

use axum::Router;
use axum::middleware;
use axum::response::sse::{Event, Sse};
use axum::routing::post;
use futures_util::stream::{self, Stream, StreamExt};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use tokenmeter::{Labels, Meter};
use tokenmeter_axum::{ByLabels, MeterLayer, TenantLabels, model_from_body, request_model};
use tokenmeter_otel::OtelSink;
use tokenmeter_prometheus::{Builder, Handle, Profile};

/// The header that names the tenant.
pub(crate) const TENANT_HEADER: &str = "x-tenant-id";

/// Labels that vary with the event (the outcome, the bucket), not with the series.
const VARIANT_LABELS: [&str; 8] = [
    "le",
    "quantile",
    "outcome",
    "error_type",
    "finished_reason",
    "kind",
    "gen_ai_token_type",
    "source",
];

/// One exported series: its metric (or sample) name and its labels.
pub(crate) type Point = (String, BTreeMap<String, String>);

/// A meter with the Prometheus exporter (semconv profile, a local recorder) and the OTel one
/// (the SDK's in-memory exporter).
pub(crate) struct Exporters {
    pub(crate) meter: Meter,
    pub(crate) prometheus: Handle,
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
}

impl Exporters {
    pub(crate) fn new(cap: usize) -> Self {
        let (sink, prometheus) = Builder::new(Profile::Semconv)
            .build_recorder()
            .expect("a local Prometheus recorder");
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        let meter = Meter::builder()
            .sink(sink)
            .sink(OtelSink::new(&provider.meter("tokenmeter")))
            .max_series(cap)
            .build();
        Self {
            meter,
            prometheus,
            provider,
            exporter,
        }
    }

    /// Every data point of the OTel export now, as (metric name, attributes).
    pub(crate) fn otel(&self) -> Vec<Point> {
        self.provider.force_flush().expect("flush the OTel SDK");
        let exported = self.exporter.get_finished_metrics().expect("metrics");
        exported
            .last()
            .map(tokenmeter_tests::otel::points)
            .unwrap_or_default()
    }

    /// The value of the OTel counter `name` of `role` in the last export.
    pub(crate) fn otel_counter(&self, name: &str, role: &str) -> Option<u64> {
        let exported = self.exporter.get_finished_metrics().expect("metrics");
        let last = exported.last()?;
        let metric = last
            .scope_metrics()
            .flat_map(|scope| scope.metrics())
            .find(|metric| metric.name() == name)?;
        let AggregatedMetrics::U64(MetricData::Sum(sum)) = metric.data() else {
            return None;
        };
        sum.data_points()
            .find(|p| {
                p.attributes()
                    .any(|kv| kv.key.as_str() == "role" && kv.value.as_str() == role)
            })
            .map(|p| p.value())
    }

    /// Every sample of the Prometheus exposition now.
    pub(crate) fn prometheus(&self) -> (String, Vec<Point>) {
        let text = self.prometheus.render();
        let samples = text.lines().filter_map(sample).collect();
        (text, samples)
    }
}

/// One sample line of the text format: `name{a="x",b="y"} value` (values without escaped
/// quotes, as in these tests).
fn sample(line: &str) -> Option<Point> {
    if line.starts_with('#') || line.is_empty() {
        return None;
    }
    let (series, _value) = line.rsplit_once(' ')?;
    let Some((name, rest)) = series.split_once('{') else {
        return Some((series.to_owned(), BTreeMap::new()));
    };
    let mut labels = BTreeMap::new();
    for pair in rest.strip_suffix('}')?.split("\",") {
        let (key, value) = pair.split_once("=\"")?;
        labels.insert(key.to_owned(), value.trim_end_matches('"').to_owned());
    }
    Some((name.to_owned(), labels))
}

/// Per metric, the number of distinct series: label sets without the labels that vary with
/// the event (outcome, bucket, ...), in either spelling.
pub(crate) fn series_per_metric(points: &[Point]) -> BTreeMap<&str, usize> {
    let mut sets: BTreeMap<&str, BTreeSet<Vec<(&str, &str)>>> = BTreeMap::new();
    for (name, labels) in points {
        let identity = labels
            .iter()
            .filter(|(k, _)| !VARIANT_LABELS.contains(&k.replace('.', "_").as_str()))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        sets.entry(name.as_str()).or_default().insert(identity);
    }
    sets.into_iter()
        .map(|(name, set)| (name, set.len()))
        .collect()
}

/// The distinct values of label (or attribute) `key`.
pub(crate) fn values<'a>(points: &'a [Point], key: &str) -> BTreeSet<&'a str> {
    points
        .iter()
        .filter_map(|(_, labels)| labels.get(key).map(String::as_str))
        .collect()
}

/// The allow-list: the tenant header as `tenant.id`, and the body's `user` as `user.id`.
pub(crate) fn tenants() -> TenantLabels {
    TenantLabels::new()
        .header(TENANT_HEADER, "tenant.id")
        .and_then(TenantLabels::body_user)
        .expect("a valid allow-list")
}

/// The layer's chooser: chat, the body's model, the tenants.
pub(crate) fn chooser(meter: &Meter) -> ByLabels {
    ByLabels::new(meter.clone(), |parts| {
        Labels::server("chat")
            .provider("test")
            .request_model(request_model(parts))
    })
    .tenants(tenants())
}

/// A streaming chat answer: two tokens, usage, `[DONE]`.
async fn chat() -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let chunks = [
        r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
        r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
        r#"{"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
        "[DONE]",
    ];
    Sse::new(stream::iter(chunks).map(|data| Ok(Event::default().data(data))))
}

/// An axum server on loopback metering `/v1/chat/completions` with `choose` (and
/// `model_from_body`, which reads the model and the user). It runs until the test's runtime
/// ends.
pub(crate) async fn serve(choose: ByLabels) -> SocketAddr {
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .layer(MeterLayer::with_chooser(choose))
        .layer(middleware::from_fn(model_from_body));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// A chat request body for `user`.
pub(crate) fn body(user: &str) -> String {
    format!(
        r#"{{"model":"m","user":"{user}","stream":true,"messages":[{{"role":"user","content":"hi"}}]}}"#
    )
}

/// Posts one chat request with `headers` and reads the whole answer.
pub(crate) async fn post_chat(
    http: &reqwest::Client,
    addr: SocketAddr,
    headers: &[(&str, reqwest::header::HeaderValue)],
    user: &str,
) {
    let mut request = http
        .post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(body(user));
    for (name, value) in headers {
        request = request.header(*name, value.clone());
    }
    let response = request.send().await.expect("the server answers");
    assert!(response.status().is_success(), "{}", response.status());
    let text = response.text().await.expect("the whole answer");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
}

/// A reqwest client. In a workspace build reqwest may come with rustls and no crypto provider
/// of its own (the CLI's choice), and building a client with none installed panics: install
/// ring's first.
pub(crate) fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}
