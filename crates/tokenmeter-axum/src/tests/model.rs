//! `model_from_body`: the model read from the JSON body, the body handed on unchanged.

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::middleware;
use axum::routing::post;
use futures_util::stream;
use http_body_util::StreamBody;

use super::*;
use crate::{RequestModel, model_from_body, model_from_body_limited, request_model};

/// Echoes the body it got (or its error) and the model the middleware found.
async fn echo(request: Request) -> String {
    let model = request
        .extensions()
        .get::<RequestModel>()
        .map_or("-".to_owned(), |m| m.0.clone());
    match request.into_body().collect().await {
        Ok(body) => format!("{model}|{}", String::from_utf8_lossy(&body.to_bytes())),
        Err(error) => format!("{model}|error: {error}"),
    }
}

fn app(h: &Harness, limit: Option<usize>) -> Router {
    let meter = MeterLayer::labels(h.meter.clone(), |parts| {
        Labels::server("chat").request_model(request_model(parts))
    });
    let router = Router::new()
        .route("/v1/chat/completions", post(echo))
        .layer(meter);
    match limit {
        None => router.layer(middleware::from_fn(model_from_body)),
        Some(limit) => router.layer(middleware::from_fn_with_state(
            limit,
            model_from_body_limited,
        )),
    }
}

fn frames(parts: &[&'static str]) -> Body {
    let frames = parts
        .iter()
        .map(|p| Ok::<_, io::Error>(Frame::data(Bytes::from_static(p.as_bytes()))))
        .collect::<Vec<_>>();
    Body::new(StreamBody::new(stream::iter(frames)))
}

fn post_json(content_type: &str, body: Body) -> http::Request<Body> {
    http::Request::post("/v1/chat/completions")
        .header(header::CONTENT_TYPE, content_type)
        .body(body)
        .unwrap()
}

async fn answer(app: Router, request: http::Request<Body>) -> String {
    let response = app.oneshot(request).await.unwrap();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

const BODY: [&str; 3] = [
    r#"{"messages":[{"role":"user","content":"hi"}],"#,
    r#""model":"llama-"#,
    r#"3-8b","stream":true}"#,
];

#[tokio::test]
async fn the_model_of_a_body_in_several_frames_labels_the_series_and_the_body_is_unchanged() {
    let h = Harness::new();
    let got = answer(app(&h, None), post_json("application/json", frames(&BODY))).await;
    assert_eq!(got, format!("llama-3-8b|{}", BODY.concat()));
    assert_eq!(
        h.record().series.labels().request_model_name(),
        "llama-3-8b"
    );
}

#[tokio::test]
async fn a_body_over_the_limit_passes_whole_and_unread() {
    let h = Harness::new();
    let got = answer(
        app(&h, Some(50)),
        post_json("application/json", frames(&BODY)),
    )
    .await;
    assert_eq!(got, format!("-|{}", BODY.concat()));
    assert_eq!(h.record().series.labels().request_model_name(), "");
}

#[tokio::test]
async fn bodies_that_are_not_json_objects_with_a_string_model_give_no_model() {
    let h = Harness::new();
    let cases = [
        ("text/plain", r#"{"model":"m"}"#),
        ("application/json", r#"{"model":"m""#),
        ("application/json", r#"{"model":7}"#),
        ("application/json", r#"["model"]"#),
        ("application/json", ""),
    ];
    for (content_type, body) in cases {
        let got = answer(app(&h, None), post_json(content_type, Body::from(body))).await;
        assert_eq!(got, format!("-|{body}"), "{content_type} {body}");
    }
    let vendor = answer(
        app(&h, None),
        post_json(
            "application/vnd.api+json; charset=utf-8",
            Body::from(r#"{"model":"v"}"#),
        ),
    )
    .await;
    assert_eq!(vendor, r#"v|{"model":"v"}"#);
}

#[tokio::test]
async fn a_body_that_fails_while_read_hands_the_handler_the_same_failure() {
    let h = Harness::new();
    let failing = stream::iter([
        Ok(Frame::data(Bytes::from_static(br#"{"model":"#))),
        Err(io::Error::other("connection reset")),
    ]);
    let request = post_json("application/json", Body::new(StreamBody::new(failing)));
    let got = answer(app(&h, None), request).await;
    assert!(got.starts_with("-|error: "), "{got}");
    assert!(got.contains("connection reset"), "{got}");
}

#[tokio::test]
async fn without_the_middleware_the_model_is_unknown() {
    let (parts, ()) = http::Request::post("/").body(()).unwrap().into_parts();
    assert_eq!(request_model(&parts), "");
}
