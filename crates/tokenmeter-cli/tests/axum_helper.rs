//! The axum helper end to end, over real HTTP on loopback: the simulated server (in process)
//! upstream, an axum proxy with `tokenmeter_axum::MeterLayer` whose handler forwards each request
//! with reqwest and streams the upstream body back unchanged, and a real HTTP client streaming
//! through the proxy. The layer's records must agree with what serve sent (`usage`) and with
//! serve's own `/metrics`, also when the client hangs up mid-stream.

#[path = "serve_support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::StreamExt;
use support::{Hosted, Target};
use tokenmeter::sink::InMemorySink;
use tokenmeter::{FinishReason, Labels, Meter, Outcome, RequestRecord};
use tokenmeter_axum::{MeterLayer, header_value};
use tokenmeter_server::Config;

/// The model serve answers as; the proxy's label comes from the `x-model` header.
const MODEL: &str = "axum-e2e";

/// A `tokenmeter serve` answering as [`MODEL`].
fn start_serve() -> Hosted {
    Hosted::start(Config::default().model(MODEL).seed(9))
}

/// Serve's `name{labels of the chat series, extra}`, as it prints it on `/metrics`.
fn chat_series(name: &str, extra: &str) -> String {
    format!(
        r#"{name}{{gen_ai_operation_name="chat",gen_ai_provider_name="tokenmeter-sim",gen_ai_request_model="{MODEL}",role="server"{extra}}}"#
    )
}

/// The value of serve's `chat_series(name, extra)`; panics when serve has no such series.
fn metric(serve: &Hosted, name: &str, extra: &str) -> f64 {
    serve.sample(&chat_series(name, extra))
}

/// Waits until `metric(serve, name, extra)` is `value`, or fails after `within`.
fn wait_for(serve: &Hosted, name: &str, extra: &str, value: f64, within: Duration) {
    let series = chat_series(name, extra);
    serve.wait_for(&series, value, within, |serve| serve.sample(&series));
}

/// Where the proxy forwards to.
#[derive(Clone)]
struct Upstream {
    client: reqwest::Client,
    url: String,
}

/// The proxy's handler: forwards the body, streams the answer back unchanged. It knows
/// nothing about metering.
async fn forward(State(upstream): State<Upstream>, body: Bytes) -> Response {
    let sent = upstream
        .client
        .post(&upstream.url)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await;
    match sent {
        Ok(answer) => {
            let status = answer.status();
            let content_type = answer.headers().get(header::CONTENT_TYPE).cloned();
            let mut response = Response::new(Body::from_stream(answer.bytes_stream()));
            *response.status_mut() = status;
            if let Some(value) = content_type {
                response.headers_mut().insert(header::CONTENT_TYPE, value);
            }
            response
        }
        Err(error) => (StatusCode::BAD_GATEWAY, error.to_string()).into_response(),
    }
}

