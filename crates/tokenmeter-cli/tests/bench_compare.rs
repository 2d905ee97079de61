//! `tokenmeter bench compare`: real runs against the simulated server in process, written as
//! `--json` and `--trace`, compared. The JSON's `samples` agree with its summary; runs of
//! different shapes and files without samples are refused (exit 2); the same configuration
//! twice is no regression (exit 0) and a decode twice as slow is (exit 1, "regressed").
#[path = "serve_support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{Hosted, steady_config};
use tokenmeter::report::Summary;
use tokenmeter_tests::TempDir;

/// Runs `tokenmeter bench` against `server` to completion: 150 requests at 150/s.
fn bench(server: &Hosted, output_tokens: &str, extra: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .env_remove("OPENAI_API_KEY")
        .args(["bench", "--url", &server.url(), "--model", "sim-llama-3-8b"])
        .args([
            "--no-progress",
            "--no-preflight",
            "-n",
            "150",
            "--rate",
            "150",
        ])
        .args([
            "--seed",
            "7",
            "--input-tokens",
            "16",
            "--output-tokens",
            output_tokens,
        ])
        .args(["--slo", "ttft=2s,tpot=1s"])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect("tokenmeter bench runs");
    assert!(output.status.success(), "bench failed: {}", text(&output));
    output
}

