//! What the user chose reaches our own outputs, over real HTTP on loopback: the percentiles of
//! `--metric-percentiles` / `--percentile-metrics` in the table, `--json` and `--html`, and
//! the error samples in the `--html` report, sanitized (a key the server echoes is redacted,
//! markup escaped).
#[path = "bench_support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicU64, Ordering};

use support::{Reply, serve, temp_dir, text, tokenmeter};

const KEY: &str = "sk-report-planted-7f3a9c2e51d84b06";

/// Six requests, one at a time; the third answered with a 500 that echoes the Authorization
/// header inside markup. Returns the JSON, stderr and the HTML report.
fn run(name: &str, extra: &[&str]) -> (serde_json::Value, String, String) {
    let count = AtomicU64::new(0);
    let addr = serve(move |request| {
        let preflight = request.header("x-tokenmeter-request") == Some("preflight");
        if !preflight && count.fetch_add(1, Ordering::Relaxed) == 2 {
            let echoed = request.header("authorization").unwrap_or_default();
            Reply::json(
                500,
                format!("{{\"error\":{{\"message\":\"<b>engine fell over</b> for {echoed}\"}}}}"),
            )
        } else {
            Reply::stream(5)
        }
    });
    let dir = temp_dir(name);
    let html = dir.join("report.html");
    let output = tokenmeter()
        .env("OPENAI_API_KEY", KEY)
        .args([
            "bench",
            "--url",
            &format!("http://{addr}/v1"),
            "--model",
            "m",
        ])
        .args(["-n", "6", "--concurrency", "1", "--no-progress"])
        .args(extra)
        .args(["--json", "-", "--html"])
        .arg(&html)
        .output()
        .expect("runs");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let json = serde_json::from_str(&stdout).expect("stdout is the JSON");
    let html = std::fs::read_to_string(html).expect("--html written");
    (json, stderr, html)
}

#[test]
fn the_chosen_percentiles_are_in_the_table_the_json_and_the_html() {
    let (json, stderr, html) = run(
        "chosen-percentiles",
        &[
            "--metric-percentiles",
            "50,99.9",
            "--percentile-metrics",
            "ttft,e2el",
        ],
    );
    let chosen = &json["summary_percentiles"];
    let keys: Vec<&String> = chosen.as_object().expect("an object").keys().collect();
    assert_eq!(keys, ["e2el", "ttft"], "{chosen}");
    let (p50, p999) = (
        chosen["ttft"]["p50"].as_f64().unwrap(),
        chosen["ttft"]["p99.9"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p999 >= p50, "{chosen}");
    assert!(
        (p50 - json["summary"]["ttft"]["p50"].as_f64().unwrap()).abs() < 1e-12,
        "the same p50 as the summary's"
    );
    assert!(
        chosen["e2el"]["p99.9"].as_f64().unwrap()
            <= json["summary"]["e2e"]["max"].as_f64().unwrap()
    );
    let block = stderr
        .split("chosen (ms)")
        .nth(1)
        .unwrap_or_else(|| panic!("no chosen block:\n{stderr}"));
    let block: Vec<&str> = block
        .lines()
        .take_while(|l| !l.trim().is_empty() && !l.contains("token counts"))
        .collect();
    assert!(
        block[0].contains("p50") && block[0].contains("p99.9"),
        "{block:?}"
    );
    assert!(block[1].trim_start().starts_with("TTFT"), "{block:?}");
    assert!(block[2].trim_start().starts_with("E2EL"), "{block:?}");
    assert_eq!(block.len(), 3, "the chosen metrics only: {block:?}");
    assert!(html.contains("Chosen percentiles") && html.contains("<th>p99.9</th>"));
    assert!(html.contains("<td>E2EL</td>") && !html.contains("<td>TPOT</td>"));
}

#[test]
fn without_the_flags_our_outputs_are_unchanged() {
    let (json, stderr, html) = run("default-percentiles", &[]);
    assert!(json["summary_percentiles"].is_null(), "{json}");
    assert!(!stderr.contains("chosen (ms)"), "{stderr}");
    assert!(!html.contains("Chosen percentiles"));
}

#[test]
fn the_html_report_holds_the_error_samples_sanitized() {
    let (json, _, html) = run("html-samples", &[]);
    let sample = json["error_samples"].to_string();
    assert!(sample.contains("engine fell over"), "{json}");
    assert!(html.contains("Errors (first messages per class)"), "{html}");
    assert!(
        html.contains("engine fell over"),
        "the sample is in the report"
    );
    assert!(
        !html.contains(KEY) && !html.contains("7f3a9c2e51d84b06"),
        "no key"
    );
    assert!(
        !html.contains("<b>engine") && html.contains("&lt;b&gt;engine fell over"),
        "markup escaped"
    );
}
