//! The layer on an axum `Router`, with axum's own `Sse` response.

use axum::Router;
use axum::body::Body;
use axum::response::sse::{Event, Sse};
use axum::routing::post;
use futures_util::stream::{self, Stream, StreamExt};
use http_body_util::BodyExt;
use tokenmeter::{ErrorClass, Outcome};

use super::*;
use crate::header_value;

/// A handler with its token loop as it would be without metering.
async fn chat() -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let role = r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#.to_owned();
    let tokens =
        ["Hel", "lo", "!"].map(|t| format!(r#"{{"choices":[{{"delta":{{"content":"{t}"}}}}]}}"#));
    let usage = r#"{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":3}}"#.to_owned();
    let events = std::iter::once(role)
        .chain(tokens)
        .chain([usage, "[DONE]".to_owned()]);
    Sse::new(stream::iter(events).map(|data| Ok(Event::default().data(data))))
}

fn request(path: &str) -> http::Request<Body> {
    http::Request::post(path)
        .header("x-model", "llama")
        .body(Body::empty())
        .unwrap()
}

#[tokio::test]
async fn router_layer_meters_axum_sse_and_every_route() {
    let h = Harness::new();
    let layer = MeterLayer::labels(h.meter.clone(), |parts| {
        Labels::server("chat").request_model(header_value(parts, "x-model"))
    });
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .layer(layer);

    let response = app
        .clone()
        .oneshot(request("/v1/chat/completions"))
        .await
        .unwrap();
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream"
    );
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 2 * 6);
    let record = h.record();
    assert_eq!(record.outcome, Outcome::Success);
    // Frames: the role frame, three tokens and the usage chunk.
    assert_eq!(
        (record.items, record.frames, record.output_tokens),
        (3, 5, 3)
    );
    assert_eq!(record.input_tokens, Some(4));
    assert_eq!(record.series.labels().request_model_name(), "llama");

    // `layer` also wraps the fallback: a 404 is a client error.
    let response = app.oneshot(request("/nope")).await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let records = h.memory.records();
    assert_eq!(records[1].outcome, Outcome::Error(ErrorClass::ClientError));
}

#[tokio::test]
async fn route_layer_meters_matched_routes_only() {
    let h = Harness::new();
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route_layer(h.layer());
    let response = app.clone().oneshot(request("/nope")).await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert!(h.memory.is_empty());
    let response = app.oneshot(request("/v1/chat/completions")).await.unwrap();
    response.into_body().collect().await.unwrap();
    assert_eq!(h.record().output_tokens, 3);
}