fn compare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .args(["bench", "compare"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("tokenmeter bench compare runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The non-null values of a `samples` column, in seconds.
fn column(samples: &Value, name: &str) -> Vec<f64> {
    let values = samples[name].as_array().unwrap();
    values
        .iter()
        .filter_map(Value::as_f64)
        .map(|ms| ms / 1e3)
        .collect()
}

fn agree(samples: &Value, name: &str, summary: &Value) {
    let s = Summary::of(column(samples, name));
    assert_eq!(s.count, summary["count"].as_u64().unwrap(), "{name}");
    for (key, value) in [
        ("p50", s.p50),
        ("p90", s.p90),
        ("p95", s.p95),
        ("p99", s.p99),
        ("mean", s.mean),
    ] {
        let want = summary[key].as_f64().unwrap();
        assert!(
            (value - want).abs() <= 1e-12 * want.abs().max(1e-3),
            "{name} {key}: samples {value} vs summary {want}"
        );
    }
}

#[test]
fn the_json_holds_each_request_and_compare_refuses_what_it_cannot_compare() {
    let server = Hosted::start(steady_config(Duration::from_millis(5)));
    let dir = TempDir::new("bench-compare-inputs");
    let path = |name: &str| dir.0.join(name);
    let p = |name: &str| path(name).display().to_string();
    bench(
        &server,
        "16..32",
        &["--json", &p("base.json"), "--trace", &p("base.jsonl")],
    );
    let base = read(&path("base.json"));
    let (samples, summary) = (&base["samples"], &base["summary"]);
    assert_eq!(samples["ok"].as_array().unwrap().len(), 150);
    let good = samples["good"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g.as_bool().unwrap())
        .count();
    assert_eq!(good as u64, summary["good_requests"].as_u64().unwrap());
    assert_eq!(samples["duration_s"], summary["duration_s"]);
    agree(samples, "ttft_ms", &summary["ttft"]);
    agree(samples, "tpot_ms", &summary["tpot"]);
    agree(samples, "e2e_ms", &summary["e2e"]);
    // `bench merge` of the run's trace writes the same samples (in request order).
    let merged = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .args([
            "bench",
            "merge",
            &p("base.jsonl"),
            "--json",
            &p("merged.json"),
        ])
        .output()
        .unwrap();
    assert!(merged.status.success(), "{}", text(&merged));
    let merged = read(&path("merged.json"));
    for name in ["ttft_ms", "tpot_ms", "e2e_ms"] {
        let sorted = |s: &Value| {
            let mut v = column(s, name);
            v.sort_by(f64::total_cmp);
            v
        };
        let (live, replayed) = (sorted(samples), sorted(&merged["samples"]));
        assert_eq!(live.len(), replayed.len(), "{name}");
        for (a, b) in live.iter().zip(&replayed) {
            assert!((a - b).abs() <= 1e-9, "{name}: {a} vs {b}");
        }
    }

    // Other lengths: another shape, refused with each facet that differs, unless allowed.
    bench(&server, "4", &["--json", &p("short.json")]);
    let refused = compare(&[&p("base.json"), &p("short.json")]);
    let said = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(
        said.contains("workload:") && said.contains("--allow-different-shapes"),
        "{said}"
    );
    assert!(!said.contains("model:"), "the same model: {said}");
    let allowed = compare(&[
        &p("base.json"),
        &p("short.json"),
        "--allow-different-shapes",
    ]);
    assert!(
        !text(&allowed).contains("different shapes"),
        "{}",
        text(&allowed)
    );

    // A JSON of an older version: no samples, refused with the fix.
    let mut old = base.clone();
    old.as_object_mut().unwrap().remove("samples");
    std::fs::write(path("old.json"), old.to_string()).unwrap();
    let refused = compare(&[&p("old.json"), &p("base.json")]);
    let said = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(
        said.contains("old.json") && said.contains("re-run with this version's --json"),
        "{said}"
    );
    let missing = compare(&[&p("base.json"), &p("missing.json")]);
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(text(&missing).contains("missing.json"));
    let same = compare(&[&p("base.json"), &p("base.json"), "--json", &p("base.json")]);
    assert_eq!(
        same.status.code(),
        Some(2),
        "an output may not overwrite an input: {}",
        text(&same)
    );
}

/// Needs the statistics of `bench compare` (the bootstrap and verdicts).
#[test]
fn a_decode_twice_as_slow_regresses_and_the_same_config_twice_does_not() {
    let fast = Hosted::start(steady_config(Duration::from_millis(5)));
    let slow = Hosted::start(steady_config(Duration::from_millis(10)));
    let dir = TempDir::new("bench-compare-verdicts");
    let p = |name: &str| dir.0.join(name).display().to_string();
    bench(
        &fast,
        "16..32",
        &["--json", &p("base.json"), "--trace", &p("base.jsonl")],
    );
    bench(
        &fast,
        "16..32",
        &["--json", &p("again.json"), "--trace", &p("again.jsonl")],
    );
    bench(&slow, "16..32", &["--json", &p("slow.json")]);

    // Two runs one after the other differ by what the machine did between them, which one
    // run's interval (its requests resampled) does not hold: the same config's TPOT p95 moved
    // +6% (+0.36 ms on 5 ms steps) in CI and its TTFT p95 +49% beside a release build. So the
    // same config is compared with a threshold of 15%, which twice the decode time (+100%)
    // still passes by far.
    let same = compare(&[
        &p("base.json"),
        &p("again.json"),
        "--threshold",
        "15",
        "--json",
        &p("same-cmp.json"),
    ]);
    assert_eq!(
        same.status.code(),
        Some(0),
        "the same config twice: {}",
        text(&same)
    );
    assert!(read(Path::new(&p("same-cmp.json"))).is_object());
    // From the traces, ITL is compared too. Its tail (p95, p99 of gaps of a few ms) moves
    // with whatever else this machine runs between two runs: a real difference of what was
    // measured, which one run's interval (requests resampled) does not cover and `--repeat`
    // does. So the traces' verdict is not asserted, only that they were compared with ITL.
    let traces = compare(&[&p("base.jsonl"), &p("again.jsonl")]);
    let said = text(&traces);
    assert!(
        matches!(traces.status.code(), Some(0 | 1)),
        "the same config's traces are compared: {said}"
    );
    assert!(said.contains("ITL p95 (ms)"), "{said}");
    assert!(
        said.contains("could not be checked"),
        "a trace's shape is unknown: {said}"
    );

    let html = p("slower.html");
    let slower = compare(&[
        &p("base.json"),
        &p("slow.json"),
        "--threshold",
        "15",
        "--html",
        &html,
    ]);
    let said = text(&slower);
    assert_eq!(
        slower.status.code(),
        Some(1),
        "twice the decode time: {said}"
    );
    assert!(said.contains("regressed"), "{said}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("slow.json") && page.contains("class=\"differences\""));
    assert!(
        page.matches("<svg").count() >= 4,
        "the differences and three CDFs"
    );
}
