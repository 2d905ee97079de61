//! Hostile clients at the protocol level: requests hyper cannot parse (a 1 MB header line,
//! too many headers, a URI too long, garbage for a request line, an HTTP/2 preface), pipelined
//! streams from a client that then reads nothing, a client that half-closes its write side,
//! and JSON bodies meant to break the parser (deep nesting, numbers out of range, `n` = 1000).
//! For each: the answer, the server keeps serving, and `/metrics` counts it once.

use std::io::Write as _;
use std::net::{Shutdown, SocketAddr};
use std::time::Duration;

use super::serve_support::http;
use super::serve_support::{Hosted, Target};
use super::{
    CHAT, chat, closed, consistent, json_body, post, read_until_closed, responses, served,
};
use tokenmeter_server::Config;

fn outcome(server: &Hosted, outcome: &str) -> f64 {
    server.metric(
        "tokenmeter_requests_total",
        &[("role", "server"), ("outcome", outcome)],
    )
}

fn client_errors(server: &Hosted) -> f64 {
    server.metric(
        "tokenmeter_requests_total",
        &[("role", "server"), ("error_type", "client_error")],
    )
}

fn in_flight(server: &Hosted) -> f64 {
    server.metric("tokenmeter_requests_waiting", &[("role", "server")])
        + server.metric("tokenmeter_requests_running", &[("role", "server")])
}

/// Sends `raw` (stopping at the first write error: the server may close before reading it
/// all), then reads until the server closes; returns the status line of its answer, if any.
fn answer_to(addr: SocketAddr, raw: &[u8]) -> Option<String> {
    let mut stream = http::connect(addr).expect("connect");
    for piece in raw.chunks(64 * 1024) {
        if stream.write_all(piece).is_err() {
            break;
        }
    }
    let (bytes, closed_after) = read_until_closed(&mut stream, Duration::from_secs(10));
    assert!(closed_after.is_some(), "the server closes the connection");
    let text = String::from_utf8_lossy(&bytes);
    text.lines().next().map(str::to_owned)
}

#[test]
fn requests_hyper_cannot_parse_are_answered_and_counted() {
    let server = Hosted::start(Config::default().keep_alive_timeout(Duration::from_secs(20)));
    let big_header = format!(
        "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(1024 * 1024)
    );
    let many_headers = format!(
        "GET /health HTTP/1.1\r\nHost: x\r\n{}\r\n",
        (0..200)
            .map(|i| format!("X-H{i}: v\r\n"))
            .collect::<String>()
    );
    let long_uri = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "u".repeat(70_000));
    let answered = [
        ("a 1 MB header line", big_header.into_bytes(), "431"),
        ("200 headers", many_headers.into_bytes(), "431"),
        ("a 70 KB URI", long_uri.into_bytes(), "414"),
        (
            "garbage for a request line",
            b"\x01\x02 NOT HTTP AT ALL\r\n\r\n".to_vec(),
            "400",
        ),
    ];
    let mut answers = Vec::new();
    for (what, raw, status) in &answered {
        let line = answer_to(server.addr, raw);
        eprintln!("{what}: {line:?}");
        // The answer may be lost to a reset when the server closes before reading all of
        // what was sent; the count below is what must hold.
        if let Some(line) = line {
            assert!(line.contains(status), "{what}: {line}");
            answers.push(line);
        }
        served(&server);
    }
    assert!(!answers.is_empty(), "at least one answer was read");
    let preface = answer_to(server.addr, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    assert_eq!(preface, None, "an HTTP/2 preface gets no HTTP/1 answer");
    served(&server);
    assert_eq!(closed(&server, "malformed_request"), answered.len() as f64);
    assert_eq!(closed(&server, "http2_preface"), 1.0);
    assert_eq!(
        responses(
            &server,
            &[
                ("http_route", "none"),
                ("http_request_method", "_OTHER"),
                ("http_response_status_class", "4xx"),
            ]
        ),
        answered.len() as f64
    );
    consistent(&server, 5.0);
}

