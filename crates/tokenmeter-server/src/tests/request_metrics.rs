//! `--enable-per-request-metrics` agrees with `/metrics`: under a bounded concurrent load of
//! streams and whole answers, the sum of each per-request field over every request equals the
//! `_sum` of the histogram that observes the same interval:
//!
//! | Field | Histogram (vLLM's names) |
//! |---|---|
//! | `queue_time_ms` | `vllm:request_queue_time_seconds` (scheduled − arrival) |
//! | `time_to_first_token_ms` (vLLM's: from scheduling) | `vllm:request_prefill_time_seconds` (first token − scheduled) |
//! | `queue_time_ms` + `time_to_first_token_ms` | `vllm:time_to_first_token_seconds` (first token − arrival) |
//! | `generation_time_ms` | `vllm:request_decode_time_seconds` (last token − first token) |
//! | `mean_itl_ms` (requests of 2 tokens or more) | `vllm:request_time_per_output_token_seconds` |
//!
//! Both are read from the same core request at the same events, so they agree to the rounding
//! of adding a few dozen floating-point numbers in two orders and units (1 µs here).

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::{Value, json};

use super::{client, events, get, json, server};
use crate::{Config, MetricsProfile, Server};

const REQUESTS: usize = 24;

/// The per-request `metrics` object of one request (a stream or a whole answer).
async fn one(url: String, at: usize) -> Value {
    let stream = at.is_multiple_of(2);
    let body = json!({"prompt": "Once upon a time", "max_tokens": 1 + at % 9, "stream": stream});
    let response = client()
        .post(format!("{url}/v1/completions"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), 200);
    let text = response.text().await.expect("a body");
    let answer = if stream {
        let events = events(&text);
        json(&events[events.len() - 2])
    } else {
        json(&text)
    };
    answer["metrics"].clone()
}

fn histogram_sum(text: &str, name: &str) -> (f64, f64) {
    let value = |suffix: &str| -> f64 {
        let prefix = format!("{name}_{suffix}");
        text.lines()
            .filter(|l| {
                l.starts_with(&format!("{prefix}{{")) || l.starts_with(&format!("{prefix} "))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    (value("sum"), value("count"))
}

async fn scrape_when_all_ended(handle: &Server) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, text) = get(handle, "/metrics").await;
        let (_, count) = histogram_sum(&text, "vllm:e2e_request_latency_seconds");
        if count == REQUESTS as f64 {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{count} of {REQUESTS} requests ended"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_request_metrics_sum_to_the_histograms() {
    // A batch of 4 for 8 clients at once: requests wait in the queue.
    let config = Config::default()
        .profile(MetricsProfile::Vllm)
        .max_batch(4)
        .enable_per_request_metrics(true);
    let handle = server(config).await;
    let mut all = Vec::new();
    for wave in 0..REQUESTS / 8 {
        let wave = (0..8).map(|i| one(handle.url(), wave * 8 + i));
        all.extend(join_all(wave).await);
    }
    let text = scrape_when_all_ended(&handle).await;
    let field =
        |name: &str| -> f64 { all.iter().filter_map(|m| m[name].as_f64()).sum::<f64>() / 1e3 };
    let queue = field("queue_time_ms");
    let prefill = field("time_to_first_token_ms");
    assert!(queue > 0.0, "some requests waited: {all:?}");
    for (name, expected, count) in [
        ("vllm:request_queue_time_seconds", queue, REQUESTS),
        ("vllm:request_prefill_time_seconds", prefill, REQUESTS),
        (
            "vllm:time_to_first_token_seconds",
            queue + prefill,
            REQUESTS,
        ),
        (
            "vllm:request_decode_time_seconds",
            field("generation_time_ms"),
            REQUESTS,
        ),
        (
            "vllm:request_time_per_output_token_seconds",
            field("mean_itl_ms"),
            all.iter().filter(|m| m["mean_itl_ms"].is_f64()).count(),
        ),
    ] {
        let (sum, n) = histogram_sum(&text, name);
        assert_eq!(n, count as f64, "{name}: _count");
        assert!(
            (sum - expected).abs() < 1e-6,
            "{name}: _sum {sum} s, the per-request objects sum to {expected} s"
        );
    }
    handle.shutdown().await.expect("clean shutdown");
}
