//! The bench says what it measured and what went wrong: what `--extra-body` replaced, an
//! HTML or JSON answer where a stream was expected, an empty model id, implausible input-side
//! usage; and a server that keeps the body open after `[DONE]` does not hold the test request.

#[path = "bench_support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{Reply, bench, temp_dir, text};

#[test]
fn what_the_extra_body_replaces_is_warned_about_and_reported() {
    let bodies: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = bodies.clone();
    let addr = support::serve(move |request| {
        seen.lock().unwrap().push(request.body.clone());
        Reply::stream(3)
    });
    let dir = temp_dir("told-overrides");
    let json = dir.join("summary.json");
    let url = format!("http://{addr}/v1");
    let extra = r#"{"model": "sent-model", "n": 2, "max_tokens": 3, "temperature": 0}"#;
    let output = bench(&[
        "--url",
        &url,
        "--model",
        "asked-model",
        "-n",
        "2",
        "--output-tokens",
        "50",
        "--extra-body",
        extra,
        "--json",
        json.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for key in ["`model`", "`n`", "`max_tokens`"] {
        assert!(
            stderr.contains(&format!("--extra-body replaces {key}")),
            "{key} is warned about:\n{stderr}"
        );
    }
    assert!(
        stderr.contains("\"asked-model\"") && stderr.contains("with \"sent-model\""),
        "both values are named:\n{stderr}"
    );
    assert!(
        stdout.contains("model sent-model") && stdout.contains("--extra-body sends"),
        "the header shows what was sent:\n{stdout}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(summary["run"]["model"], "sent-model");
    assert_eq!(
        summary["run"]["extra_body_overrides"],
        serde_json::json!({"model": "sent-model", "n": 2, "max_tokens": 3})
    );
    let bodies = bodies.lock().unwrap();
    assert!(
        bodies.iter().all(|b| b.contains("\"sent-model\"")),
        "{bodies:?}"
    );
}

#[test]
fn an_html_page_without_preflight_is_named_not_called_truncated() {
    let addr = support::serve(|_| {
        Reply::new(
            200,
            "text/html; charset=utf-8",
            "<html><body>a web UI</body></html>",
        )
    });
    let url = format!("http://{addr}");
    let output = bench(&["--url", &url, "--model", "m", "-n", "2", "--no-preflight"]);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(
        all.contains("answered 200 with text/html, not an event stream"),
        "{all}"
    );
    assert!(!all.contains("truncated"), "{all}");
}

#[test]
fn an_empty_model_id_is_refused_with_the_fix() {
    let addr = support::serve(|seen| match seen.path.as_str() {
        "/v1/models" => Reply::json(200, r#"{"object":"list","data":[{"id":""}]}"#),
        _ => Reply::stream(3),
    });
    let url = format!("http://{addr}/v1");
    let output = bench(&["--url", &url, "-n", "1"]);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("empty id") && stderr.contains("pass --model"),
        "{stderr}"
    );
}

/// Model discovery carries the `--header`s the measured requests carry: a server that wants
/// an `api-key` header (Azure OpenAI's way) lists its models to the bench, and the value is
/// shown nowhere even when the server echoes it.
#[test]
fn model_discovery_sends_the_headers_the_requests_send() {
    const SECRET: &str = "azure-key-7f3a91c2e5";
    let addr = support::serve(|seen| match (seen.path.as_str(), seen.header("api-key")) {
        ("/v1/models", Some(SECRET)) => {
            Reply::json(200, r#"{"object":"list","data":[{"id":"deployed-model"}]}"#)
        }
        (_, Some(SECRET)) => Reply::stream(3),
        (_, other) => Reply::json(
            401,
            format!(r#"{{"error":{{"message":"api-key {other:?} is not {SECRET}"}}}}"#),
        ),
    });
    let url = format!("http://{addr}/v1");
    let header = format!("api-key: {SECRET}");
    let output = bench(&[
        "--url",
        &url,
        "-n",
        "2",
        "--no-progress",
        "--header",
        &header,
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("deployed-model"), "{stdout}");
    assert!(stdout.contains("success 2"), "{stdout}");
    // Without the header, the server's 401 (which echoes the key it expects) is shown redacted.
    let output = bench(&[
        "--url",
        &url,
        "-n",
        "1",
        "--header",
        "api-key: wrong-value-123",
    ]);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("401"), "{stderr}");
    assert!(!stderr.contains("wrong-value-123"), "{stderr}");
}

/// A server that streams a short answer and `[DONE]`, then keeps the body open (no final
/// chunk) until the client hangs up, or `hold` passes.
fn open_after_done(hold: Duration) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for socket in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = socket.set_read_timeout(Some(hold));
                let mut reader = BufReader::new(socket);
                let mut length = 0;
                let mut line = String::new();
                loop {
                    line.clear();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some((name, value)) = line.trim_end().split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                    if line.trim_end().is_empty() {
                        break;
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    return;
                }
                let socket = reader.get_mut();
                let mut out = String::from(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
                );
                for event in Reply::stream(2).body.split_inclusive("\n\n") {
                    out.push_str(&format!("{:x}\r\n{event}\r\n", event.len()));
                }
                if socket.write_all(out.as_bytes()).is_err() {
                    return;
                }
                let _ = socket.flush();
                // Open until the client hangs up (or `hold` passes): no final chunk.
                let mut rest = [0u8; 1024];
                while matches!(socket.read(&mut rest), Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

#[test]
fn the_test_request_stops_at_done_when_the_body_stays_open() {
    let timeout = Duration::from_secs(60);
    let addr = open_after_done(timeout * 2);
    let url = format!("http://{addr}/v1");
    let started = Instant::now();
    let output = bench(&["--url", &url, "--model", "m", "-n", "1", "--timeout", "60s"]);
    let took = started.elapsed();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        took < timeout / 2,
        "the run took {took:?}, near --timeout {timeout:?}:\n{stderr}"
    );
}

#[test]
fn implausible_input_usage_is_ignored_and_warned_about() {
    let max = u64::MAX;
    let addr = support::serve(move |_| {
        let mut reply = Reply::stream(3);
        reply.body = reply.body.replace(
            r#""usage":{"prompt_tokens":3,"#,
            &format!(
                r#""usage":{{"prompt_tokens":{max},"prompt_tokens_details":{{"cached_tokens":{max}}},"#
            ),
        );
        reply
    });
    let dir = temp_dir("told-usage");
    let json = dir.join("summary.json");
    let url = format!("http://{addr}/v1");
    let output = bench(&[
        "--url",
        &url,
        "--model",
        "m",
        "-n",
        "3",
        "--json",
        json.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("3 of 3 requests reported usage.prompt_tokens or cached tokens far above"),
        "{stderr}"
    );
    assert!(!stdout.contains(&max.to_string()), "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let totals = &summary["summary"];
    assert_eq!(totals["usage_implausible_input"], 3, "{totals}");
    assert_eq!(totals["total_cached_input_tokens"], 0, "{totals}");
    assert!(
        totals["total_input_tokens"].as_u64().unwrap() < 1 << 20,
        "{totals}"
    );
}
