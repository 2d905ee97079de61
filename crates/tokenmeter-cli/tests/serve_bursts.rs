//! Bursts and held bodies against the simulated server on loopback: a burst of clients
//! past `--max-connections` (each gets an HTTP status line, every refusal is counted, none is
//! evicted before its first answer), `/metrics` and `/health` answered while every connection
//! is busy, and many connections holding a large body minus its last byte (the server's
//! resident memory stays under the `--max-body-memory` budget plus a stated margin, and the
//! bodies past the budget get a counted 503). Every client is bounded in count and time. The
//! server runs in process, except for the held bodies, which measure the resident memory of a
//! real `tokenmeter serve` process.

mod serve_support;

#[path = "serve_bursts/held_bodies.rs"]
mod held_bodies;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serve_support::http::{self, Response};
use serve_support::{Hosted, Target, steady_config};
use tokenmeter_server::Config;

const CHAT: &str = "/v1/chat/completions";

fn chat(max_tokens: u32, stream: bool) -> Vec<u8> {
    json!({
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": max_tokens,
        "stream": stream,
    })
    .to_string()
    .into_bytes()
}

fn closed(server: &impl Target, reason: &str) -> f64 {
    server.metric(
        "tokenmeter_http_connections_closed_total",
        &[("reason", reason)],
    )
}

fn responses(server: &impl Target, labels: &[(&str, &str)]) -> f64 {
    server.metric("tokenmeter_http_responses_total", labels)
}

/// Sends `request` on `stream` and reads until a whole response arrives, the server closes the
/// connection, or `within` passes; the response, or what went wrong.
fn exchange(stream: &mut TcpStream, request: &[u8], within: Duration) -> Result<Response, String> {
    stream
        .write_all(request)
        .map_err(|e| format!("cannot send: {e}"))?;
    read_response(stream, within)
}

/// Reads until a whole response arrives, the connection ends, or `within` passes.
fn read_response(stream: &mut TcpStream, within: Duration) -> Result<Response, String> {
    let deadline = Instant::now() + within;
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some((response, _)) = http::parse_response(&raw)? {
            return Ok(response);
        }
        if Instant::now() >= deadline {
            return Err(format!("no whole response within {within:?}"));
        }
        match stream.read(&mut buf) {
            Ok(0) => return Err(format!("closed after {} bytes, no status line", raw.len())),
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(format!("{e} after {} bytes, no status line", raw.len())),
        }
    }
}

fn post_head(path: &str, length: usize, close: bool) -> String {
    let close = if close { "Connection: close\r\n" } else { "" };
    format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{close}Content-Length: {length}\r\n\r\n"
    )
}

fn post_request(path: &str, body: &[u8]) -> Vec<u8> {
    let mut request = post_head(path, body.len(), true).into_bytes();
    request.extend_from_slice(body);
    request
}

/// A 503 of the connection limit or the body budget: OpenAI's error shape, to retry, closed.
fn assert_overloaded(response: &Response) {
    assert_eq!(response.status, 503, "{}", response.head);
    let head = response.head.to_ascii_lowercase();
    assert!(head.contains("retry-after: 1"), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    let body: Value = serde_json::from_slice(&response.body).expect("a JSON body");
    assert_eq!(body["error"]["code"], 503, "{body}");
}

/// 200 clients connect at once to a server with a limit of 64 connections (the issue's 2,000
/// against 1,024, scaled to a harsher ratio: 3.1 clients a place instead of 2), then send a
/// request taking some 200 ms: every client gets a status line, 200 or a 503 to retry (before,
/// each connection accepted before its request arrived was evicted by the next arrival, and
/// closed without a status line), and each 503 is counted.
#[test]
fn a_burst_past_the_connection_limit_gets_a_status_line_each_and_is_counted() {
    const LIMIT: usize = 64;
    const CLIENTS: usize = 200;
    let server = Hosted::start(
        steady_config(Duration::from_millis(20))
            .max_connections(LIMIT)
            .keep_alive_timeout(Duration::from_secs(60)),
    );
    let addr = server.addr;
    let start = Arc::new(Barrier::new(CLIENTS));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                // Every client connects, then all send at once: the server has accepted many
                // connections that have not sent their request yet.
                let connected = http::connect(addr);
                start.wait();
                let request = post_request(CHAT, &chat(10, false));
                exchange(&mut connected?, &request, Duration::from_secs(30))
            })
        })
        .collect();
    let outcomes: Vec<Result<Response, String>> = clients
        .into_iter()
        .map(|c| c.join().expect("a client thread"))
        .collect();
    let failed: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} of {CLIENTS} clients got no status line; the first: {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    let answers: Vec<&Response> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    let served = answers.iter().filter(|r| r.status == 200).count();
    let refused: Vec<&&Response> = answers.iter().filter(|r| r.status != 200).collect();
    for response in &refused {
        assert_overloaded(response);
    }
    eprintln!(
        "burst: {CLIENTS} clients, limit {LIMIT}: {served} served, {} refused with 503",
        refused.len()
    );
    assert!(served >= LIMIT, "{served} served");
    assert_eq!(closed(&server, "refused_full"), refused.len() as f64);
    let counted = responses(
        &server,
        &[
            ("http_route", "none"),
            ("http_response_status_class", "5xx"),
        ],
    );
    assert_eq!(counted, refused.len() as f64);
    let ok = responses(
        &server,
        &[("http_route", CHAT), ("http_response_status_class", "2xx")],
    );
    assert_eq!(ok, served as f64);
}

