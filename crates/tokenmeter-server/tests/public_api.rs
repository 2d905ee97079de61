//! The server as a Rust user starts it: only the public API, real HTTP on loopback.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokenmeter_server::{Config, Error, Server};

fn any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// A plain-HTTP client for loopback. Built with the workspace, reqwest needs a rustls crypto
/// provider installed even so: `ring`, once.
fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a plain HTTP client builds")
}

/// Streams one chat completion and returns its body.
async fn chat(server: &Server, max_tokens: u32) -> String {
    let body = serde_json::json!({
        "model": server.model(),
        "messages": [{"role": "user", "content": "Hello there"}],
        "max_tokens": max_tokens,
        "stream": true,
    });
    let response = client()
        .post(format!("{}/v1/chat/completions", server.url()))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    response.text().await.expect("a whole stream")
}

/// Polls until nothing accepts connections on `addr`, failing after 10 s.
async fn until_refused(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(addr).await.is_ok() {
        assert!(Instant::now() < deadline, "{addr} still accepts after 10 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn starts_on_any_port_streams_records_and_shuts_down() {
    let config = Config::default().model("org/test-model").keep_records(true);
    let server = tokenmeter_server::start(config, any_port())
        .await
        .expect("the server starts");
    let addr = server.local_addr();
    assert!(addr.ip().is_loopback());
    assert_ne!(addr.port(), 0, "the port the system picked");
    assert_eq!(server.url(), format!("http://{addr}"));
    assert_eq!(server.model(), "org/test-model");

    let text = chat(&server, 5).await;
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let id = text
        .split("\"id\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("chunks carry an id")
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    let record = loop {
        if let Some(record) = server.record_for(&id) {
            break record;
        }
        assert!(Instant::now() < deadline, "no record for {id} after 10 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(record.output_tokens, 5);
    assert_eq!(server.records().len(), 1);
    assert!(
        server.metrics_text().contains("gen_ai_"),
        "semconv names by default"
    );

    let stopped = server.shutdown().await.expect("a clean stop");
    assert_eq!(stopped.cancelled, 0);
    until_refused(addr).await;
}

#[tokio::test]
async fn records_are_kept_only_when_asked() {
    let server = Server::start(Config::default(), any_port())
        .await
        .expect("the server starts");
    chat(&server, 2).await;
    assert!(server.records().is_empty());
    assert!(server.record_sink().is_none());
    server.shutdown().await.expect("a clean stop");
}

#[tokio::test]
async fn dropping_the_server_stops_it() {
    let server = Server::start(Config::default(), any_port())
        .await
        .expect("the server starts");
    let addr = server.local_addr();
    chat(&server, 2).await;
    drop(server);
    until_refused(addr).await;
}

#[tokio::test]
async fn a_busy_port_is_a_bind_error_naming_the_address() {
    let taken = std::net::TcpListener::bind(any_port()).expect("bind a port");
    let addr = taken.local_addr().expect("an address");
    let error = Server::start(Config::default(), addr)
        .await
        .expect_err("the port is taken");
    assert!(
        matches!(&error, Error::Bind { addr: a, .. } if *a == addr),
        "{error:?}"
    );
    assert!(error.to_string().contains(&addr.to_string()), "{error}");
    assert!(
        error.to_string().contains("port 0"),
        "says how to fix it: {error}"
    );
}

#[tokio::test]
async fn a_bad_config_is_refused_before_it_serves() {
    let config = Config::default().decode_table(Vec::new());
    let error = Server::start(config.clone(), any_port())
        .await
        .expect_err("an empty decode table");
    assert!(matches!(error, Error::Sim(_)), "{error:?}");
    assert!(error.to_string().contains("decode table"), "{error}");
    assert!(config.validate().is_err());
}
