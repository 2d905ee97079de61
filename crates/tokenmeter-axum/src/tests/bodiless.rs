//! Responses whose body never goes on the wire (a HEAD request, a 1xx, 204 or 304): the server
//! drops the body unread, which must not read as a client that went away.

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use tokenmeter::{ErrorClass, Outcome};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::*;

const SSE: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n";

async fn stream() -> Response<Body> {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from(SSE))
        .unwrap()
}

/// A status with a body that does not know its end, as a streaming handler's would be.
async fn status(code: u16) -> Response<Body> {
    let chunks = futures_util::stream::iter([Ok::<_, Infallible>(Bytes::from_static(b"x"))]);
    Response::builder()
        .status(code)
        .body(Body::from_stream(chunks))
        .unwrap()
}

fn app(h: &Harness) -> Router {
    Router::new()
        .route("/stream", get(stream))
        .route("/204", get(|| status(204)))
        .route("/304", get(|| status(304)))
        .route("/429", get(|| status(429)))
        .layer(h.layer())
}

fn call(method: http::Method, path: &str) -> http::Request<Body> {
    http::Request::builder()
        .method(method)
        .uri(path)
        .body(Body::empty())
        .unwrap()
}

#[tokio::test]
async fn a_head_request_answered_and_its_body_dropped_unread_is_a_success() {
    let h = Harness::new();
    let response = app(&h)
        .oneshot(call(http::Method::HEAD, "/stream"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    drop(response); // what a server does with the body of a HEAD answer
    let record = h.record();
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!((record.items, record.output_tokens), (0, 0));
}

#[tokio::test]
async fn no_content_and_not_modified_are_successes_without_reading_a_body() {
    let h = Harness::new();
    for path in ["/204", "/304"] {
        let response = app(&h)
            .oneshot(call(http::Method::GET, path))
            .await
            .unwrap();
        drop(response);
    }
    let outcomes: Vec<_> = h.memory.records().iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [Outcome::Success, Outcome::Success]);
}

#[tokio::test]
async fn a_head_request_still_takes_the_class_of_an_error_status() {
    let h = Harness::new();
    let response = app(&h)
        .oneshot(call(http::Method::HEAD, "/429"))
        .await
        .unwrap();
    drop(response);
    assert_eq!(h.record().outcome, Outcome::Error(ErrorClass::RateLimited));
}

#[tokio::test]
async fn a_get_dropped_unread_is_still_cancelled() {
    let h = Harness::new();
    let response = app(&h)
        .oneshot(call(http::Method::GET, "/stream"))
        .await
        .unwrap();
    drop(response);
    assert_eq!(h.record().outcome, Outcome::Cancelled);
}

/// Over real HTTP/1.1 on loopback: hyper answers a HEAD without polling the body. A HEAD and a
/// GET pipelined on one connection are served in order, so once the connection closes both are
/// recorded.
#[tokio::test]
async fn over_loopback_a_head_then_a_get_are_both_successes() {
    let h = Harness::new();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(axum::serve(listener, app(&h)).into_future());
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket
        .write_all(
            b"HEAD /stream HTTP/1.1\r\nhost: t\r\n\r\n\
              GET /stream HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n",
        )
        .await
        .unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.unwrap();
    server.abort();
    assert_eq!(answer.matches("HTTP/1.1 200 OK").count(), 2, "{answer}");
    assert_eq!(answer.matches("data: [DONE]").count(), 1, "{answer}");
    let records = h.memory.records();
    let outcomes: Vec<_> = records.iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [Outcome::Success, Outcome::Success]);
    assert_eq!(
        records.iter().map(|r| r.output_tokens).collect::<Vec<_>>(),
        [0, 1]
    );
}
