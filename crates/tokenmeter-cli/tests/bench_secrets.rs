//! The API key is sent as a bearer token and never printed: not on stdout or stderr, not in
//! `--json`, `--trace` or `--html`, even when the server echoes it back in its errors.

#[path = "bench_support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicU64, Ordering};

use support::{Reply, refusing, temp_dir, text, tokenmeter};

const KEY: &str = "sk-planted-7f3a9c2e51d84b6f";

#[test]
fn the_key_is_sent_but_never_printed() {
    let count = AtomicU64::new(0);
    let addr = support::serve(move |seen| {
        let auth = seen.header("authorization").unwrap_or("none").to_owned();
        if seen.path == "/v1/models" {
            return Reply::json(200, r#"{"data":[{"id":"m"}]}"#);
        }
        assert_eq!(
            auth,
            format!("Bearer {KEY}"),
            "the key is sent as a bearer token"
        );
        // Servers that echo the credentials in their errors, in bodies and in stream events.
        match count.fetch_add(1, Ordering::Relaxed) % 3 {
            0 => Reply::stream(4),
            1 => Reply::json(
                401,
                format!(r#"{{"error":{{"message":"bad key {auth}"}}}}"#),
            ),
            _ => Reply {
                status: 200,
                content_type: "text/event-stream",
                body: format!(
                    "data: {{\"error\":{{\"message\":\"denied {auth}\",\"code\":403}}}}\n\n"
                ),
            },
        }
    });
    let dir = temp_dir("secrets");
    let files = ["summary.json", "trace.jsonl", "report.html"].map(|f| dir.join(f));
    let url = format!("http://{addr}");
    let output = tokenmeter()
        .env("TM_PLANTED_KEY", KEY)
        .args([
            "bench",
            "--url",
            &url,
            "--api-key-env",
            "TM_PLANTED_KEY",
            "-n",
            "9",
            "--rate",
            "inf",
        ])
        .args([
            "--json",
            files[0].to_str().unwrap(),
            "--trace",
            files[1].to_str().unwrap(),
        ])
        .args(["--html", files[2].to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("client_error 6"),
        "the echoing errors were counted:\n{stdout}"
    );
    let trace = std::fs::read_to_string(&files[1]).unwrap();
    assert!(
        trace.contains("[redacted]"),
        "the echoed key was redacted, not dropped:\n{trace}"
    );
    for (name, content) in [("stdout", stdout), ("stderr", stderr)].into_iter().chain(
        files
            .iter()
            .map(|f| (f.to_str().unwrap(), std::fs::read_to_string(f).unwrap())),
    ) {
        assert!(!content.contains(KEY), "the API key leaked into {name}");
        assert!(
            !content.contains("sk-planted"),
            "part of the API key leaked into {name}"
        );
    }
}

#[test]
fn an_unreachable_server_does_not_print_the_key_either() {
    let (_reserved, closed) = refusing();
    let url = format!("http://user:{KEY}@{closed}/v1?api-key={KEY}");
    let output = tokenmeter()
        .env("OPENAI_API_KEY", KEY)
        .args(["bench", "--url", &url, "--model", "m"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(stderr.contains("cannot connect"), "{stderr}");
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "{stdout}\n{stderr}"
    );
}
