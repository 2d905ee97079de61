//! The server over real HTTP on loopback: each test spawns a server on an ephemeral
//! port and talks to it with reqwest.

mod admission;
mod answer_budget;
mod api;
mod batch;
mod delivery;
mod errors;
mod metrics;
mod orca;
mod request_metrics;
mod responses;
mod shutdown;
mod slo_headers;
mod streaming;

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::net::TcpListener;

use super::{Config, Server};

/// A server with `config` (keeping its records) on an ephemeral loopback port.
async fn server(config: Config) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    Server::from_listener(config.keep_records(true), listener).expect("the server starts")
}

/// A plain-HTTP client for loopback: no proxy from the environment, no TLS. Built with the
/// workspace, reqwest needs a rustls crypto provider installed even so: `ring`, once.
pub(crate) fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a plain HTTP client builds")
}

/// POSTs `body` as JSON to `path`.
async fn post(handle: &Server, path: &str, body: &Value) -> reqwest::Response {
    crate::tests::client()
        .post(format!("{}{path}", handle.url()))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("the server answers")
}

/// GETs `path` and returns the status and the body.
async fn get(handle: &Server, path: &str) -> (reqwest::StatusCode, String) {
    let response = crate::tests::client()
        .get(format!("{}{path}", handle.url()))
        .send()
        .await
        .expect("the server answers");
    let status = response.status();
    (status, response.text().await.expect("a body"))
}

/// The `data:` payloads of an SSE body, in order.
fn events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|frame| !frame.is_empty())
        .map(|frame| {
            frame
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data frame: {frame:?}"))
                .to_owned()
        })
        .collect()
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("invalid JSON {text:?}: {e}"))
}

/// Polls `check` every 10 ms until it returns `Some`, failing with `what` after 10 s.
async fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after 10 s waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
