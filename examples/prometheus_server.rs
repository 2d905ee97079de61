//! A small axum server that streams metered tokens and serves `/metrics` for Prometheus.
//!
//! ```text
//! cargo run -p tokenmeter-examples --example prometheus_server
//! curl -N 'http://127.0.0.1:3000/generate?tokens=20&ttft_ms=200'   # stream 20 tokens
//! curl http://127.0.0.1:3000/metrics                                # the exposition
//! ```
//!
//! Environment: `TOKENMETER_PROFILE` = `semconv` (default) or `vllm`; `TOKENMETER_ADDR`
//! (default `127.0.0.1:3000`, loopback only). A client that hangs up mid-stream is counted as
//! cancelled (`outcome="cancelled"`, vLLM `finished_reason="abort"`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokenmeter::sink::EngineRecorder;
use tokenmeter::{FinishReason, Labels, Meter, MeterExt, Observation, Series};
use tokenmeter_prometheus::{Builder, CONTENT_TYPE, Handle, Metric, Profile};

/// Pretend batch capacity: the KV-cache usage gauge is running requests / this.
const CAPACITY: f64 = 16.0;

struct App {
    series: Series,
    engine: EngineRecorder,
    metrics: Handle,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let profile: Profile = std::env::var("TOKENMETER_PROFILE")
        .unwrap_or_else(|_| "semconv".into())
        .parse()?;
    let addr: SocketAddr = std::env::var("TOKENMETER_ADDR")
        .unwrap_or_else(|_| "127.0.0.1:3000".into())
        .parse()?;

    // The exporter: a recorder of our own, an SLO threshold (TTFT <= 500 ms) as a bucket edge.
    let (sink, metrics) = Builder::new(profile)
        .add_edges(Metric::Ttft, &[0.5])?
        .build_recorder()?;
    let labels = Labels::server("chat")
        .provider("example")
        .request_model("tiny-echo");
    let meter = Meter::builder().sink(sink).build();
    let engine = meter.engine(&labels); // KV-cache usage goes to every sink of the meter
    let app = Arc::new(App {
        series: meter.series(&labels), // resolved once, kept
        engine,
        metrics,
    });

    let router = Router::new()
        .route("/generate", get(generate))
        .route("/metrics", get(serve_metrics))
        .with_state(app);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!(
        "profile {profile}: http://{}/generate?tokens=20 and /metrics",
        listener.local_addr()?
    );
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// Streams `tokens` words, the first after `ttft_ms`, then one every 20 ms.
async fn generate(State(app): State<Arc<App>>, uri: Uri) -> Response {
    let mut request = app.series.start(); // the request arrived
    let tokens = query(&uri, "tokens").unwrap_or(16).min(10_000);
    let ttft = Duration::from_millis(query(&uri, "ttft_ms").unwrap_or(150).min(60_000));
    tokio::time::sleep(ttft / 3).await; // waiting for a batch slot
    request.mark_scheduled();
    app.engine
        .set_kv_cache_usage(app.series.running() as f64 / CAPACITY);

    let words = futures_util::stream::unfold(0u64, move |i| async move {
        if i == tokens {
            return None;
        }
        let wait = if i == 0 {
            ttft * 2 / 3
        } else {
            Duration::from_millis(20)
        };
        tokio::time::sleep(wait).await;
        Some((Ok::<_, Infallible>(format!("word{i} ")), i + 1))
    });
    // One token per word; the last one says why generation stopped.
    let mut seen = 0;
    let metered = words
        .meter(request)
        .with_observer(move |_word: &Result<String, Infallible>| {
            seen += 1;
            let observation = Observation::tokens(1);
            if seen == tokens {
                observation.with_finish(FinishReason::Length)
            } else {
                observation
            }
        });
    Body::from_stream(metered).into_response()
}

async fn serve_metrics(State(app): State<Arc<App>>) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], app.metrics.render()).into_response()
}

fn query(uri: &Uri, name: &str) -> Option<u64> {
    uri.query()?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)?
        .1
        .parse()
        .ok()
}
