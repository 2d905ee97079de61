//! One request must not swell `tokenmeter serve`: the memory of a real `serve` process
//! (`VmRSS` and its peak `VmHWM` in `/proc/PID/status`) around the largest answers its
//! limits allow.
//!
//! - A non-streaming `n` 128 × `max_tokens` 500 × `top_logprobs` 20 chat answer (about 90 MB
//!   of JSON) is answered, with the server's peak at most its size twice over its resident
//!   size before, plus 32 MiB, and its resident size back within 64 MiB of before once sent.
//!   Before the answer was written as JSON while its tokens came (`crates/tokenmeter-server/src/answer.rs`), the same
//!   request took the server from 23 MB to 4.0 GB and left it at 3.9 GB.
//! - The same at the limits (`max_tokens` 8,185, the context length with this prompt) is
//!   refused at once, before the engine, with vLLM's 400 naming `--max-answer-size`, and
//!   recorded as a client error.
//! - Streamed, the answer keeps nothing it sent: the peak stays within 64 MiB of before.
//!
//! The engine takes 1 ms a step and the socket buffer is 4 MiB, so each answer takes seconds.

// The real `tokenmeter serve` process: its resident memory is the server's alone.
mod serve_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serve_support::http;
use serve_support::{Serve, Target, steady_engine};

const CHAT: &str = "/v1/chat/completions";

/// The answer with the most bytes per token the limits allow (`top_logprobs` 20), `n` 128.
fn request(max_tokens: u32, stream: bool) -> Vec<u8> {
    json!({
        "messages": [{"role": "user", "content": "hi"}],
        "n": 128,
        "max_tokens": max_tokens,
        "logprobs": true,
        "top_logprobs": 20,
        "stream": stream,
    })
    .to_string()
    .into_bytes()
}

/// A field of `/proc/PID/status`, in KiB.
fn status_kib(server: &Serve, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid()))
        .expect("read /proc/PID/status of tokenmeter serve");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{}/status", server.pid()))
}

/// A server fast enough to generate 64,000 tokens in about a second, and to send them.
fn server() -> Serve {
    Serve::start(&steady_engine("1ms", &["--send-buffer", "4194304"]))
}

const MIB: u64 = 1024;

#[test]
fn a_whole_answer_with_every_logprob_is_held_once_and_let_go() {
    let server = server();
    let before = status_kib(&server, "VmRSS");

    // At the limits: refused up front, nothing generated.
    let started = Instant::now();
    let refused = http::request(
        server.addr,
        "POST",
        CHAT,
        &[("Content-Type", "application/json")],
        &request(8_185, false),
    )
    .expect("an answer");
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert!(started.elapsed() < Duration::from_secs(10));
    let error: Value = serde_json::from_slice(&refused.body).expect("JSON");
    assert_eq!(error["error"]["type"], "BadRequestError");
    assert_eq!(error["error"]["code"], 400);
    let message = error["error"]["message"].as_str().expect("a message");
    for says in [
        "n 128 × 8185 tokens with top_logprobs 20",
        "limit of 268435456 bytes",
        "\"stream\": true",
        "--max-answer-size",
    ] {
        assert!(message.contains(says), "{says}: {message}");
    }
    let client_errors = server.metric(
        "tokenmeter_requests_total",
        &[("role", "server"), ("error_type", "client_error")],
    );
    assert_eq!(
        client_errors, 1.0,
        "the refusal is recorded as a client error"
    );

    // The largest that fits: answered, held once.
    let started = Instant::now();
    let answer = http::request(
        server.addr,
        "POST",
        CHAT,
        &[("Content-Type", "application/json")],
        &request(500, false),
    )
    .expect("an answer");
    let took = started.elapsed();
    assert_eq!(answer.status, 200, "{}", answer.head);
    let size = answer.body.len() as u64;
    let head = String::from_utf8_lossy(&answer.body[..answer.body.len().min(256)]);
    let tail = String::from_utf8_lossy(&answer.body[answer.body.len().saturating_sub(1024)..]);
    assert!(
        head.contains(r#""object":"chat.completion""#),
        "not a chat answer: {head}"
    );
    assert!(
        tail.contains(r#""completion_tokens":64000"#) && tail.ends_with('}'),
        "not the whole answer: {tail}"
    );
    let peak = status_kib(&server, "VmHWM");
    let bound = before + 2 * size / 1024 + 32 * MIB;
    // What the report quotes.
    eprintln!(
        "answer {size} bytes in {took:?}; serve RSS before {before} KiB, peak {peak} KiB (bound {bound} KiB), peak - before = {:.2} × the answer",
        (peak - before) as f64 * 1024.0 / size as f64
    );
    assert!(
        peak <= bound,
        "serve peaked at {peak} KiB for a {size}-byte answer, from {before} KiB"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = status_kib(&server, "VmRSS");
        if now <= before + 64 * MIB {
            eprintln!("serve RSS after the answer: {now} KiB");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "serve still holds {now} KiB 20 s after the answer, from {before} KiB"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_streamed_answer_keeps_nothing_it_sent() {
    let server = server();
    let before = status_kib(&server, "VmRSS");
    let mut stream = http::connect(server.addr).expect("connect");
    let body = request(500, true);
    let head = format!(
        "POST {CHAT} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        server.addr,
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send");
    stream.write_all(&body).expect("send");
    let (read, tail) = drain(&mut stream, Duration::from_secs(120));
    let peak = status_kib(&server, "VmHWM");
    eprintln!("streamed {read} bytes; serve RSS before {before} KiB, peak {peak} KiB");
    assert!(
        tail.contains("data: [DONE]"),
        "not the whole stream: {tail}"
    );
    assert!(read > 80_000_000, "{read} bytes");
    assert!(
        peak <= before + 64 * MIB,
        "serve peaked at {peak} KiB streaming {read} bytes, from {before} KiB"
    );
}

/// Reads `stream` to its end within `limit`, keeping none of it: the bytes read and the last
/// ones, as text.
fn drain(stream: &mut TcpStream, limit: Duration) -> (u64, String) {
    let deadline = Instant::now() + limit;
    let mut buffer = vec![0u8; 1 << 16];
    let mut last = Vec::new();
    let mut read = 0u64;
    loop {
        assert!(
            Instant::now() < deadline,
            "the stream did not end within {limit:?}"
        );
        match stream.read(&mut buffer).expect("read the stream") {
            0 => break,
            n => {
                read += n as u64;
                last.extend_from_slice(&buffer[..n]);
                let keep = last.len().saturating_sub(256);
                last.drain(..keep);
            }
        }
    }
    (read, String::from_utf8_lossy(&last).into_owned())
}
