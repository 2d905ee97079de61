//! A minimal OpenAI-compatible streaming endpoint, metered by one layer, with Prometheus
//! `/metrics`. The handler's token loop knows nothing about metering.
//!
//! ```text
//! cargo run -p tokenmeter-axum --example axum_sse
//! curl -N http://127.0.0.1:3000/v1/chat/completions -H 'content-type: application/json' \
//!   -d '{"model":"tiny-echo","stream":true,"stream_options":{"include_usage":true},
//!        "messages":[{"role":"user","content":"hello there, metered world"}]}'
//! curl http://127.0.0.1:3000/metrics      # gen_ai_server_time_to_first_token_seconds, ...
//!
//! cargo run -p tokenmeter-axum --example axum_sse -- --once   # one request to itself, then exit
//! ```
//!
//! `TOKENMETER_ADDR` changes the address (default `127.0.0.1:3000`, loopback only).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router, middleware};
use futures_util::stream::{self, StreamExt};
use serde_json::{Value, json};
use tokenmeter::{Labels, Meter};
use tokenmeter_axum::{MeterLayer, model_from_body, request_model};
use tokenmeter_prometheus::{Builder, CONTENT_TYPE, Handle, Profile};

/// The model this server answers as.
const MODEL: &str = "tiny-echo";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let once = std::env::args().any(|a| a == "--once");
    let addr: SocketAddr = match (once, std::env::var("TOKENMETER_ADDR")) {
        (true, _) => "127.0.0.1:0".parse()?,
        (false, Ok(addr)) => addr.parse()?,
        (false, Err(_)) => "127.0.0.1:3000".parse()?,
    };

    // 1. Prometheus on a recorder of our own; the meter writes to it.
    let (sink, metrics) = Builder::new(Profile::Semconv).build_recorder()?;
    let meter = Meter::builder().sink(sink).build();

    // 2. The layer: one series per requested model (capped by the meter), the arrival at the
    //    call. The model is in the JSON body, which `model_from_body` reads first.
    let layer = MeterLayer::labels(meter, |parts| {
        Labels::server("chat")
            .provider("example")
            .request_model(request_model(parts))
    });

    // 3. The routes: only the completion endpoint is metered (the last layer runs first).
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route_layer(layer)
        .route_layer(middleware::from_fn(model_from_body))
        .route("/metrics", get(move || render(metrics.clone())));

    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    if once {
        tokio::spawn(async move { axum::serve(listener, app).await });
        return ask_once(addr).await;
    }
    println!("POST http://{addr}/v1/chat/completions, GET http://{addr}/metrics");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// The token loop: echoes the last user message word by word, one word every 20 ms, as
/// OpenAI's chat chunks (role frame, content deltas, finish reason, optional usage, `[DONE]`).
async fn chat(Json(request): Json<Value>) -> Response {
    let prompt = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_owned();
    let words: Vec<String> = prompt.split_whitespace().map(|w| format!("{w} ")).collect();
    let (input, output) = (prompt.split_whitespace().count(), words.len());
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": MODEL,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    if request["stream"] != json!(true) {
        let text: String = words.concat();
        return Json(json!({"id": "chatcmpl-1", "object": "chat.completion", "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": input, "completion_tokens": output}}))
        .into_response();
    }
    let role = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    let tokens = stream::iter(words).then(move |word| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        chunk(json!({"content": word}), Value::Null)
    });
    let mut tail = vec![chunk(json!({}), json!("stop"))];
    if request["stream_options"]["include_usage"] == json!(true) {
        tail.push(
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": MODEL,
            "choices": [], "usage": {"prompt_tokens": input, "completion_tokens": output}}),
        );
    }
    let events = stream::iter([role])
        .chain(tokens)
        .chain(stream::iter(tail))
        .map(|chunk| chunk.to_string())
        .chain(stream::iter(["[DONE]".to_owned()]))
        .map(|data| Ok::<_, Infallible>(Event::default().data(data)));
    Sse::new(events).into_response()
}

async fn render(metrics: Handle) -> impl IntoResponse {
    (
        [(http::header::CONTENT_TYPE, CONTENT_TYPE)],
        metrics.render(),
    )
}

/// `--once`: one streaming request to this server, then the metered numbers from `/metrics`.
async fn ask_once(addr: SocketAddr) -> Result<(), Box<dyn std::error::Error>> {
    // Built with the workspace's features, reqwest may have rustls without a crypto provider:
    // ring's, unless one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let body = json!({"model": MODEL, "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "hello there, metered world"}]});
    let streamed = client
        .post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    println!("{streamed}");
    let metrics = client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    let wanted = [
        "gen_ai_server_time_to_first_token_seconds_count",
        "gen_ai_server_time_per_output_token_seconds_count",
        "tokenmeter_requests_total",
    ];
    let shown: Vec<&str> = metrics
        .lines()
        .filter(|line| wanted.iter().any(|w| line.starts_with(w)) && !line.ends_with(" 0"))
        .collect();
    for line in &shown {
        println!("{line}");
    }
    // The scripted test (`scripts/test.sh`) relies on this: the one request was metered.
    // Labelled by the model named in the request's body.
    let metered = |name: &str, tail: &str| {
        shown.iter().any(|l| {
            l.starts_with(name)
                && l.contains(&format!("gen_ai_request_model=\"{MODEL}\""))
                && l.ends_with(tail)
        })
    };
    if !(metered("tokenmeter_requests_total", r#"outcome="success"} 1"#)
        && metered("gen_ai_server_time_to_first_token_seconds_count", " 1"))
    {
        return Err(
            "the request was not metered as one success with a TTFT, labelled by its model".into(),
        );
    }
    Ok(())
}