/// The proxy on 127.0.0.1 in front of `serve`, metered into `memory`; returns its address.
async fn start_proxy(serve: &Hosted, memory: &InMemorySink) -> SocketAddr {
    let meter = Meter::builder().sink(memory.clone()).build();
    let layer = MeterLayer::labels(meter, |parts| {
        Labels::server("chat").request_model(header_value(parts, "x-model"))
    });
    let upstream = Upstream {
        client: support::http::reqwest_client(),
        url: format!("http://{}/v1/chat/completions", serve.addr),
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(forward))
        .route_layer(layer)
        .with_state(upstream);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the proxy on loopback");
    let addr = listener.local_addr().expect("proxy address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// Sends a streaming chat request for `max_tokens` tokens through the proxy.
async fn ask(proxy: SocketAddr, max_tokens: u32) -> reqwest::Response {
    let body = format!(
        r#"{{"model":"{MODEL}","stream":true,"stream_options":{{"include_usage":true}},"max_tokens":{max_tokens},"messages":[{{"role":"user","content":"tell me a long story"}}]}}"#
    );
    let response = support::http::reqwest_client()
        .post(format!("http://{proxy}/v1/chat/completions"))
        .header("content-type", "application/json")
        .header("x-model", MODEL)
        .body(body)
        .send()
        .await
        .expect("the proxy answers");
    assert_eq!(response.status(), 200);
    response
}

/// Waits for the layer's one record, or fails after `within`.
fn wait_for_record(memory: &InMemorySink, within: Duration) -> RequestRecord {
    let deadline = Instant::now() + within;
    while memory.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the layer recorded nothing after {within:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let records = memory.records();
    assert_eq!(records.len(), 1, "one request, one record: {records:#?}");
    records.into_iter().next().expect("one record")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Token-bearing chunks in `text` (serve sends one per token, the role frame has no content).
fn content_chunks(text: &str) -> usize {
    text.matches(r#""delta":{"content""#).count()
}

#[test]
fn a_stream_through_the_layer_matches_serves_usage_and_metrics() {
    let serve = start_serve();
    let memory = InMemorySink::new();
    let runtime = runtime();
    let text = runtime.block_on(async {
        let proxy = start_proxy(&serve, &memory).await;
        let mut body = ask(proxy, 40).await.bytes_stream();
        let mut text = String::new();
        while let Some(chunk) = body.next().await {
            text.push_str(std::str::from_utf8(&chunk.expect("stream")).expect("UTF-8"));
        }
        text
    });
    assert!(
        text.ends_with("data: [DONE]\n\n"),
        "the whole stream came through"
    );

    // What serve said it sent.
    let usage = text
        .split("\n\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .find_map(|chunk| chunk.get("usage").filter(|u| !u.is_null()).cloned())
        .expect("a usage chunk");
    let output = usage["completion_tokens"]
        .as_u64()
        .expect("completion_tokens");
    let input = usage["prompt_tokens"].as_u64().expect("prompt_tokens");
    assert_eq!(output, 40);

    // What the layer measured.
    let record = wait_for_record(&memory, Duration::from_secs(5));
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(record.output_tokens, output);
    assert_eq!(record.items, content_chunks(&text) as u64);
    assert_eq!(record.items, output, "one token per chunk from serve");
    assert_eq!(record.input_tokens, Some(input));
    assert_eq!(record.finish_reason, Some(FinishReason::Length));
    let ttft = record.ttft.expect("a first token");
    assert!(ttft > Duration::ZERO && ttft < record.e2e);
    assert!(record.tpot().is_some());
    assert_eq!(record.series.labels().request_model_name(), MODEL);

    // What serve measured of the same request.
    wait_for(
        &serve,
        "tokenmeter_requests_total",
        r#",outcome="success""#,
        1.0,
        Duration::from_secs(5),
    );
    assert_eq!(
        metric(&serve, "tokenmeter_output_tokens_total", ""),
        output as f64
    );
    assert_eq!(
        metric(&serve, "tokenmeter_input_tokens_total", ""),
        input as f64
    );
}

#[test]
fn a_client_that_hangs_up_mid_stream_is_cancelled_on_both_sides() {
    let serve = start_serve();
    let memory = InMemorySink::new();
    let runtime = runtime();
    // 3,000 tokens take serve at least 21 s (7 ms a decode step): a cancel seen within the
    // deadlines below is the hang-up, not the end of the stream.
    let (seen, hung_up) = runtime.block_on(async {
        let proxy = start_proxy(&serve, &memory).await;
        let mut body = ask(proxy, 3_000).await.bytes_stream();
        let mut text = String::new();
        while content_chunks(&text) < 3 {
            let chunk = body.next().await.expect("more events").expect("stream");
            text.push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
        drop(body); // the client goes away mid-stream
        (content_chunks(&text) as u64, Instant::now())
    });

    let record = wait_for_record(&memory, Duration::from_secs(10));
    assert_eq!(record.outcome, Outcome::Cancelled);
    assert!(
        record.items >= seen && record.items < 3_000,
        "the proxy passed {} tokens; the client read {seen}",
        record.items
    );
    assert_eq!(
        record.output_tokens, record.items,
        "no usage before the end"
    );
    assert_eq!(record.finish_reason, None);
    let proxy_series = record.series.clone();
    assert_eq!((proxy_series.waiting(), proxy_series.running()), (0, 0));

    wait_for(
        &serve,
        "tokenmeter_requests_total",
        r#",outcome="cancelled""#,
        1.0,
        Duration::from_secs(10),
    );
    // Both sides saw the cancel before the stream could have ended by itself (21 s).
    assert!(hung_up.elapsed() < Duration::from_secs(20));
    assert_eq!(
        metric(&serve, "tokenmeter_requests_total", r#",outcome="success""#),
        0.0
    );
    // Nothing left running on serve either.
    wait_for(
        &serve,
        "tokenmeter_requests_running",
        "",
        0.0,
        Duration::from_secs(5),
    );
    assert_eq!(metric(&serve, "tokenmeter_requests_waiting", ""), 0.0);
    assert!(metric(&serve, "tokenmeter_output_tokens_total", "") < 3_000.0);
    drop(runtime); // the proxy stops with its runtime
}
