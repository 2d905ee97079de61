//! Load shapes against the simulated server (in process), over loopback, in bounded runs: a
//! `--duration` run stops sending on time, `--warmup` requests reach the server but no result,
//! `--stage` and a list of `--concurrency` levels run in order and are reported stage by stage,
//! and a closed-loop level is never exceeded. (The arrival statistics of ramps and burstiness
//! are unit tests of `bench/workload/arrival.rs`: they need no server.)
#[path = "serve_support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{Hosted, Target};
use tokenmeter_server::Config;

/// A fast engine: 2 ms prefill, 1 ms per token, 4 output tokens.
fn server() -> Hosted {
    let step = Duration::from_millis(1);
    Hosted::start(
        Config::default()
            .prefill_per_token(Duration::ZERO)
            .prefill_base(Duration::from_millis(2))
            .decode_table(vec![(1, step), (64, step)]),
    )
}

/// Runs `tokenmeter bench` against `server` with `args` (8 input and 4 output tokens, no test
/// request); returns the JSON, the trace lines, stderr and the wall time.
fn bench(server: &Hosted, args: &[&str]) -> (Value, Vec<Value>, String, Duration) {
    let mut all = vec![
        "--model",
        "sim-llama-3-8b",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
    ];
    all.extend_from_slice(&["--no-preflight"]);
    all.extend_from_slice(args);
    let run = support::bench(&server.url(), &all);
    (run.json, run.trace, run.stderr, run.wall)
}

fn ns(line: &Value, key: &str) -> u64 {
    line[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {line}"))
}

#[test]
fn a_duration_run_stops_sending_on_time() {
    let server = server();
    let (json, lines, _, took) = bench(&server, &["--duration", "1500ms", "--rate", "40"]);
    let sent = lines.len();
    // 40 req/s for 1.5 s: 60 expected, Poisson; far from both ends of this range.
    assert!(
        (25..=110).contains(&sent),
        "{sent} requests in 1.5 s at 40 req/s"
    );
    assert_eq!(json["summary"]["requests"], sent as u64);
    let first = lines.iter().map(|l| ns(l, "send_ns")).min().unwrap();
    let last = lines.iter().map(|l| ns(l, "send_ns")).max().unwrap();
    assert!(
        last - first < 1_500_000_000,
        "a request was sent {} ms after the start of a 1.5 s run",
        (last - first) / 1_000_000
    );
    // Requests take a few ms: the run ends soon after its duration (process start included).
    assert!(took < Duration::from_secs(10), "the run took {took:?}");
    assert!(
        json["run"]["load"].as_str().unwrap().contains("for 1.5s"),
        "{}",
        json["run"]["load"]
    );
}

#[test]
fn warm_up_requests_reach_the_server_but_no_result() {
    let server = server();
    let (json, lines, stderr, _) = bench(&server, &["--warmup", "5", "-n", "12", "--rate", "inf"]);
    assert_eq!(lines.len(), 12);
    assert_eq!(json["summary"]["requests"], 12);
    assert!(
        stderr.contains("warm-up: 5 requests sent (5 succeeded)"),
        "{stderr}"
    );
    let served = server.metric("tokenmeter_requests_total", &[("outcome", "success")]);
    assert_eq!(served, 17.0, "the server saw the warm-up and the run");
}

#[test]
fn stages_run_in_order_and_are_reported_one_by_one() {
    let server = server();
    let (json, lines, _, _) = bench(
        &server,
        &[
            "--stage",
            "rate=200,requests=10",
            "--stage",
            "concurrency=2,requests=6",
            "--stage",
            "rate=50..100,ramp=exponential,requests=8",
        ],
    );
    let stages = json["stages"].as_array().expect("a stages list");
    let sent: Vec<u64> = stages
        .iter()
        .map(|s| s["summary"]["requests"].as_u64().unwrap())
        .collect();
    assert_eq!(sent, [10, 6, 8]);
    assert_eq!(stages[1]["stage"]["concurrency"], 2);
    assert_eq!(stages[2]["stage"]["ramp_to"], 100.0);
    // The trace names each request's stage, and stages are sent in order.
    let stage_of = |l: &Value| l["stage"].as_u64().unwrap_or(0);
    assert_eq!(lines.len(), 24);
    for pair in lines.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        // Released in order; each request's task stamps its own send, so two released a few
        // microseconds apart across a stage boundary may stamp in either order.
        if stage_of(a) < stage_of(b) {
            assert!(
                ns(a, "send_ns") <= ns(b, "send_ns") + 10_000_000,
                "{a}\n{b}"
            );
        }
        assert!(stage_of(a) <= stage_of(b), "ids follow the stages");
    }
}

#[test]
fn a_list_of_concurrency_levels_never_exceeds_its_level() {
    let server = server();
    let (json, lines, _, _) = bench(&server, &["--concurrency", "1,3", "-n", "9"]);
    let stages = json["stages"].as_array().expect("a stages list");
    assert_eq!(stages.len(), 2);
    // At every send, the requests in flight (sent before, not yet ended) are below the level
    // of the stage sending it.
    for (i, line) in lines.iter().enumerate() {
        let level = [1, 3][line["stage"].as_u64().unwrap_or(0) as usize];
        let at = ns(line, "send_ns");
        let in_flight = lines[..i]
            .iter()
            .filter(|o| ns(o, "send_ns") <= at && ns(o, "end_ns") > at)
            .count();
        assert!(
            in_flight < level,
            "request {i} sent with {in_flight} in flight at level {level}"
        );
    }
    let sent: Vec<u64> = stages
        .iter()
        .map(|s| s["summary"]["requests"].as_u64().unwrap())
        .collect();
    assert_eq!(sent, [9, 9]);
}

#[test]
fn load_flags_that_contradict_each_other_are_refused() {
    let server = server();
    for (args, says) in [
        (
            vec!["--stage", "rate=2,requests=2", "--rate", "3"],
            "drop --rate",
        ),
        (
            vec!["--concurrency", "1,2", "--rate", "3"],
            "list of --concurrency",
        ),
        (
            vec!["--burstiness", "0.5", "--arrival", "constant"],
            "--burstiness",
        ),
        (
            vec![
                "--ramp-up-strategy",
                "linear",
                "--ramp-up-start-rate",
                "1",
                "--ramp-up-end-rate",
                "5",
                "--rate",
                "2",
            ],
            "drop --rate",
        ),
        (vec!["--sweep", "--duration", "5s"], "--sweep"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
            .env_remove("OPENAI_API_KEY")
            .args([
                "bench",
                "--url",
                &server.url(),
                "--model",
                "sim-llama-3-8b",
                "--no-progress",
            ])
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("tokenmeter bench runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
