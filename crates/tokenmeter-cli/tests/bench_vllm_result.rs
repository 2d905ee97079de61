//! `--result-format vllm` over real HTTP on loopback, read back with the keys `vllm bench serve
//! --save-result` writes (a typed reader: a missing or renamed key fails), run with the peers'
//! flag names (`--base-url`, `--num-prompts`, `--request-rate`, `--max-concurrency`,
//! `--goodput`, in vLLM's syntax and in AIPerf's).
#[path = "bench_support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use support::{Reply, serve, temp_dir, text, tokenmeter};

/// The keys a vLLM result parser reads.
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct VllmResult {
    date: String,
    backend: String,
    model_id: String,
    tokenizer_id: String,
    num_prompts: u64,
    request_rate: serde_json::Value,
    max_concurrency: Option<u64>,
    duration: f64,
    completed: u64,
    failed: u64,
    total_input_tokens: u64,
    total_output_tokens: u64,
    request_throughput: f64,
    request_goodput: Option<f64>,
    output_throughput: f64,
    total_token_throughput: f64,
    mean_ttft_ms: f64,
    median_ttft_ms: f64,
    std_ttft_ms: f64,
    p50_ttft_ms: f64,
    p99_ttft_ms: f64,
    mean_tpot_ms: f64,
    median_tpot_ms: f64,
    p99_tpot_ms: f64,
    mean_itl_ms: f64,
    p99_itl_ms: f64,
    mean_e2el_ms: f64,
    std_e2el_ms: f64,
    #[serde(rename = "p99.9_e2el_ms")]
    p99_9_e2el_ms: f64,
    input_lens: Vec<u64>,
    output_lens: Vec<u64>,
    ttfts: Vec<f64>,
    itls: Vec<Vec<f64>>,
    generated_texts: Vec<String>,
    errors: Vec<String>,
}

/// Five requests, one at a time, the third of the run answered with a 500.
fn run(name: &str, goodput: &str) -> VllmResult {
    let count = AtomicU64::new(0);
    let addr = serve(move |request| {
        // The test request before the run is answered well and not counted.
        let preflight = request.header("x-tokenmeter-request") == Some("preflight");
        if !preflight && count.fetch_add(1, Ordering::Relaxed) == 2 {
            Reply::json(500, r#"{"error":{"message":"engine fell over"}}"#)
        } else {
            Reply::stream(4)
        }
    });
    let dir = temp_dir(name);
    let path = dir.join("result.json");
    let url = format!("http://{addr}/v1");
    let output = tokenmeter()
        .args(["bench", "--base-url", &url, "--model", "m", "--no-progress"])
        .args(["--num-prompts", "5", "--request-rate", "inf"])
        .args(["--max-concurrency", "1", "--goodput", goodput])
        .args(["--metric-percentiles", "50,99,99.9"])
        .args(["--result-format", "vllm", "--save-detailed"])
        .args(["--json", path.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let json = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}:\n{json}"))
}

#[test]
fn the_vllm_result_has_vllms_keys_and_units() {
    let r = run("vllm-result", "ttft:60000");
    assert_eq!((r.num_prompts, r.completed, r.failed), (5, 4, 1));
    assert_eq!(
        (r.backend.as_str(), r.model_id.as_str()),
        ("openai-chat", "m")
    );
    assert_eq!(r.tokenizer_id, "m");
    assert_eq!(r.request_rate, "inf");
    assert_eq!(r.max_concurrency, Some(1));
    assert_eq!(r.date.len(), "20261202-051500".len(), "{}", r.date);
    assert_eq!(r.total_output_tokens, 16);
    assert_eq!(r.output_lens, [4, 4, 0, 4, 4]);
    assert_eq!(r.input_lens.len(), 5);
    assert!(r.errors[2].contains("engine fell over"), "{:?}", r.errors);
    assert!(
        r.errors
            .iter()
            .enumerate()
            .all(|(i, e)| (i == 2) != e.is_empty()),
        "{:?}",
        r.errors
    );
    assert_eq!(r.generated_texts.len(), 5);
    // Per-request lists in seconds, statistics in milliseconds.
    assert_eq!(r.ttfts[2], 0.0);
    let ok: Vec<f64> = r.ttfts.iter().copied().filter(|&t| t > 0.0).collect();
    assert_eq!(ok.len(), 4);
    let mean_ms = ok.iter().sum::<f64>() / 4.0 * 1e3;
    assert!(
        (r.mean_ttft_ms - mean_ms).abs() < 1e-6,
        "{} vs {mean_ms}",
        r.mean_ttft_ms
    );
    assert!(r.duration > 0.0 && r.mean_ttft_ms < r.duration * 1e3);
    assert_eq!(r.p50_ttft_ms, r.median_ttft_ms);
    assert!(r.p99_ttft_ms >= r.median_ttft_ms && r.std_ttft_ms >= 0.0);
    assert_eq!(
        r.itls.iter().map(Vec::len).collect::<Vec<_>>(),
        [3, 3, 0, 3, 3]
    );
    let gaps: Vec<f64> = r.itls.iter().flatten().copied().collect();
    let itl_ms = gaps.iter().sum::<f64>() / gaps.len() as f64 * 1e3;
    assert!((r.mean_itl_ms - itl_ms).abs() < 1e-6);
    assert!(r.p99_9_e2el_ms >= r.mean_e2el_ms || r.std_e2el_ms > 0.0);
    assert!((r.request_throughput - 4.0 / r.duration).abs() < 1e-9);
    assert_eq!(
        r.request_goodput,
        Some(r.request_throughput),
        "every success is good"
    );
}

#[test]
fn goodput_objectives_are_applied() {
    let r = run("vllm-goodput", "ttft:0");
    assert_eq!(r.request_goodput, Some(0.0), "no TTFT is 0 ms");
}

#[test]
fn aiperfs_goodput_syntax_is_applied_too() {
    // One quoted argument of space-separated metric tags, as `aiperf profile --goodput` takes.
    let strict = run(
        "aiperf-goodput",
        "time_to_first_token:0 inter_token_latency:60000",
    );
    assert_eq!(strict.request_goodput, Some(0.0), "no TTFT is 0 ms");
    let loose = run(
        "aiperf-goodput-loose",
        "time_to_first_token:60000 request_latency:60000",
    );
    assert_eq!(loose.request_goodput, Some(loose.request_throughput));
}
