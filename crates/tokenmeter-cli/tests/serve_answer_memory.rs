//! Many whole answers at once must not swell `tokenmeter serve` past `--max-answer-memory`:
//! a real `serve` process on loopback, its memory read from `VmRSS` and its peak `VmHWM` in
//! `/proc/PID/status`.
//!
//! Eight non-streaming `n` 32 × `max_tokens` 500 × `top_logprobs` 20 chat requests (about
//! 22 MB of JSON each, a worst case of 26.3 MiB) are sent at once to a server whose answers
//! may take 64 MiB together: two fit, and are answered whole; the other six get a 503 with
//! `retry-after` at once, counted on `tokenmeter_http_requests_refused_total` and recorded
//! `overloaded`. The server's peak stays within the budget plus 32 MiB of its resident size
//! before; once the two are sent, the budget is free again and a further request is answered.
//! Without the budget the eight are all answered at once and the peak passes that bound.

// The real `tokenmeter serve` process: its resident memory is the server's alone.
mod serve_support;

use std::time::Instant;

use serde_json::{Value, json};
use serve_support::http;
use serve_support::{Serve, Target, steady_engine};

const CHAT: &str = "/v1/chat/completions";
const REQUESTS: usize = 8;
const BUDGET_MIB: u64 = 64;

fn request() -> Vec<u8> {
    json!({
        "messages": [{"role": "user", "content": "hi"}],
        "n": 32,
        "max_tokens": 500,
        "logprobs": true,
        "top_logprobs": 20,
    })
    .to_string()
    .into_bytes()
}

/// `VmHWM` of `/proc/PID/status`: the peak resident size, in KiB.
fn peak_kib(server: &Serve) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid()))
        .expect("read /proc/PID/status of tokenmeter serve");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in /proc/{}/status", server.pid()))
}

fn send(server: &Serve) -> http::Response {
    http::request(
        server.addr,
        "POST",
        CHAT,
        &[("Content-Type", "application/json")],
        &request(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A whole answer of 32 choices of 500 tokens.
fn assert_whole(answer: &http::Response) {
    assert_eq!(answer.status, 200, "{}", answer.head);
    let tail = String::from_utf8_lossy(&answer.body[answer.body.len().saturating_sub(1024)..]);
    assert!(
        tail.contains(r#""completion_tokens":16000"#) && tail.ends_with('}'),
        "not the whole answer: {tail}"
    );
}

#[test]
fn whole_answers_in_flight_stay_within_the_answer_memory() {
    let budget = format!("{BUDGET_MIB}MiB");
    let server = Serve::start(&steady_engine(
        "4ms",
        &[
            "--send-buffer",
            "4194304",
            "--max-answer-size",
            "32MiB",
            "--max-answer-memory",
            &budget,
        ],
    ));
    let before = server.rss_kib();
    let started = Instant::now();
    let answers: Vec<http::Response> = std::thread::scope(|scope| {
        let sent: Vec<_> = (0..REQUESTS)
            .map(|_| scope.spawn(|| send(&server)))
            .collect();
        sent.into_iter()
            .map(|t| t.join().expect("a client thread"))
            .collect()
    });
    let took = started.elapsed();
    let peak = peak_kib(&server);

    let (whole, refused): (Vec<_>, Vec<_>) = answers.iter().partition(|a| a.status == 200);
    // The answers' bytes, held once, and what the building of the two takes besides.
    let bound = before + BUDGET_MIB * 1024 + 32 * 1024;
    let size: usize = whole.iter().map(|a| a.body.len()).sum();
    // What the report quotes.
    eprintln!(
        "{REQUESTS} requests in {took:?}: {} answered ({size} bytes), {} refused; serve RSS before {before} KiB, peak {peak} KiB (bound {bound} KiB)",
        whole.len(),
        refused.len()
    );
    assert_eq!(whole.len(), 2, "two answers fit the budget");
    whole.iter().for_each(|a| assert_whole(a));
    assert_eq!(refused.len(), REQUESTS - 2);
    for answer in &refused {
        assert_eq!(answer.status, 503, "{}", answer.head);
        let head = answer.head.to_ascii_lowercase();
        assert!(head.contains("retry-after: 1\r\n"), "{head}");
        let error: Value = serde_json::from_slice(&answer.body).expect("JSON");
        assert_eq!(error["error"]["code"], 503);
        let message = error["error"]["message"].as_str().expect("a message");
        assert!(message.contains("--max-answer-memory"), "{message}");
    }
    let counted = server.metric(
        "tokenmeter_http_requests_refused_total",
        &[("reason", "answer_budget")],
    );
    assert_eq!(counted, (REQUESTS - 2) as f64);
    let overloaded = server.metric(
        "tokenmeter_requests_total",
        &[("role", "server"), ("error_type", "overloaded")],
    );
    assert_eq!(overloaded, (REQUESTS - 2) as f64, "recorded overloaded");

    assert!(
        peak <= bound,
        "serve peaked at {peak} KiB with a {BUDGET_MIB} MiB answer budget, from {before} KiB"
    );

    // The budget is free again once the answers are sent.
    assert_whole(&send(&server));
}