/// Opens a streaming chat of 5,000 tokens and reads its first event.
fn open_stream(addr: SocketAddr) -> TcpStream {
    let mut stream = http::connect(addr).expect("connect");
    let body = chat(5_000, true);
    let head = post_head(CHAT, body.len(), false);
    stream.write_all(head.as_bytes()).expect("send");
    stream.write_all(&body).expect("send");
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while !raw.windows(6).any(|w| w == b"data: ") {
        let n = stream.read(&mut buf).expect("the stream's first event");
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&raw));
        raw.extend_from_slice(&buf[..n]);
    }
    stream
}

#[test]
fn metrics_and_health_are_answered_while_every_connection_is_busy() {
    let server = Hosted::start(
        steady_config(Duration::from_millis(50))
            .max_connections(2)
            .keep_alive_timeout(Duration::from_secs(60)),
    );
    let health_labels = [
        ("http_route", "/health"),
        ("http_response_status_class", "2xx"),
    ];
    let healthy = responses(&server, &health_labels);
    let streams: Vec<TcpStream> = (0..2).map(|_| open_stream(server.addr)).collect();
    let refused = http::request(server.addr, "POST", CHAT, &[], &chat(2, false)).expect("answer");
    assert_overloaded(&refused);
    let health = http::request(server.addr, "GET", "/health", &[], b"").expect("an answer");
    assert_eq!(health.status, 200, "{}", health.text());
    let text = http::scrape(server.addr).expect("GET /metrics answered under a full limit");
    assert!(
        text.contains(r#"tokenmeter_http_connections_closed_total{reason="refused_full"} 1"#),
        "{text}"
    );
    assert_eq!(server.metric("tokenmeter_requests_running", &[]), 2.0);
    // The health check was counted as an answer of its route.
    assert_eq!(responses(&server, &health_labels), healthy + 1.0);
    drop(streams);
}

#[test]
fn a_just_accepted_connection_is_not_evicted_by_the_next_arrival() {
    let server = Hosted::start(
        Config::default()
            .max_connections(1)
            .keep_alive_timeout(Duration::from_secs(60)),
    );
    // Accepted (the server accepts in order, before the next), its request not yet sent.
    let mut first = http::connect(server.addr).expect("connect");
    let mut next = http::connect(server.addr).expect("connect");
    let refused = exchange(
        &mut next,
        &post_request(CHAT, &chat(2, false)),
        Duration::from_secs(10),
    )
    .expect("the next arrival gets a status line");
    assert_overloaded(&refused);
    let answered = exchange(
        &mut first,
        &post_request(CHAT, &chat(2, false)),
        Duration::from_secs(10),
    )
    .expect("the first connection is still open and answered");
    assert_eq!(answered.status, 200, "{}", answered.text());
    assert_eq!(closed(&server, "refused_full"), 1.0);
}

/// 80 connections past a full limit that send nothing (more than the 64 answered at once):
/// each still gets its 503, and a client arriving after them is answered at once, not after
/// their second of grace to send a request.
#[test]
fn clients_past_the_limit_that_send_nothing_do_not_hold_up_the_others() {
    const SILENT: usize = 80;
    let server = Hosted::start(
        steady_config(Duration::from_millis(50))
            .max_connections(2)
            .keep_alive_timeout(Duration::from_secs(60)),
    );
    let streams: Vec<TcpStream> = (0..2).map(|_| open_stream(server.addr)).collect();
    let mut silent: Vec<TcpStream> = (0..SILENT)
        .map(|_| http::connect(server.addr).expect("connect"))
        .collect();
    let started = Instant::now();
    let mut next = http::connect(server.addr).expect("connect");
    let refused = exchange(
        &mut next,
        &post_request(CHAT, &chat(2, false)),
        Duration::from_secs(10),
    )
    .expect("a status line");
    let took = started.elapsed();
    assert_overloaded(&refused);
    assert!(took < Duration::from_millis(900), "answered after {took:?}");
    for stream in &mut silent {
        let response = read_response(stream, Duration::from_secs(10)).expect("a status line");
        assert_overloaded(&response);
    }
    drop((silent, streams));
    // Once the overflow has closed them, a scrape is answered again and counts every refusal
    // (scrapes refused while it had not are refusals too).
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut failed = 0;
    let text = loop {
        match http::scrape(server.addr) {
            Ok(text) => break text,
            Err(e) => assert!(Instant::now() < deadline, "no scrape within 10 s: {e}"),
        }
        failed += 1;
        std::thread::sleep(Duration::from_millis(20));
    };
    let line = format!(
        r#"tokenmeter_http_connections_closed_total{{reason="refused_full"}} {}"#,
        SILENT + 1 + failed
    );
    assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
}
