//! `tokenmeter bench --slo-spec` reports over what the run covered: no window longer than the
//! run, the run's bad fraction against the allowed one (no 30-day budget), no saturation
//! warning without a queue or KV-cache usage behind it, and a diagnosis that does not blame
//! the network of a loopback run. Against the embedded simulator (loopback), a few seconds.

#[path = "bench_support/mod.rs"]
mod support;

use serde_json::Value;
use support::{bench, temp_dir, text};

/// A TTFT objective every request breaks (1 ms), and saturation limits a client-side queue
/// of in-flight requests would cross if it were counted.
const SPEC: &str = r#"
[[objective]]
latency = "ttft"
percentile = 95
threshold = "1ms"

[[objective]]
success_rate = 0.99

[saturation]
waiting_max = 1
kv_usage_max = 0.5
"#;

#[test]
fn a_short_run_shows_only_what_it_covered() {
    let dir = temp_dir("bench-slo-run");
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let json = dir.join("run.json");
    let output = bench(&[
        "-n",
        "20",
        "--rate",
        "50",
        "--input-tokens",
        "16",
        "--output-tokens",
        "16",
        "--no-progress",
        "--slo-spec",
        spec.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let (out, err) = text(&output);
    assert_eq!(
        output.status.code(),
        Some(1),
        "the TTFT objective is missed:\n{err}"
    );
    let slo = out
        .split("client side, against")
        .nth(1)
        .unwrap_or_else(|| panic!("an SLO section:\n{out}"));
    assert!(
        slo.contains("windows of 5m and longer not covered: the run lasted"),
        "{slo}"
    );
    for shown in [
        "5m burn",
        "1h",
        "6h",
        "budget left",
        "page",
        "saturation warning",
        "network path",
    ] {
        assert!(
            !slo.contains(shown),
            "{shown:?} shown for a short loopback run:\n{slo}"
        );
    }
    assert!(slo.contains("20.00× the allowed rate"), "{slo}");
    assert!(slo.contains("time to first token"), "{slo}");
    assert!(slo.contains("goodput under the spec's objectives"), "{slo}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let status = &report["slo"];
    assert_eq!(status["not_covered"][0], "5m");
    assert_eq!(status["classes"][0]["windows"], serde_json::json!([]));
    assert_eq!(
        status["saturation"],
        serde_json::json!([]),
        "nothing observed"
    );
    let ttft = &status["classes"][0]["objectives"][0];
    assert_eq!(
        (ttft["events"].as_u64(), ttft["good"].as_u64()),
        (Some(20), Some(0))
    );
    assert_eq!(ttft["alert"], "none");
    let _ = std::fs::remove_dir_all(&dir);
}
