//! `/metrics` in both profiles, the KV-cache gauge, counts by outcome, and `promtool`.

use std::io::Write;
use std::process::{Command, Stdio};

use futures_util::StreamExt;
use serde_json::json;
use tokenmeter::Outcome;

use super::{eventually, get, post, server};
use crate::{Config, MetricsProfile};

fn chat(max_tokens: u32) -> serde_json::Value {
    json!({
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": max_tokens,
        "stream": true,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semconv_metrics_are_served() {
    let handle = server(Config::default()).await;
    let response = post(&handle, "/v1/chat/completions", &chat(4)).await;
    let _ = response.text().await.expect("body");
    let response = crate::tests::client()
        .get(format!("{}/metrics", handle.url()))
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().expect("ascii");
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let text = response.text().await.expect("body");
    for name in [
        "gen_ai_server_time_to_first_token_seconds_bucket",
        "gen_ai_server_time_per_output_token_seconds_bucket",
        "gen_ai_server_request_duration_seconds_count",
        "tokenmeter_inter_token_latency_seconds_bucket",
        "tokenmeter_request_queue_time_seconds_bucket",
        "tokenmeter_requests_waiting",
        "tokenmeter_requests_running",
        "tokenmeter_kv_cache_usage_ratio",
    ] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    let success = r#"tokenmeter_requests_total{gen_ai_operation_name="chat",gen_ai_provider_name="tokenmeter-sim",gen_ai_request_model="sim-llama-3-8b",role="server",outcome="success"} 1"#;
    assert!(text.contains(success), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_metrics_are_served() {
    let handle = server(Config {
        profile: MetricsProfile::Vllm,
        ..Config::default()
    })
    .await;
    let _ = post(&handle, "/v1/chat/completions", &chat(4))
        .await
        .text()
        .await;
    let (status, text) = get(&handle, "/metrics").await;
    assert_eq!(status, 200);
    for name in [
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_bucket",
        "vllm:e2e_request_latency_seconds_bucket",
        "vllm:request_queue_time_seconds_bucket",
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
    ] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    let finished = r#"vllm:request_success_total{model_name="sim-llama-3-8b",engine="0",finished_reason="length"} 1"#;
    assert!(text.contains(finished), "{text}");
}

const RUNNING_CHAT: &str = r#"tokenmeter_requests_running{gen_ai_operation_name="chat""#;

/// The value of the sample line that starts with `prefix`.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|line| line.starts_with(prefix))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv_usage_and_gauges_follow_the_engine() {
    let handle = server(Config {
        kv_capacity: 2_000,
        ..Config::default()
    })
    .await;
    let response = post(&handle, "/v1/chat/completions", &chat(1_000)).await;
    let mut body = response.bytes_stream();
    let _ = body.next().await.expect("first chunk");
    let text = handle.metrics_text();
    let usage = sample(&text, "tokenmeter_kv_cache_usage_ratio{").expect("kv gauge");
    assert!(usage > 0.0 && usage <= 1.0, "{usage}");
    let running = sample(&text, RUNNING_CHAT).expect("running gauge");
    assert_eq!(running, 1.0);
    drop(body);
    eventually("the cancellation", || {
        handle
            .records()
            .iter()
            .any(|r| r.outcome == Outcome::Cancelled)
            .then_some(())
    })
    .await;
    // The engine records the cancellation, then frees the KV cache and publishes its state (in
    // the same step, a moment later): the gauges follow it once it has published.
    let text = eventually("the KV-cache and running gauges at 0", || {
        let text = handle.metrics_text();
        let usage = sample(&text, "tokenmeter_kv_cache_usage_ratio{");
        (usage == Some(0.0) && sample(&text, RUNNING_CHAT) == Some(0.0)).then_some(text)
    })
    .await;
    let cancelled = r#"tokenmeter_requests_total{gen_ai_operation_name="chat",gen_ai_provider_name="tokenmeter-sim",gen_ai_request_model="sim-llama-3-8b",role="server",outcome="cancelled"} 1"#;
    assert!(text.contains(cancelled), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promtool_accepts_the_semconv_exposition() {
    let handle = server(Config::default()).await;
    let _ = post(&handle, "/v1/chat/completions", &chat(3))
        .await
        .text()
        .await;
    let (_, text) = get(&handle, "/metrics").await;
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = child.unwrap_or_else(|e| {
        panic!("cannot run promtool ({e}): install it with `apt-get install prometheus`")
    });
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write to promtool");
    let output = child.wait_with_output().expect("promtool ran");
    assert!(
        output.status.success(),
        "promtool check metrics failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
