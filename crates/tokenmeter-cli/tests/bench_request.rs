//! Request control over real HTTP on loopback: `--header` and `--extra-body` arrive at the
//! server exactly, the length field and `stream_options` follow their flags, `--no-stream`
//! reads one JSON answer (TTFT = E2E), and header values never reach any output, even when
//! the server echoes them.
#[path = "bench_support/mod.rs"]
mod support;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use support::{Reply, Seen, serve, temp_dir, text, tokenmeter};

const TENANT: &str = "tenant-9c41e7f0b2d6";
const API_KEY_HEADER: &str = "azk-5d2e8a0c7f41b39e";

/// A server that records every request of the run (not the test request before it) and
/// answers with `reply`.
fn recording(reply: fn(&Seen) -> Reply) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let addr = serve(move |request| {
        if request.header("x-tokenmeter-request") != Some("preflight") {
            log.lock().unwrap().push(request.clone());
        }
        reply(request)
    });
    (format!("http://{addr}/v1"), seen)
}

/// Runs `tokenmeter bench` with `args` after two requests' worth of common flags; returns
/// stdout, stderr and the `--json` summary.
fn run(url: &str, name: &str, args: &[&str]) -> (String, String, Value) {
    let dir = temp_dir(name);
    let json_path = dir.join("summary.json");
    let output = tokenmeter()
        .args([
            "bench", "--url", url, "--model", "m", "-n", "2", "--rate", "inf",
        ])
        .args(["--no-progress", "--json", json_path.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{args:?}:\n{stdout}\n{stderr}");
    let summary = std::fs::read_to_string(&json_path).unwrap();
    for secret in [TENANT, API_KEY_HEADER] {
        for (what, content) in [("stdout", &stdout), ("stderr", &stderr), ("json", &summary)] {
            assert!(
                !content.contains(secret),
                "a header value leaked into {what}"
            );
        }
    }
    (stdout, stderr, serde_json::from_str(&summary).unwrap())
}

fn bodies(seen: &Mutex<Vec<Seen>>) -> Vec<Value> {
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "two requests, no model discovery");
    seen.iter()
        .map(|s| serde_json::from_str(&s.body).unwrap())
        .collect()
}

#[test]
fn headers_and_the_extra_body_arrive_exactly() {
    let (url, seen) = recording(|_| Reply::stream(3));
    let api_key = format!("api-key: {API_KEY_HEADER}");
    let tenant = format!("X-Tenant:{TENANT}");
    let extra = r#"{"temperature": 0, "top_p": 0.5, "stop": ["\n"], "user": {"id": 7}}"#;
    let (_, _, summary) = run(
        &url,
        "request-headers",
        &[
            "--header",
            &api_key,
            "-H",
            &tenant,
            "--extra-body",
            extra,
            "--label",
            "nightly",
            "--metadata",
            "gpu=H100",
        ],
    );
    // The numeric run block: the command line keeps header names and body keys, not values.
    let block = &summary["run"];
    let command: Vec<&str> = block["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(command.contains(&"api-key: [redacted]"), "{command:?}");
    assert!(command.contains(&"X-Tenant: [redacted]"), "{command:?}");
    assert!(
        !command.join(" ").contains("0.5"),
        "extra body values: {command:?}"
    );
    assert_eq!(
        (block["n"].as_u64(), block["rate"].as_str()),
        (Some(2), Some("inf"))
    );
    assert_eq!(block["label"], "nightly");
    assert_eq!(block["metadata"]["gpu"], "H100");
    assert_eq!(block["version"], env!("CARGO_PKG_VERSION"));
    assert!(block["started_unix_s"].as_f64().unwrap() > 1.7e9, "{block}");
    assert!(
        block["started_at"].as_str().unwrap().ends_with('Z'),
        "{block}"
    );
    let bodies = bodies(&seen);
    for (request, body) in seen.lock().unwrap().iter().zip(bodies) {
        assert_eq!(request.header("api-key"), Some(API_KEY_HEADER));
        assert_eq!(request.header("x-tenant"), Some(TENANT));
        assert_eq!(request.header("accept"), Some("text/event-stream"));
        let Value::Object(body) = body else {
            panic!("{body}")
        };
        let mut expected = json!({
            "model": "m", "max_tokens": 128, "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0, "top_p": 0.5, "stop": ["\n"], "user": {"id": 7},
        });
        expected["messages"] = body["messages"].clone();
        assert_eq!(Value::Object(body), expected);
    }
}

#[test]
fn the_length_field_stream_options_and_ignore_eos_follow_their_flags() {
    let (url, seen) = recording(|_| Reply::stream(3));
    run(
        &url,
        "request-fields",
        &[
            "--max-tokens-field",
            "max_completion_tokens",
            "--no-stream-options",
            "--ignore-eos",
            "--output-tokens",
            "9",
        ],
    );
    for body in bodies(&seen) {
        assert_eq!(body["max_completion_tokens"], 9, "{body}");
        assert_eq!(body["ignore_eos"], true, "{body}");
        assert_eq!(body["stream"], true, "{body}");
        assert!(body.get("max_tokens").is_none(), "{body}");
        assert!(body.get("stream_options").is_none(), "{body}");
    }
}

#[test]
fn a_non_streaming_answer_has_ttft_equal_to_e2e_and_the_usage_count() {
    let (url, seen) = recording(|_| {
        Reply::json(
            200,
            r#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"a b c d e"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5}}"#,
        )
    });
    let (_, _, summary) = run(&url, "request-plain", &["--no-stream"]);
    let bodies = bodies(&seen);
    for (request, body) in seen.lock().unwrap().iter().zip(bodies) {
        assert_eq!(body["stream"], false, "{body}");
        assert!(body.get("stream_options").is_none(), "{body}");
        assert_eq!(request.header("accept"), Some("application/json"));
    }
    let s = &summary["summary"];
    assert_eq!(s["successful"], 2, "{s}");
    assert_eq!(s["total_output_tokens"], 10, "{s}");
    assert_eq!(s["ttft"]["count"], 2, "{s}");
    assert_eq!(s["ttft"]["mean"], s["e2e"]["mean"], "TTFT = E2E: {s}");
    assert_eq!(s["itl"]["count"], 0, "no ITL without a stream: {s}");
}

#[test]
fn an_echoed_header_value_is_redacted() {
    let (url, _) = recording(|request| {
        let tenant = request.header("x-tenant").unwrap_or("").to_owned();
        Reply::json(
            403,
            format!(r#"{{"error":{{"message":"tenant {tenant} is not allowed"}}}}"#),
        )
    });
    let dir = temp_dir("request-echo");
    let trace = dir.join("trace.jsonl");
    let tenant = format!("x-tenant: {TENANT}");
    let output = tokenmeter()
        .args([
            "bench", "--url", &url, "--model", "m", "-n", "2", "--rate", "inf",
        ])
        // The run's own requests meet the echo (the test request would stop the run on it).
        .args(["--no-progress", "--no-preflight", "--header", &tenant])
        .args(["--trace", trace.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    let trace = std::fs::read_to_string(&trace).unwrap();
    assert!(
        trace.contains("tenant [redacted] is not allowed"),
        "the server's message is kept, the value redacted:\n{trace}"
    );
    for content in [&stdout, &stderr, &trace] {
        assert!(
            !content.contains(TENANT),
            "a header value leaked:\n{content}"
        );
    }
}

#[test]
fn bad_request_flags_name_the_fix_without_the_value() {
    for (args, expected) in [
        (["--header", "no-colon-s3cr3t"], "Name: value"),
        (["--extra-body", "[1]"], "JSON object"),
        (["--extra-body", r#"{"stream":false}"#], "--no-stream"),
        (["--max-tokens-field", "length"], "max_completion_tokens"),
    ] {
        let output = support::bench(&args);
        let (_, stderr) = text(&output);
        assert!(!output.status.success(), "{args:?}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("s3cr3t"), "{args:?}: {stderr}");
    }
}
