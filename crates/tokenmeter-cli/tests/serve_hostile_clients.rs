//! Hostile clients against the simulated server (in process) on loopback: slow headers and bodies,
//! idle connections past the connection limit, busy connections at it, oversized bodies, unknown
//! paths and methods, requests past the context length, a full queue, and a shutdown with half-sent
//! requests and a stream in flight. For each: the answer (or the close) the limit promises, the
//! server still serves others, and `/metrics` stays consistent (every histogram's `_count` equals
//! its `+Inf` bucket, requests ended = requests sent once nothing is in flight) and counts the
//! refusal. Short limits in the server's `Config` keep every test fast; every loop is bounded. The
//! shutdown test alone runs the real `tokenmeter serve` process: it checks what the command prints
//! and its exit status at SIGINT.

mod serve_support;

#[path = "serve_hostile_clients/protocol.rs"]
mod protocol;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serve_support::http::{self, Response};
use serve_support::{
    Hosted, Serve, Target, check_scrape, requests_ended, steady_config, steady_engine,
};
use tokenmeter_server::{Config, MetricsProfile};
use tokenmeter_tests::TempDir;

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

fn post(addr: SocketAddr, path: &str, body: &[u8]) -> Response {
    http::request(
        addr,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body,
    )
    .unwrap_or_else(|e| panic!("POST {path}: {e}"))
}