#[test]
fn pipelined_streams_from_a_client_that_reads_nothing_end_once() {
    let server = Hosted::start(
        Config::default()
            .send_timeout(Duration::from_secs(1))
            .stall_limit(Duration::from_secs(30))
            .send_buffer(4096),
    );
    let body = chat(8_000, true);
    let one = format!(
        "POST {CHAT} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut raw = Vec::new();
    for _ in 0..3 {
        raw.extend_from_slice(one.as_bytes());
        raw.extend_from_slice(&body);
    }
    let mut stalled = http::small_buffer_connection(server.addr, 4096);
    stalled.write_all(&raw).expect("three pipelined requests");
    server.wait_for("send-timeout closes", 1.0, Duration::from_secs(20), |s| {
        closed(s, "send_timeout")
    });
    served(&server);
    // The first stream was cancelled; hyper never started the two behind it.
    assert_eq!(outcome(&server, "cancelled"), 1.0);
    consistent(&server, 2.0);
}

/// A client that half-closes its write side once its request is sent is taken as gone, as
/// hyper does by default (`http1::Builder::half_close(false)`): its connection is closed and,
/// if its request reached the engine, it is `cancelled`; either way it never counts as a
/// success nor stays in flight, and the server serves the next client.
#[test]
fn a_client_that_half_closes_after_its_request_is_taken_as_gone() {
    let server = Hosted::start(Config::default().keep_alive_timeout(Duration::from_secs(20)));
    let body = chat(400, true);
    let request = format!(
        "POST {CHAT} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut client = http::connect(server.addr).expect("connect");
    client.write_all(request.as_bytes()).expect("head");
    client.write_all(&body).expect("body");
    client.shutdown(Shutdown::Write).expect("half-close");
    let (bytes, closed_after) = read_until_closed(&mut client, Duration::from_secs(10));
    assert!(closed_after.is_some(), "the server closes the connection");
    let text = String::from_utf8_lossy(&bytes);
    assert!(!text.contains("data: [DONE]"), "{text}");
    eprintln!("half-closed client: {} bytes", bytes.len());
    served(&server);
    server.wait_for(
        "requests in flight",
        0.0,
        Duration::from_secs(10),
        in_flight,
    );
    assert_eq!(outcome(&server, "success"), 1.0, "only the served request");
    let cancelled = outcome(&server, "cancelled");
    assert!(cancelled <= 1.0, "cancelled {cancelled}");
    consistent(&server, 1.0 + cancelled);
}

#[test]
fn json_meant_to_break_the_parser_is_a_counted_400() {
    let server = Hosted::start(Config::default().keep_alive_timeout(Duration::from_secs(20)));
    let deep = format!(r#"{{"messages":{}"#, "[".repeat(100_000));
    let bodies: [(&str, Vec<u8>); 8] = [
        ("nesting 100,000 deep", deep.into_bytes()),
        (
            "max_tokens past u64",
            br#"{"messages":[{"role":"user","content":"x"}],"max_tokens":99999999999999999999999}"#.to_vec(),
        ),
        (
            "max_tokens 1e30",
            br#"{"messages":[{"role":"user","content":"x"}],"max_tokens":1e30}"#.to_vec(),
        ),
        (
            "max_tokens negative",
            br#"{"messages":[{"role":"user","content":"x"}],"max_tokens":-1}"#.to_vec(),
        ),
        (
            "max_tokens a string",
            br#"{"messages":[{"role":"user","content":"x"}],"max_tokens":"2"}"#.to_vec(),
        ),
        (
            "temperature 1e400",
            br#"{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"temperature":1e400}"#.to_vec(),
        ),
        (
            "an unknown field of 1e400",
            br#"{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"unknown":1e400}"#.to_vec(),
        ),
        (
            "stream with n = 1000",
            br#"{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"stream":true,"n":1000}"#.to_vec(),
        ),
    ];
    for (what, body) in &bodies {
        let response = post(server.addr, CHAT, body);
        assert_eq!(response.status, 400, "{what}: {}", response.text());
        let error = &json_body(&response)["error"];
        assert!(error["message"].is_string(), "{what}: {}", response.text());
        served(&server);
    }
    assert_eq!(client_errors(&server), bodies.len() as f64);
    consistent(&server, 2.0 * bodies.len() as f64);
}
