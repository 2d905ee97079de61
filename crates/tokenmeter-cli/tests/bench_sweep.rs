//! An honest sweep against a simulated server (in process) whose capacity is known by construction:
//! one request at a time (`--max-batch 1`), 16 ms of prefill and 8 output tokens at 8 ms a
//! step: a request holds the engine for the prefill, which yields the first token, and 7
//! decode steps, 72 ms, so the engine serves 1 / 72 ms = 13.9 requests per second. Below that rate, constant arrivals never queue and TTFT is the
//! prefill; above it, the queue grows with every arrival and a 200 ms TTFT objective fails
//! within 30 requests once the rate is about 15% above capacity (the slack absorbs a loaded
//! machine's noise below it). The
//! search finds that capacity from below (doubling, then bisection) and from above (halving,
//! then bisection), and states it with the failing rate that brackets it.
#[path = "serve_support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use support::Hosted;
use tokenmeter_server::Config;

/// The engine's capacity, from its configuration: 1 / (16 ms + 7 × 8 ms).
const CAPACITY: f64 = 1.0 / 0.072;

/// Runs `tokenmeter bench` against `server` with `args` and the workload of every run here
/// (constant arrivals, 8 input and 8 output tokens, TTFT objective 200 ms), its JSON in a
/// directory named after `name`; asserts it succeeded and returns stdout, stderr and the JSON.
fn bench(server: &Hosted, name: &str, args: &[&str]) -> (String, String, serde_json::Value) {
    let dir = std::env::temp_dir().join(format!("tokenmeter-sweep-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let json = dir.join("sweep.json");
    let output = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .env_remove("OPENAI_API_KEY")
        .args(["bench", "--url", &server.url(), "--model", "sim-llama-3-8b"])
        .args(["--no-progress", "--arrival", "constant"])
        .args([
            "--input-tokens",
            "8",
            "--output-tokens",
            "8",
            "--slo",
            "ttft=200ms",
        ])
        .args(args)
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::null())
        .output()
        .expect("tokenmeter bench runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let text = std::fs::read_to_string(&json).expect("--json written");
    let _ = std::fs::remove_dir_all(&dir);
    (stdout, stderr, serde_json::from_str(&text).expect("JSON"))
}

fn sweep_from(server: &Hosted, start: &str) -> serde_json::Value {
    let (stdout, _, sweep) = bench(
        server,
        start,
        &[
            "--sweep",
            "--rate",
            start,
            "-n",
            "30",
            "--sweep-resolution",
            "0.1",
        ],
    );
    // One capacity line per attainment goal (90% is the target, 99% the other).
    assert_eq!(
        stdout.matches("capacity at 90% attainment").count(),
        1,
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("capacity at 99% attainment").count(),
        1,
        "{stdout}"
    );
    assert!(!stdout.contains("not reached"), "{stdout}");
    sweep
}

fn check(sweep: &serde_json::Value, from: &str) -> f64 {
    let sweep = &sweep["sweep"];
    let steps: Vec<f64> = sweep["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["rate"].as_f64().unwrap())
        .collect();
    let at = &sweep["capacities"][0];
    assert_eq!(at["goal"], 0.9);
    let rate = at["rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("{from}: {sweep}"));
    let passed = at["passed_at"]
        .as_f64()
        .unwrap_or_else(|| panic!("{from}: {sweep}"));
    let failed = at["failed_at"]
        .as_f64()
        .unwrap_or_else(|| panic!("{from}: {sweep}"));
    assert!(
        (0.9 * CAPACITY..=1.1 * CAPACITY).contains(&rate),
        "from {from}: capacity {rate} req/s, known {CAPACITY}; steps {}",
        sweep["steps"]
    );
    // Never above what a step was served at.
    let best_served = sweep["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["served_rate"].as_f64())
        .fold(0.0, f64::max);
    assert!(rate <= best_served, "{from}: {rate} above {best_served}");
    assert!(
        rate <= passed && failed > passed && failed <= passed * 1.1 + 0.05,
        "from {from}: {passed} .. {failed}"
    );
    assert_eq!(sweep["capacity"].as_f64(), Some(rate));
    assert!(steps.len() <= 12, "{steps:?}");
    // Every step carries its attainment's interval, and a step run far above the capacity was
    // not served (whatever its attainment).
    for step in sweep["steps"].as_array().unwrap() {
        let interval = step["attainment_interval"].as_array().expect("an interval");
        let (lo, hi) = (interval[0].as_f64().unwrap(), interval[1].as_f64().unwrap());
        let point = step["summary"]["attainment"].as_f64().unwrap();
        assert!(lo <= point && point <= hi, "{step}");
        if step["rate"].as_f64().unwrap() > 2.0 * CAPACITY {
            assert_eq!(step["kept_up"], false, "{step}");
        }
    }
    rate
}

/// The engine of known capacity.
fn engine() -> Hosted {
    Hosted::start(
        Config::default()
            .max_batch(1)
            .decode_table(vec![(1, Duration::from_millis(8))])
            .prefill_base(Duration::from_millis(16))
            .prefill_per_token(Duration::from_micros(1)),
    )
}

/// A step at about three times the capacity, long enough to show it, stops early with the
/// saturation verdict (a cap of 2 in flight keeps the queue in the client, so what is in flight
/// when it stops ends at once).
#[test]
fn a_step_the_server_cannot_keep_up_with_stops_early_saturated() {
    let server = engine();
    let (stdout, stderr, sweep) = bench(
        &server,
        "sat",
        &[
            "--sweep-rates",
            "40",
            "--rate",
            "40",
            "--concurrency",
            "2",
            "-n",
            "400",
        ],
    );
    let step = &sweep["sweep"]["steps"][0];
    assert_eq!(step["stopped_early"]["reason"], "saturation", "{step}");
    let sent =
        step["summary"]["requests"].as_u64().unwrap() + step["warmup_requests"].as_u64().unwrap();
    assert!(sent < 200, "stopped early: {sent} of 400 sent");
    assert_eq!(step["kept_up"], false);
    assert!(stdout.contains("stopped: saturation"), "{stdout}");
    assert!(stderr.contains("not keeping up"), "{stderr}");
}

#[test]
fn the_sweep_finds_a_known_capacity_from_below_and_from_above() {
    let server = engine();
    let below = sweep_from(&server, "4");
    let steps = &below["sweep"]["steps"];
    assert_eq!(steps[0]["rate"], 4.0);
    assert_eq!(steps[1]["rate"], 8.0, "doubling from a passing rate");
    let from_below = check(&below, "below");
    let above = sweep_from(&server, "80");
    let steps = &above["sweep"]["steps"];
    assert_eq!(steps[1]["rate"], 40.0, "halving from a failing rate");
    let from_above = check(&above, "above");
    println!("capacity from below {from_below} req/s, from above {from_above} req/s");
}
