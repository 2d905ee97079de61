//! A bad flag or URL gives a clear error that says how to fix it.

#[path = "bench_support/mod.rs"]
mod support;

use support::{Reply, bench, refusing, serve, text};

fn fails_with(args: &[&str], fragments: &[&str]) {
    let output = bench(args);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{args:?} succeeded: {stdout}");
    for fragment in fragments {
        assert!(
            stderr.contains(fragment),
            "{args:?}: stderr lacks `{fragment}`:\n{stderr}"
        );
    }
    assert!(!stderr.contains("panicked"), "{args:?} panicked:\n{stderr}");
}

#[test]
fn bad_flags_name_the_fix() {
    fails_with(&["--rate", "0"], &["--rate", "requests per second"]);
    fails_with(&["--rate", "fast"], &["requests per second"]);
    fails_with(&["--slo", "ttft=1"], &["--slo", "no unit", "250ms"]);
    fails_with(&["--slo", "latency=1s"], &["use ttft, tpot, itl or e2e"]);
    fails_with(&["--input-tokens", "0"], &["--input-tokens", "LO..HI"]);
    fails_with(&["--timeout", "0s"], &["above 0"]);
    fails_with(&["--requests", "0"], &["at least 1"]);
    fails_with(&["--endpoint", "/v1/embeddings"], &["/v1/chat/completions"]);
    fails_with(
        &["--dataset", "/nonexistent/prompts.jsonl"],
        &["--dataset", "/nonexistent/prompts.jsonl"],
    );
    fails_with(
        &["--concurrency", "4", "--sweep"],
        &["--sweep", "--concurrency"],
    );
    fails_with(&["--no-such-flag"], &["--no-such-flag"]);
}

#[test]
fn bad_urls_name_the_fix() {
    fails_with(&["--url", "localhost:8000"], &["--url", "http://"]);
    fails_with(&["--url", "not a url"], &["http://127.0.0.1:8000"]);
    fails_with(&["--url", "ftp://127.0.0.1/"], &["unsupported scheme"]);
    let (_reserved, closed) = refusing();
    let url = format!("http://{closed}");
    fails_with(
        &["--url", &url, "--model", "m"],
        &["cannot connect", "is the server running", "--url"],
    );
}

#[test]
fn a_server_that_never_succeeds_is_an_error_with_the_first_cause() {
    let addr = serve(|seen| {
        Reply::json(
            404,
            format!("{{\"error\":{{\"message\":\"no route {}\"}}}}", seen.path),
        )
    });
    let url = format!("http://{addr}/wrong");
    let output = bench(&[
        "--url",
        &url,
        "--model",
        "m",
        "-n",
        "3",
        "--rate",
        "inf",
        "--no-progress",
        "--no-preflight",
    ]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(3), "could not run");
    assert!(
        stdout.contains("client_error 3") && stdout.contains("no request succeeded"),
        "the outcomes, not a table of zeros:\n{stdout}"
    );
    assert!(
        stderr.contains("no request succeeded") && stderr.contains("HTTP 404"),
        "{stderr}"
    );
    assert!(stderr.contains("/wrong/v1/chat/completions"), "{stderr}");
}

#[test]
fn without_model_the_first_listed_model_is_used_or_the_fix_is_named() {
    let addr = serve(|seen| match seen.path.as_str() {
        "/v1/models" => Reply::json(200, r#"{"object":"list","data":[{"id":"listed-model"}]}"#),
        _ => Reply::stream(3),
    });
    let url = format!("http://{addr}");
    let output = bench(&["--url", &url, "-n", "2", "--no-progress"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("model listed-model"), "{stdout}");

    let addr = serve(|_| Reply::json(404, "{}"));
    let url = format!("http://{addr}");
    fails_with(
        &["--url", &url, "-n", "1"],
        &["cannot list models", "--model NAME"],
    );
}
