//! The answer to a connection that finds every place at `--max-connections` taken by a
//! connection that is not idle: its request head is read (for at most a second), a
//! `GET /metrics` or `GET /health` is answered as usual (so scrapes and health checks work
//! however busy the server is), and anything else gets a 503 in OpenAI's error shape with
//! `retry-after: 1` and `connection: close`. Either way the connection then closes. At most
//! [`OVERFLOW`] such connections are answered at once; past them, [`refuse_now`] writes the
//! 503 at once, without reading the request, and closes: no connection is closed without a
//! status line, and clients that send nothing cannot hold the accept loop.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tower_service::Service as _;

use super::api_error::error_body;
use super::http_counts::{Closed, HttpCounts, route};

/// Connections past the limit answered at once (each for at most [`HEAD_WAIT`] plus
/// [`ANSWER_WAIT`]); more get [`refuse_now`].
pub(crate) const OVERFLOW: usize = 64;
/// The longest a connection past the limit has to send its request head (shorter when
/// `--header-timeout` is); a head not whole by then gets the 503.
pub(crate) const HEAD_WAIT: Duration = Duration::from_secs(1);
/// The longest the answer takes to write and the client to close after it.
const ANSWER_WAIT: Duration = Duration::from_secs(1);
/// The largest request head read; a longer one gets the 503.
const HEAD_LIMIT: usize = 8 * 1024;
/// The largest body of an answered `/metrics` or `/health` (else the 503).
const ANSWER_LIMIT: usize = 64 * 1024 * 1024;
/// The paths answered past the limit.
const ANSWERED: [&str; 2] = ["/metrics", "/health"];

/// Answers a connection past the limit (see the module) and closes it; `head_wait` is the
/// time its request head gets.
pub(crate) async fn answer(
    mut stream: TcpStream,
    router: Router,
    counts: Arc<HttpCounts>,
    head_wait: Duration,
) -> Option<Closed> {
    let _ = stream.set_nodelay(true);
    let head = tokio::time::timeout(head_wait, read_head(&mut stream))
        .await
        .unwrap_or_default();
    let answered = match exempt(&head) {
        Some(path) => local(router, path).await,
        None => None,
    };
    let response = match answered {
        Some((path, status, bytes)) => {
            counts.answered(route(path), &Method::GET, status);
            bytes
        }
        None => {
            counts.refused_full();
            refusal()
        }
    };
    // Write, close the write side, then read (and drop) what the client sends until it closes:
    // closing with its request unread would reset the connection and could lose the answer.
    let send = async {
        stream.write_all(&response).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 1024];
        while stream.read(&mut sink).await? > 0 {}
        io::Result::Ok(())
    };
    let _ = tokio::time::timeout(ANSWER_WAIT, send).await;
    Some(Closed::Full)
}

/// Refuses a connection past the limit when [`OVERFLOW`] are already being answered: the 503
/// is written at once (a fresh socket's send buffer takes it whole) and the connection closed
/// without reading its request. A request that had already arrived makes the close a reset,
/// which loses nothing: the 503 is in the client's receive buffer by then.
pub(crate) fn refuse_now(stream: TcpStream, counts: &HttpCounts) {
    counts.refused_full();
    // Written by the socket itself: tokio's `try_write` declines until its reactor has seen
    // the new socket writable, which a connection accepted a moment ago may not be yet.
    let Ok(mut stream) = stream.into_std() else {
        return;
    };
    let response = refusal();
    let mut written = 0;
    while written < response.len() {
        match io::Write::write(&mut stream, &response[written..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => written += n,
        }
    }
}

/// Reads until the end of the request head (an empty line), the client stops sending, or
/// [`HEAD_LIMIT`] bytes; returns what arrived.
async fn read_head(stream: &mut TcpStream) -> Vec<u8> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while head.len() < HEAD_LIMIT && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    head
}

/// The path of `head` when it is a whole `GET` of one of [`ANSWERED`].
fn exempt(head: &[u8]) -> Option<&'static str> {
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    let line = head[..end].split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if method != "GET" || !version.starts_with("HTTP/1.") || parts.next().is_some() {
        return None;
    }
    let path = target.split('?').next()?;
    ANSWERED.into_iter().find(|p| *p == path)
}

/// `GET path` answered by the router, as bytes to write with `connection: close`.
async fn local(
    mut router: Router,
    path: &'static str,
) -> Option<(&'static str, StatusCode, Vec<u8>)> {
    let request = Request::get(path).body(Body::empty()).ok()?;
    let response = match router.call(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("text/plain")
        .to_owned();
    let body = axum::body::to_bytes(response.into_body(), ANSWER_LIMIT)
        .await
        .ok()?;
    let mut bytes = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(&body);
    Some((path, status, bytes))
}

/// The 503 of a connection refused at the limit.
fn refusal() -> Vec<u8> {
    let body = error_body(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        "the server is at its connection limit and no connection is idle: retry shortly, or start serve with a larger --max-connections",
    )
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_gets_of_metrics_and_health_are_answered() {
        for (head, path) in [
            (
                &b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"[..],
                Some("/metrics"),
            ),
            (b"GET /health?probe=1 HTTP/1.0\r\n\r\n", Some("/health")),
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\n", None),
            (b"POST /metrics HTTP/1.1\r\n\r\n", None),
            (b"GET /v1/models HTTP/1.1\r\n\r\n", None),
            (b"GET /metrics/x HTTP/1.1\r\n\r\n", None),
            (b"GET /metrics HTTP/2\r\n\r\n", None),
            (b"", None),
        ] {
            assert_eq!(exempt(head), path, "{}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn the_refusal_is_a_whole_503_that_closes() {
        let text = String::from_utf8(refusal()).expect("text");
        let (head, body) = text.split_once("\r\n\r\n").expect("a head");
        assert!(head.starts_with("HTTP/1.1 503 "), "{head}");
        assert!(head.contains("retry-after: 1") && head.contains("connection: close"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let json: serde_json::Value = serde_json::from_str(body).expect("JSON");
        assert_eq!(json["error"]["code"], 503);
        assert_eq!(json["error"]["type"], "ServiceUnavailableError");
    }
}
