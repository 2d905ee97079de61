//! An in-process server like `examples/prometheus_server.rs`: streams metered tokens over HTTP
//! and serves `/metrics` in both profiles, with an in-memory sink beside them for exact values.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use tokenmeter::sink::InMemorySink;
use tokenmeter::{ErrorClass, Labels, Meter, MeterExt, Observation, Series};
use tokenmeter_prometheus::{Builder, CONTENT_TYPE, Handle, Metric, Profile};

/// Time between tokens after the first.
const GAP: Duration = Duration::from_millis(5);

/// The server's state: one series, exact values, and a handle per profile.
pub(crate) struct App {
    pub(crate) series: Series,
    pub(crate) memory: InMemorySink,
    pub(crate) semconv: Handle,
    pub(crate) vllm: Handle,
}

impl App {
    /// A meter feeding an in-memory sink and both profiles, with `ttft_edge` (seconds) added to
    /// the TTFT buckets. The series is resolved now, so it is exposed (at zero) before any
    /// request.
    pub(crate) fn new(ttft_edge: f64) -> Arc<Self> {
        let build = |profile| {
            Builder::new(profile)
                .add_edges(Metric::Ttft, &[ttft_edge])
                .and_then(Builder::build_recorder)
                .expect("a local exporter")
        };
        let (semconv_sink, semconv) = build(Profile::Semconv);
        let (vllm_sink, vllm) = build(Profile::Vllm);
        let memory = InMemorySink::new();
        let meter = Meter::builder()
            .sink(memory.clone())
            .sink(semconv_sink)
            .sink(vllm_sink)
            .build();
        let series = meter.series(
            &Labels::server("chat")
                .provider("sim")
                .request_model("sim-1"),
        );
        Arc::new(Self {
            series,
            memory,
            semconv,
            vllm,
        })
    }

    /// The routes: `/generate?tokens=N&ttft_ms=T[&fail=1]`, `/metrics`, `/vllm/metrics`.
    pub(crate) fn router(self: &Arc<Self>) -> Router {
        let generate = {
            let app = self.clone();
            move |uri: Uri| {
                let app = app.clone();
                async move { app.generate(&uri) }
            }
        };
        let semconv = self.semconv.clone();
        let vllm = self.vllm.clone();
        Router::new()
            .route("/generate", get(generate))
            .route("/metrics", get(move || metrics(semconv.clone())))
            .route("/vllm/metrics", get(move || metrics(vllm.clone())))
    }

    fn generate(&self, uri: &Uri) -> Response {
        let mut request = self.series.start();
        request.mark_scheduled();
        let param = |name: &str| {
            uri.query()
                .unwrap_or_default()
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .find(|(key, _)| *key == name)
                .and_then(|(_, value)| value.parse::<u64>().ok())
        };
        let tokens = param("tokens").unwrap_or(4);
        let ttft = Duration::from_millis(param("ttft_ms").unwrap_or(10));
        let fail = param("fail") == Some(1);
        let items = futures_util::stream::unfold(0u64, move |i| async move {
            if i == tokens {
                return fail.then(|| (Err(io::Error::other("the engine failed")), i + 1));
            }
            if i > tokens {
                return None;
            }
            tokio::time::sleep(if i == 0 { ttft } else { GAP }).await;
            Some((Ok(Bytes::from_static(b"tok ")), i + 1))
        });
        let metered = items
            .meter(request)
            .with_observer(|item: &Result<Bytes, io::Error>| match item {
                Ok(_) => Observation::tokens(1),
                Err(_) => Observation::error(ErrorClass::ServerError),
            });
        (StatusCode::OK, Body::from_stream(metered)).into_response()
    }
}

async fn metrics(handle: Handle) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], handle.render()).into_response()
}