fn json_body(response: &Response) -> Value {
    serde_json::from_slice(&response.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", response.head, response.text()))
}

/// A normal request succeeds: the server still serves other clients.
fn served(server: &impl Target) {
    let response = post(server.addr(), CHAT, &chat(2, false));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(json_body(&response)["usage"]["completion_tokens"], 2);
}

/// Once nothing is in flight: `ended` requests ended, none running or waiting, and the scrape
/// passes the exposition checks.
fn consistent(server: &impl Target, ended: f64) {
    server.wait_for("requests ended", ended, Duration::from_secs(10), |s| {
        let (exposition, _) = check_scrape(&s.scrape()).expect("a consistent scrape");
        requests_ended(&exposition)
    });
    let (exposition, checked) = check_scrape(&server.scrape()).expect("a consistent scrape");
    assert!(checked.histogram_series > 0);
    assert_eq!(exposition.sum("tokenmeter_requests_running", &[]), 0.0);
    assert_eq!(exposition.sum("tokenmeter_requests_waiting", &[]), 0.0);
}

fn responses(server: &impl Target, labels: &[(&str, &str)]) -> f64 {
    server.metric("tokenmeter_http_responses_total", labels)
}

fn closed(server: &impl Target, reason: &str) -> f64 {
    server.metric(
        "tokenmeter_http_connections_closed_total",
        &[("reason", reason)],
    )
}

/// Reads until the server closes `stream` (or `within` passes); returns the bytes and when.
fn read_until_closed(stream: &mut TcpStream, within: Duration) -> (Vec<u8>, Option<Duration>) {
    let started = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("a read timeout");
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while started.elapsed() < within {
        match stream.read(&mut buf) {
            Ok(0) => return (raw, Some(started.elapsed())),
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return (raw, Some(started.elapsed())),
        }
    }
    (raw, None)
}

#[test]
fn slow_headers_are_closed_after_the_header_timeout() {
    let server = Hosted::start(
        Config::default()
            .header_timeout(Duration::from_millis(300))
            .keep_alive_timeout(Duration::from_secs(20)),
    );
    let mut slow = http::connect(server.addr).expect("connect");
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x")
        .expect("half a request line");
    served(&server);
    let (raw, closed_after) = read_until_closed(&mut slow, Duration::from_secs(5));
    let closed_after = closed_after.expect("the slow connection is closed within 5 s");
    assert!(raw.is_empty(), "{}", String::from_utf8_lossy(&raw));
    assert!(closed_after < Duration::from_secs(3), "{closed_after:?}");
    assert_eq!(closed(&server, "header_timeout"), 1.0);
    served(&server);
    consistent(&server, 2.0);
}

#[test]
fn idle_connections_are_closed_after_the_keep_alive_timeout() {
    let server = Hosted::start(Config::default().keep_alive_timeout(Duration::from_millis(300)));
    let mut idle = http::connect(server.addr).expect("connect");
    let (_, closed_after) = read_until_closed(&mut idle, Duration::from_secs(5));
    assert!(closed_after.expect("closed within 5 s") < Duration::from_secs(3));
    assert_eq!(closed(&server, "keep_alive_timeout"), 1.0);
    served(&server);
    consistent(&server, 1.0);
}

#[test]
fn slow_bodies_are_answered_408_and_counted() {
    let server = Hosted::start(Config::default().body_timeout(Duration::from_millis(300)));
    let mut slow = http::connect(server.addr).expect("connect");
    slow.write_all(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"messages\":",
    )
    .expect("headers and a tenth of the body");
    served(&server);
    let (raw, closed_after) = read_until_closed(&mut slow, Duration::from_secs(5));
    assert!(
        closed_after.is_some(),
        "the slow body's connection is closed"
    );
    let (response, _) = http::parse_response(&raw)
        .expect("an HTTP response")
        .expect("a whole response");
    assert_eq!(response.status, 408, "{}", response.text());
    assert_eq!(json_body(&response)["error"]["code"], 408);
    let labels = [
        ("http_route", CHAT),
        ("http_request_method", "POST"),
        ("http_response_status_class", "4xx"),
    ];
    assert_eq!(responses(&server, &labels), 1.0);
    served(&server);
    // The refusal is a request too: two successes and one client error.
    consistent(&server, 3.0);
    let client_errors = server.metric(
        "tokenmeter_requests_total",
        &[("role", "server"), ("error_type", "client_error")],
    );
    assert_eq!(client_errors, 1.0);
}

#[test]
fn idle_connections_past_the_limit_do_not_lock_out_new_clients() {
    const LIMIT: usize = 8;
    const IDLE: usize = 3 * LIMIT;
    let server = Hosted::start(
        Config::default()
            .max_connections(LIMIT)
            .keep_alive_timeout(Duration::from_secs(60)),
    );
    // More idle connections than the limit, each accepted before the next opens.
    let mut idle: Vec<TcpStream> = Vec::new();
    for _ in 0..IDLE {
        let mut stream = http::connect(server.addr).expect("connect");
        // A request on each, so that each has been accepted and is idle on keep-alive.
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("send");
        let mut buf = [0u8; 512];
        let n = stream.read(&mut buf).expect("the health answer");
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        idle.push(stream);
    }
    for _ in 0..3 {
        served(&server);
    }
    // The oldest were closed to make room; the newest are still open.
    let (_, oldest) = read_until_closed(&mut idle[0], Duration::from_secs(5));
    assert!(oldest.is_some(), "the oldest idle connection was closed");
    let evicted = closed(&server, "evicted");
    assert!(evicted >= (IDLE - LIMIT) as f64, "{evicted} evicted");
    assert_eq!(closed(&server, "refused_full"), 0.0);
    consistent(&server, 3.0);
}

#[test]
fn busy_connections_at_the_limit_get_a_quick_503() {
    let server = Hosted::start(
        steady_config(Duration::from_millis(50))
            .max_connections(3)
            .keep_alive_timeout(Duration::from_secs(60)),
    );
    // Three long streams hold every connection.
    let streams: Vec<TcpStream> = (0..3).map(|_| open_stream(server.addr)).collect();
    let started = Instant::now();
    let refused = post(server.addr, CHAT, &chat(2, false));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(json_body(&refused)["error"]["code"], 503);
    drop(streams);
    // Once the streams are gone (cancelled), the server serves again and counts the refusal.
    wait_until_served(server.addr);
    server.wait_for("requests running", 0.0, Duration::from_secs(10), |s| {
        s.metric("tokenmeter_requests_running", &[])
    });
    // This one, and any `/health` of the wait that came before the streams' slots were free.
    let full = closed(&server, "refused_full");
    assert!(full >= 1.0, "{full}");
    let refusals = responses(
        &server,
        &[
            ("http_route", "none"),
            ("http_response_status_class", "5xx"),
        ],
    );
    assert_eq!(refusals, full);
    served(&server);
    consistent(&server, 4.0);
}

/// Waits (up to 5 s) until `GET /health` answers 200.
fn wait_until_served(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !http::request(addr, "GET", "/health", &[], b"").is_ok_and(|r| r.status == 200) {
        assert!(Instant::now() < deadline, "not served again within 5 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Opens a streaming chat of 10,000 tokens and reads its first event.
fn open_stream(addr: SocketAddr) -> TcpStream {
    let mut stream = http::connect(addr).expect("connect");
    let body = chat(5_000, true);
    let head = format!(
        "POST {CHAT} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send");
    stream.write_all(&body).expect("send");
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while !raw.windows(6).any(|w| w == b"data: ") {
        let n = stream.read(&mut buf).expect("the stream's first event");
        assert!(
            n > 0,
            "the stream closed: {}",
            String::from_utf8_lossy(&raw)
        );
        raw.extend_from_slice(&buf[..n]);
    }
    stream
}

#[test]
fn oversized_bodies_get_413_and_are_counted() {
    let server = Hosted::start(Config::default().max_body_size(1024));
    let big = json!({"messages": [{"role": "user", "content": "x".repeat(4_096)}]}).to_string();
    // Declared too large: refused from its content-length.
    let response = post(server.addr, CHAT, big.as_bytes());
    assert_eq!(response.status, 413, "{}", response.text());
    let error = &json_body(&response)["error"];
    assert_eq!(error["code"], 413);
    assert!(
        error["message"]
            .as_str()
            .expect("a message")
            .contains("--max-body-size")
    );
    // Chunked, with no length: refused once the limit is passed.
    let mut stream = http::connect(server.addr).expect("connect");
    let head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let chunk = format!("{:x}\r\n{big}\r\n0\r\n\r\n", big.len());
    stream.write_all(head.as_bytes()).expect("send");
    let _ = stream.write_all(chunk.as_bytes());
    let (raw, _) = read_until_closed(&mut stream, Duration::from_secs(5));
    let (chunked, _) = http::parse_response(&raw).expect("HTTP").expect("whole");
    assert_eq!(chunked.status, 413, "{}", chunked.text());
    let too_large = responses(&server, &[("http_response_status_class", "4xx")]);
    assert_eq!(too_large, 2.0);
    served(&server);
    consistent(&server, 3.0);
}

#[test]
fn unknown_paths_and_methods_get_openai_errors_and_are_counted_in_both_profiles() {
    for (profile, names) in [
        ("semconv", MetricsProfile::Semconv),
        ("vllm", MetricsProfile::Vllm),
    ] {
        let server = Hosted::start(Config::default().profile(names));
        let missing = http::request(server.addr, "GET", "/v1/nope?key=sk-secret", &[], b"")
            .expect("an answer");
        assert_eq!(missing.status, 404);
        assert_eq!(json_body(&missing)["error"]["code"], 404);
        assert!(!missing.text().contains("sk-secret"));
        let wrong = http::request(server.addr, "DELETE", "/v1/models", &[], b"").expect("answer");
        assert_eq!(wrong.status, 405);
        assert_eq!(json_body(&wrong)["error"]["code"], 405);
        let odd = http::request(server.addr, "BREW", "/health", &[], b"").expect("answer");
        assert_eq!(odd.status, 405);
        served(&server);
        let text = server.scrape();
        if profile == "semconv" {
            promtool_accepts(&text);
        } else {
            // promtool's lint refuses vLLM's own `vllm:` names (colons are for recording
            // rules); the family added here must pass on its own.
            let family: String = text
                .lines()
                .filter(|l| l.contains("http_requests_total"))
                .map(|l| format!("{l}\n"))
                .collect();
            promtool_accepts(&family);
        }
        assert!(!text.contains("nope") && !text.contains("BREW"), "{text}");
        let count = |name: &str, labels: &[(&str, &str)]| {
            check_scrape(&text).expect("consistent").0.sum(name, labels)
        };
        if profile == "semconv" {
            let name = "tokenmeter_http_responses_total";
            let (r, m, s) = (
                "http_route",
                "http_request_method",
                "http_response_status_class",
            );
            assert_eq!(count(name, &[(r, "none"), (m, "GET"), (s, "4xx")]), 1.0);
            assert_eq!(
                count(name, &[(r, "/v1/models"), (m, "DELETE"), (s, "4xx")]),
                1.0
            );
            assert_eq!(
                count(name, &[(r, "/health"), (m, "_OTHER"), (s, "4xx")]),
                1.0
            );
            assert_eq!(count(name, &[(r, CHAT), (m, "POST"), (s, "2xx")]), 1.0);
        } else {
            let name = "http_requests_total";
            let (r, m, s) = ("handler", "method", "status");
            assert_eq!(count(name, &[(r, "none"), (m, "GET"), (s, "4xx")]), 1.0);
            assert_eq!(
                count(name, &[(r, "/v1/models"), (m, "DELETE"), (s, "4xx")]),
                1.0
            );
            assert_eq!(count(name, &[(r, CHAT), (m, "POST"), (s, "2xx")]), 1.0);
        }
        if profile == "semconv" {
            consistent(&server, 1.0);
        }
    }
}

fn promtool_accepts(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run promtool ({e}): install it with `apt-get install prometheus`")
        });
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write to promtool");
    let output = child.wait_with_output().expect("promtool ran");
    assert!(
        output.status.success(),
        "promtool check metrics failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn past_the_context_length_is_vllms_400_and_a_client_error() {
    let server = Hosted::start(Config::default().max_model_len(8192));
    let ids: Vec<u32> = (0..9_000).collect();
    let body = json!({"prompt": ids, "max_tokens": 1_000}).to_string();
    let response = post(server.addr, "/v1/completions", body.as_bytes());
    assert_eq!(response.status, 400, "{}", response.text());
    let error = &json_body(&response)["error"];
    assert_eq!(
        error["message"],
        "This model's maximum context length is 8192 tokens. However, you requested 10000 tokens (9000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion."
    );
    assert_eq!(error["code"], 400);
    served(&server);
    consistent(&server, 2.0);
    let client_errors = server.metric(
        "tokenmeter_requests_total",
        &[("role", "server"), ("error_type", "client_error")],
    );
    assert_eq!(client_errors, 1.0);
    assert_eq!(
        responses(
            &server,
            &[
                ("http_route", "/v1/completions"),
                ("http_response_status_class", "4xx")
            ]
        ),
        1.0
    );
}

#[test]
fn a_full_queue_answers_429() {
    let server = Hosted::start(
        Config::default()
            .max_batch(1)
            .queue_limit(1)
            .decode_table(vec![(1, Duration::from_millis(50))]),
    );
    let running = open_stream(server.addr);
    // The second waits in the queue (its first event never comes while the first runs).
    let mut waiting = http::connect(server.addr).expect("connect");
    let body = chat(2, true);
    let head = format!(
        "POST {CHAT} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    waiting
        .write_all(head.as_bytes())
        .and_then(|()| waiting.write_all(&body))
        .expect("send");
    server.wait_for("requests waiting", 1.0, Duration::from_secs(10), |s| {
        s.metric("tokenmeter_requests_waiting", &[])
    });
    let refused = post(server.addr, CHAT, &chat(2, false));
    assert_eq!(refused.status, 429, "{}", refused.text());
    assert!(refused.head.to_ascii_lowercase().contains("retry-after: 1"));
    assert_eq!(json_body(&refused)["error"]["code"], 429);
    drop(running);
    // The waiting one runs once the first is cancelled.
    let (raw, _) = read_until_closed_or_done(&mut waiting);
    assert!(raw.contains("[DONE]"), "{raw}");
    served(&server);
    consistent(&server, 4.0);
    let limited = server.metric(
        "tokenmeter_requests_total",
        &[("role", "server"), ("error_type", "rate_limited")],
    );
    assert_eq!(limited, 1.0);
}

fn read_until_closed_or_done(stream: &mut TcpStream) -> (String, Instant) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("a read timeout");
    while Instant::now() < deadline && !raw.windows(6).any(|w| w == b"[DONE]") {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    (String::from_utf8_lossy(&raw).into_owned(), Instant::now())
}

#[test]
fn a_shutdown_closes_half_sent_requests_cancels_the_stream_and_exits_0() {
    let dir = TempDir::new("serve-shutdown");
    let mut args = steady_engine("50ms", &["--shutdown-grace", "300ms"]);
    args.extend(["--keep-alive-timeout".to_owned(), "60s".to_owned()]);
    // The real process: this checks what `tokenmeter serve` prints and its exit status at SIGINT.
    let mut server = Serve::start_logged(&args, &[], &dir.0);
    let mut stream = open_stream(server.addr);
    let mut half_head = http::connect(server.addr).expect("connect");
    half_head
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost:")
        .expect("send");
    let mut half_body = http::connect(server.addr).expect("connect");
    half_body
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{")
        .expect("send");
    let idle = http::connect(server.addr).expect("connect");
    served(&server);
    server.wait_for("requests running", 1.0, Duration::from_secs(10), |s| {
        s.metric("tokenmeter_requests_running", &[])
    });
    let started = Instant::now();
    let status = server.interrupt(Duration::from_secs(5));
    let took = started.elapsed();
    assert!(status.success(), "exit status {status}");
    assert!(took < Duration::from_secs(3), "stopped after {took:?}");
    let (_, closed_after) = read_until_closed(&mut stream, Duration::from_secs(1));
    assert!(closed_after.is_some(), "the stream's connection closed");
    drop((half_head, half_body, idle));
    let (_, stderr) = server.logs.clone().expect("logs");
    let text = std::fs::read_to_string(stderr).expect("stderr");
    assert!(
        text.contains("tokenmeter serve: interrupted: stopping"),
        "{text}"
    );
    assert!(
        text.contains(
            "stopped: 3 connections closed at once, 0 ended within the grace, 1 cancelled"
        ),
        "{text}"
    );
    assert!(!text.contains("did not"), "{text}");
}
