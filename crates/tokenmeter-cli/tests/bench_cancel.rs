//! Injected cancellations against the simulated server (in process) over loopback: a fraction
//! of requests hang up after k tokens or t seconds; the bench counts them `cancelled`, and the
//! server, which counts what its clients received, agrees outcome by outcome.
#[path = "serve_support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Hosted, Target};
use tokenmeter_server::Config;

fn run(server: &Hosted, cancel_after: &str) -> Value {
    let args = [
        "--model",
        "sim-llama-3-8b",
        "-n",
        "30",
        "--rate",
        "50",
        "--no-preflight",
        "--input-tokens",
        "16",
        "--output-tokens",
        "40",
        "--cancel-fraction",
        "0.4",
        "--cancel-after",
        cancel_after,
    ];
    support::bench(&server.url(), &args).json
}

/// The server's count of `outcome`, once it has ended `total` requests (it notices a hang-up
/// at its next write), within 10 s.
fn server_outcomes(server: &Hosted, total: f64) -> (f64, f64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let success = server.metric("tokenmeter_requests_total", &[("outcome", "success")]);
        let cancelled = server.metric("tokenmeter_requests_total", &[("outcome", "cancelled")]);
        if success + cancelled >= total || Instant::now() > deadline {
            return (success, cancelled);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn both_sides_count_the_same_cancellations() {
    let mut expected_total = 0.0;
    // One server for both runs: its counts accumulate.
    let step = Duration::from_millis(5);
    let server = Hosted::start(Config::default().decode_table(vec![(1, step), (64, step)]));
    let (mut client_success, mut client_cancelled) = (0.0, 0.0);
    for point in ["3tok", "60ms"] {
        let run = run(&server, point);
        let outcomes = &run["summary"]["outcomes"];
        let (success, cancelled) = (
            outcomes["success"].as_f64().unwrap(),
            outcomes["cancelled"].as_f64().unwrap(),
        );
        assert_eq!(success + cancelled, 30.0, "{point}: {outcomes}");
        // 40% of 30 on average; a seeded draw, far from both ends.
        assert!((4.0..=22.0).contains(&cancelled), "{point}: {outcomes}");
        client_success += success;
        client_cancelled += cancelled;
        expected_total += 30.0;
        let (server_success, server_cancelled) = server_outcomes(&server, expected_total);
        assert_eq!(
            (server_success, server_cancelled),
            (client_success, client_cancelled),
            "after the {point} run: the server's (success, cancelled) against the client's"
        );
    }
}

#[test]
fn cancellation_points_are_checked() {
    let output = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .args([
            "bench",
            "--cancel-fraction",
            "0.2",
            "--cancel-after",
            "soon",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("tokenmeter bench runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("20tok"), "{stderr}");
    let output = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .args(["bench", "--cancel-fraction", "0.2"])
        .stdin(Stdio::null())
        .output()
        .expect("tokenmeter bench runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--cancel-after"), "{stderr}");
}

#[test]
fn a_run_whose_every_request_is_cancelled_says_so() {
    // Before: "no request succeeded; the first error was: no request was sent — check --url…",
    // though every request had been sent (and hung up on, as asked).
    let server = Hosted::start(Config::default());
    let output = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .env_remove("OPENAI_API_KEY")
        .args([
            "bench",
            "--url",
            &server.url(),
            "--no-progress",
            "--no-preflight",
        ])
        .args(["--model", "sim-llama-3-8b", "-n", "6", "--rate", "50"])
        .args(["--output-tokens", "40", "--cancel-fraction", "1"])
        .args(["--cancel-after", "2tok"])
        .stdin(Stdio::null())
        .output()
        .expect("tokenmeter bench runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("6 of the 6 requests sent were cancelled"),
        "{stderr}"
    );
    assert!(!stderr.contains("no request was sent"), "{stderr}");
}
