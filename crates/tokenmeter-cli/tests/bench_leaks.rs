//! Secrets the user gave go nowhere the user did not send or write them: `--header` values are
//! not sent to another origin on a redirect, a URL's query is in no output, and `--extra-body`
//! values a server echoes are redacted like the key.

#[path = "bench_support/mod.rs"]
mod support;

use std::sync::{Arc, Mutex};

use support::{Reply, Seen, temp_dir, text, tokenmeter};

const HEADER_SECRET: &str = "hdr-secret-5b1e9d0c7a";
const OTHER_SECRET: &str = "xkey-secret-0f2a64d9";

/// Every header value another origin received, over all its requests.
fn header_values(seen: &Mutex<Vec<Seen>>) -> String {
    let seen = seen.lock().unwrap();
    seen.iter()
        .flat_map(|s| s.headers.iter())
        .map(|(n, v)| format!("{n}: {v}\n"))
        .collect()
}

#[test]
fn header_secrets_are_not_sent_across_origins_on_a_redirect() {
    // The other origin: another port on loopback, recording what reaches it.
    let elsewhere: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let recorded = elsewhere.clone();
    let other = support::serve(move |seen| {
        recorded.lock().unwrap().push(seen.clone());
        Reply::stream(3)
    });
    // The server at --url: `/moved/…` to its own `/…` (same origin), which answers at
    // `/here/…`; `/v1/…` to the other origin.
    let home = support::serve(move |seen| {
        if let Some(rest) = seen.path.strip_prefix("/moved") {
            return Reply::new(307, "text/plain", "").header("location", rest);
        }
        if seen.path.starts_with("/here/") {
            return Reply::stream(3);
        }
        Reply::new(307, "text/plain", "").header("location", format!("http://{other}{}", seen.path))
    });
    let run = |base: &str, preflight: bool| {
        let mut command = tokenmeter();
        command
            .env("TM_LEAK_KEY", "sk-leak-key-39c1a7f0")
            .args(["bench", "--url", base, "--model", "m", "-n", "2"])
            .args(["--api-key-env", "TM_LEAK_KEY", "--follow-redirects"])
            .args(["-H", &format!("api-key: {HEADER_SECRET}")])
            .args(["-H", &format!("x-api-key: {OTHER_SECRET}")])
            .args(["--timeout", "20s"]);
        if !preflight {
            command.arg("--no-preflight");
        }
        command.output().unwrap()
    };
    // To another origin: refused, by the test request and by the run's requests.
    for preflight in [true, false] {
        let output = run(&format!("http://{home}/v1"), preflight);
        let (stdout, stderr) = text(&output);
        let received = header_values(&elsewhere);
        for secret in [HEADER_SECRET, OTHER_SECRET, "sk-leak-key"] {
            assert!(
                !received.contains(secret),
                "{secret} reached the other origin:\n{received}"
            );
        }
        assert!(!output.status.success(), "{stdout}\n{stderr}");
        assert!(
            format!("{stdout}{stderr}").contains("redirect to another origin"),
            "the refusal is named:\n{stdout}\n{stderr}"
        );
    }
    assert!(
        elsewhere.lock().unwrap().is_empty(),
        "nothing was sent there"
    );
    // Within the origin, a redirect is still followed, headers and all.
    let output = run(&format!("http://{home}/moved/here/v1"), true);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
}

const QUERY_KEY: &str = "sk-query-key-8d2f61b7c3";
const QUERY_SIG: &str = "sig-e4a90b27d15c";
const EXTRA_USER: &str = "tenant-9f8e7d6c5b";
const EXTRA_NESTED: &str = "nested-abcdef1234";

#[test]
fn a_query_and_echoed_extra_body_values_reach_no_output() {
    let addr = support::serve(move |seen| {
        if seen.path.starts_with("/v1/models") {
            return Reply::json(200, r#"{"data":[{"id":"m"}]}"#);
        }
        if seen.header("x-tokenmeter-request") == Some("preflight") {
            return Reply::stream(2);
        }
        // A server that echoes the request's fields and its URL in its errors.
        let body: serde_json::Value = serde_json::from_str(&seen.body).unwrap_or_default();
        let echoed = format!(
            "unknown user {} ({}) at {}",
            body["user"].as_str().unwrap_or(""),
            body["metadata"]["tok"].as_str().unwrap_or(""),
            seen.path
        );
        match seen.header("x-tokenmeter-request") {
            Some("0") | Some("2") => Reply::stream(3),
            _ => Reply::new(
                200,
                "text/event-stream",
                format!(
                    "data: {{\"error\":{{\"message\":{}}}}}\n\n",
                    serde_json::Value::String(echoed)
                ),
            ),
        }
    });
    let dir = temp_dir("leaks-query");
    let files = ["summary.json", "trace.jsonl", "report.html"].map(|f| dir.join(f));
    let url = format!("http://{addr}/v1?api-key={QUERY_KEY}&sig={QUERY_SIG}");
    let extra = format!(r#"{{"user": "{EXTRA_USER}", "metadata": {{"tok": "{EXTRA_NESTED}"}}}}"#);
    let output = tokenmeter()
        .env("TM_QUERY_KEY", QUERY_KEY)
        .args(["bench", "--url", &url, "--api-key-env", "TM_QUERY_KEY"])
        .args(["-n", "4", "--concurrency", "1", "--extra-body", &extra])
        .args(["--json", files[0].to_str().unwrap()])
        .args(["--trace", files[1].to_str().unwrap()])
        .args(["--html", files[2].to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    for (name, content) in [("stdout", stdout), ("stderr", stderr)].into_iter().chain(
        files
            .iter()
            .map(|f| (f.to_str().unwrap(), std::fs::read_to_string(f).unwrap())),
    ) {
        for secret in [QUERY_KEY, QUERY_SIG, EXTRA_USER, EXTRA_NESTED] {
            assert!(!content.contains(secret), "{secret} leaked into {name}");
        }
    }
    let command = json["run"]["command"].to_string();
    assert!(
        command.contains(&format!("http://{addr}/v1\"")),
        "the URL is kept, without its query: {command}"
    );
    let trace = std::fs::read_to_string(&files[1]).unwrap();
    assert!(
        trace.contains("unknown user [redacted]"),
        "the echo was redacted, not dropped:\n{trace}"
    );
}
