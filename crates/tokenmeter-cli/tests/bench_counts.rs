//! Honest counts, over real HTTP on loopback: the source of every token count (the server's
//! `usage` or the bench's chunk count) is stated in the terminal, `--json` and `--html` and
//! warned about when it is an estimate; finish reasons are counted; requests that stop before
//! the requested length are warned about; and a success with no output token is said to be one.
#[path = "bench_support/mod.rs"]
mod support;

use std::process::Command;

use support::{Reply, serve, temp_dir, text, tokenmeter};

/// A chat stream of `tokens` content chunks ending with `finish`, with a `usage` frame when
/// `usage` is true.
fn stream(tokens: usize, finish: &str, usage: bool) -> Reply {
    let mut body = String::new();
    for i in 0..tokens {
        let reason = if i + 1 == tokens {
            format!("\"{finish}\"")
        } else {
            "null".to_owned()
        };
        body.push_str(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"w{i}\"}},\"finish_reason\":{reason}}}]}}\n\n"
        ));
    }
    if tokens == 0 {
        body.push_str(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{finish}\"}}]}}\n\n"
        ));
    }
    if usage {
        body.push_str(&format!(
            "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":5,\"completion_tokens\":{tokens}}}}}\n\n"
        ));
    }
    body.push_str("data: [DONE]\n\n");
    Reply::new(200, "text/event-stream", body)
}

/// Runs 4 requests asking for 8 output tokens; returns the JSON, the table (stderr) and the
/// HTML report.
fn run(reply: fn() -> Reply) -> (serde_json::Value, String, String) {
    run_with(reply, &[])
}

/// `tokenmeter bench` against the server at `addr`: 4 requests at an unlimited rate, no
/// progress bar (what every run here starts with).
fn bench(addr: std::net::SocketAddr) -> Command {
    let mut command = tokenmeter();
    command
        .args([
            "bench",
            "--url",
            &format!("http://{addr}/v1"),
            "--model",
            "m",
        ])
        .args(["-n", "4", "--rate", "inf", "--no-progress"]);
    command
}

/// [`run`] with more flags.
fn run_with(reply: fn() -> Reply, extra: &[&str]) -> (serde_json::Value, String, String) {
    let addr = serve(move |_| reply());
    let dir = temp_dir("counts");
    let html = dir.join("report.html");
    let output = bench(addr)
        .args(["--output-tokens", "8"])
        .args(extra)
        .args(["--json", "-", "--html"])
        .arg(&html)
        .output()
        .expect("runs");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let json = serde_json::from_str(&stdout).expect("stdout is the JSON");
    let html = std::fs::read_to_string(html).expect("--html written");
    (json, stderr, html)
}

#[test]
fn counts_from_usage_at_full_length_need_no_warning() {
    let (json, stderr, html) = run(|| stream(8, "length", true));
    let counts = &json["counts"];
    assert_eq!(counts["output_from_usage"], 4);
    assert_eq!(counts["output_from_chunks"], 0);
    assert_eq!(counts["input_from_usage"], 4);
    assert_eq!(counts["finish_reasons"]["length"], 4);
    assert_eq!(counts["stopped_early"], 0);
    assert!(
        stderr.contains(
            "output: 4 from the server's usage, 0 counted with the tokenizer, 0 from chunk counts"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("finish        length 4"), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(
        html.contains("4 from the server&#39;s usage")
            || html.contains("4 from the server's usage"),
        "the HTML states the source"
    );
}

#[test]
fn chunk_counts_and_early_stops_are_stated_and_warned_about() {
    let (json, stderr, html) = run(|| stream(3, "stop", false));
    let counts = &json["counts"];
    assert_eq!(counts["output_from_chunks"], 4);
    assert_eq!(counts["input_estimated"], 4);
    assert_eq!(counts["finish_reasons"]["stop"], 4);
    assert_eq!(counts["stopped_early"], 4);
    assert!(stderr.contains("from chunk counts (estimate)"), "{stderr}");
    assert!(stderr.contains("warning: output tokens of 4 of 4 successful requests are counted from token-bearing chunks, an estimate"), "{stderr}");
    assert!(stderr.contains("warning: 4 of 4 successful requests stopped (finish_reason stop) before the requested output length"), "{stderr}");
    assert!(html.contains("an estimate"), "the HTML warns too");
}

#[test]
fn a_stream_with_no_token_is_an_empty_response_not_a_success() {
    // A stream that ends with `stop`, usage 0 and `[DONE]` but no token: vLLM 0.33's client
    // fails it ("Never received a valid chunk"), and so does the bench, under its own class.
    let addr = serve(|_| stream(0, "stop", true));
    let dir = temp_dir("counts-empty");
    let json = dir.join("run.json");
    let output = bench(addr)
        .arg("--no-preflight")
        .args(["--json", json.to_str().unwrap()])
        .output()
        .expect("runs");
    let (stdout, stderr) = text(&output);
    assert_eq!(
        output.status.code(),
        Some(3),
        "no request succeeded: {stderr}"
    );
    assert!(stdout.contains("error 4 (empty_response 4)"), "{stdout}");
    assert!(
        stderr.contains("the stream ended without any token"),
        "the first error is named: {stderr}"
    );
}

/// A non-streaming answer as llama.cpp's server (llama-cpp-python) writes it: `usage` and the
/// choice's `finish_reason`.
fn answer(tokens: usize, finish: &str) -> Reply {
    Reply::json(
        200,
        format!(
            "{{\"id\":\"c\",\"object\":\"chat.completion\",\"choices\":[{{\"index\":0,\"message\":{{\"content\":\"8 e f\",\"role\":\"assistant\"}},\"logprobs\":null,\"finish_reason\":\"{finish}\"}}],\"usage\":{{\"prompt_tokens\":26,\"completion_tokens\":{tokens},\"total_tokens\":{}}}}}",
            26 + tokens
        ),
    )
}

#[test]
fn without_streaming_the_finish_reasons_are_the_answers() {
    // Found against llama-cpp-python's server: with --no-stream every finish reason read `none`.
    let (json, stderr, _) = run_with(|| answer(8, "length"), &["--no-stream"]);
    let counts = &json["counts"];
    assert_eq!(counts["output_from_usage"], 4, "{json}");
    assert_eq!(counts["finish_reasons"], serde_json::json!({"length": 4}));
    assert!(stderr.contains("finish        length 4"), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let (json, stderr, _) = run_with(|| answer(3, "stop"), &["--no-stream"]);
    assert_eq!(
        json["counts"]["finish_reasons"],
        serde_json::json!({"stop": 4})
    );
    assert_eq!(json["counts"]["stopped_early"], 4);
    assert!(
        stderr.contains("stopped (finish_reason stop) before"),
        "{stderr}"
    );
}
