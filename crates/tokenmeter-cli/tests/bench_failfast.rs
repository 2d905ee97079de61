//! Failing fast and clearly, over real HTTP on loopback: the test request before the run stops
//! it on 401/403/404/422 with the server's own message (sanitised) and the remedy, names a
//! non-SSE answer by its content type and a compressed one by its encoding; an unset
//! `--api-key-env` variable is an error; model discovery shows the server's message; a run
//! where nothing succeeded prints its first errors, not a table of zeros; and the exit codes
//! tell a missed objective (1), bad flags (2), a run that could not happen (3) apart.
#[path = "bench_support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use support::{Reply, Seen, bench, refusing, serve, text, tokenmeter};

const KEY: &str = "sk-failfast-0123456789abcdef";

/// A server answering every completion with `reply`, and how many completions it was asked.
fn server(reply: fn() -> Reply) -> (SocketAddr, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    let addr = serve(move |seen: &Seen| {
        if seen.path.ends_with("/completions") {
            count.fetch_add(1, Ordering::SeqCst);
        }
        reply()
    });
    (addr, asked)
}

/// `bench --url http://ADDR --model m -n 5 ARGS` with the key set.
fn run(addr: SocketAddr, args: &[&str]) -> Output {
    let url = format!("http://{addr}/v1");
    tokenmeter()
        .env("OPENAI_API_KEY", KEY)
        .args(["bench", "--url", &url, "--model", "m", "-n", "5"])
        .args(["--rate", "inf", "--no-progress"])
        .args(args)
        .output()
        .expect("the tokenmeter binary runs")
}

/// Asserts the exit code, that stderr holds every fragment, and that the key never shows.
fn check(output: &Output, code: i32, fragments: &[&str]) -> String {
    let (stdout, stderr) = text(output);
    assert_eq!(output.status.code(), Some(code), "{stdout}\n{stderr}");
    for fragment in fragments {
        assert!(
            stderr.contains(fragment),
            "stderr lacks `{fragment}`:\n{stderr}"
        );
    }
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "the key leaked"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    stdout
}

fn wrong_key() -> Reply {
    Reply::json(
        401,
        format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}"}}}}"#),
    )
}

#[test]
fn a_refused_test_request_stops_the_run_with_the_servers_message() {
    let (addr, asked) = server(wrong_key);
    let output = run(addr, &[]);
    check(
        &output,
        3,
        &[
            "test request",
            "HTTP 401",
            "Incorrect API key provided",
            "--api-key-env",
            "--no-preflight",
        ],
    );
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "only the test request was sent"
    );

    let (addr, _) = server(|| Reply::json(404, r#"{"error":{"message":"no such route"}}"#));
    check(
        &run(addr, &[]),
        3,
        &["HTTP 404", "no such route", "--endpoint"],
    );
    let (addr, _) = server(|| Reply::json(403, r#"{"error":{"message":"forbidden here"}}"#));
    check(
        &run(addr, &[]),
        3,
        &["HTTP 403", "forbidden here", "API key"],
    );
    let (addr, _) = server(|| {
        Reply::json(
            422,
            r#"{"object":"error","message":"model `m` does not exist"}"#,
        )
    });
    check(
        &run(addr, &[]),
        3,
        &["HTTP 422", "model `m` does not exist", "--model"],
    );
}

#[test]
fn answers_that_are_not_event_streams_are_named() {
    let (addr, asked) = server(|| Reply::new(200, "text/html", "<html>login</html>"));
    check(
        &run(addr, &[]),
        3,
        &["Content-Type text/html", "text/event-stream"],
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    let (addr, _) = server(|| Reply::stream(3).header("content-encoding", "gzip"));
    check(&run(addr, &[]), 3, &["Content-Encoding `gzip`"]);
    // A passing server: the test request does not count in the run.
    let (addr, asked) = server(|| Reply::stream(3));
    let stdout = check(&run(addr, &[]), 0, &[]);
    assert_eq!(
        asked.load(Ordering::SeqCst),
        6,
        "5 requests and the test request"
    );
    assert!(stdout.contains("success 5"), "{stdout}");
}

#[test]
fn without_the_test_request_a_run_with_no_success_prints_its_first_errors() {
    let (addr, asked) = server(wrong_key);
    let output = run(addr, &["--no-preflight"]);
    let stdout = check(
        &output,
        3,
        &["no request succeeded", "Incorrect API key provided"],
    );
    assert_eq!(asked.load(Ordering::SeqCst), 5);
    assert!(stdout.contains("no request succeeded"), "{stdout}");
    assert!(stdout.contains("client_error"), "{stdout}");
    assert!(
        stdout.contains("errors (first messages per class)")
            && stdout.contains("Incorrect API key provided: [redacted"),
        "{stdout}"
    );
    assert!(!stdout.contains("ttft"), "no table of zeros:\n{stdout}");
}

#[test]
fn an_unset_named_key_variable_is_an_error() {
    let (addr, asked) = server(|| Reply::stream(3));
    let output = run(addr, &["--api-key-env", "TOKENMETER_TEST_UNSET_KEY"]);
    check(
        &output,
        2,
        &["TOKENMETER_TEST_UNSET_KEY", "not set", "export"],
    );
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}

#[test]
fn discovery_errors_show_the_servers_message_and_the_remedy() {
    let addr = serve(|_| wrong_key());
    let url = format!("http://{addr}");
    let output = tokenmeter()
        .env("OPENAI_API_KEY", KEY)
        .args(["bench", "--url", &url, "-n", "1", "--no-progress"])
        .output()
        .expect("runs");
    check(
        &output,
        3,
        &[
            "cannot list models",
            "HTTP 401",
            "Incorrect API key provided",
            "--api-key-env",
        ],
    );
}

/// A server whose first token comes after 30 ms: a 10 ms TTFT objective is always missed.
fn slow() -> Reply {
    std::thread::sleep(std::time::Duration::from_millis(30));
    Reply::stream(3)
}

#[test]
fn exit_codes_tell_a_missed_objective_from_a_run_that_could_not_happen() {
    let (addr, _) = server(slow);
    let missed = [
        "--no-preflight",
        "--slo",
        "ttft=10ms",
        "--fail-under",
        "0.9",
    ];
    check(
        &run(addr, &missed),
        1,
        &["attainment 0.00% is below --fail-under 90.00%"],
    );
    let met = ["--no-preflight", "--slo", "ttft=10s", "--fail-under", "0.9"];
    check(&run(addr, &met), 0, &[]);
    // Without --fail-under a low attainment is a result, not a failure.
    check(
        &run(addr, &["--no-preflight", "--slo", "ttft=10ms"]),
        0,
        &[],
    );

    let help = text(&bench(&["--help"])).0;
    assert!(
        help.contains("Exit codes: 0 ok; 1 an objective missed"),
        "{help}"
    );
    let usage = bench(&["--no-such-flag"]);
    assert_eq!(usage.status.code(), Some(2));
    let bad = bench(&["--fail-under", "1.5"]);
    assert_eq!(bad.status.code(), Some(2));
    let (_reserved, closed) = refusing();
    let unreachable = bench(&["--url", &format!("http://{closed}"), "--model", "m"]);
    check(&unreachable, 3, &["cannot connect"]);
}
