//! The ORCA load report (`endpoint-load-metrics`) on completion answers: it parses as Envoy
//! parses it, in both formats, and tracks `/metrics` under load. Each answer's report is read
//! when its head is written, between a scrape before the request and one after the answer's
//! head: while the gauges only grow between the two scrapes, the report's values lie between
//! theirs.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::json;
use tokenmeter::orca::OrcaFormat;
use tokenmeter_tests::orca::{OrcaReport, parse};

use super::{client, get, server};
use crate::{Config, MetricsProfile, Server};

/// KV-cache usage, waiting and running requests, as `/metrics` shows them (vLLM's names,
/// summed over the series).
#[derive(Clone, Copy, Debug)]
struct Scrape {
    kv: f64,
    waiting: f64,
    running: f64,
}

async fn scrape(handle: &Server) -> Scrape {
    let (_, text) = get(handle, "/metrics").await;
    let sum = |name: &str| -> f64 {
        text.lines()
            .filter(|line| {
                line.starts_with(&format!("{name}{{")) || line.starts_with(&format!("{name} "))
            })
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    Scrape {
        kv: sum("vllm:kv_cache_usage_perc"),
        waiting: sum("vllm:num_requests_waiting"),
        running: sum("vllm:num_requests_running"),
    }
}

/// A long completion stream, asking for `format` (or the server's default when `None`).
async fn stream(url: String, format: Option<&'static str>) -> reqwest::Response {
    let body = json!({"prompt": "Once upon a time", "max_tokens": 4000, "stream": true});
    let mut request = client()
        .post(format!("{url}/v1/completions"))
        .header("content-type", "application/json");
    if let Some(format) = format {
        request = request.header("endpoint-load-metrics-format", format);
    }
    let response = request
        .body(body.to_string())
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), 200);
    response
}

fn report(response: &reqwest::Response) -> OrcaReport {
    let value = response.headers()["endpoint-load-metrics"]
        .to_str()
        .expect("ASCII");
    parse(value).unwrap_or_else(|e| panic!("Envoy refuses {value:?}: {e}"))
}

/// Reads a stream to its end in the background (so its request keeps generating).
fn drain(response: reqwest::Response) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut bytes = response.bytes_stream();
        while let Some(Ok(_)) = bytes.next().await {}
    })
}

fn within(what: &str, value: f64, a: f64, b: f64) {
    let (low, high) = (a.min(b), a.max(b));
    assert!(
        (low - 1e-9..=high + 1e-9).contains(&value),
        "{what}: the report says {value}, the scrapes around it {a} and {b}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_load_report_parses_as_envoys_and_tracks_metrics() {
    let config = Config::default()
        .profile(MetricsProfile::Vllm)
        .max_batch(3)
        .kv_capacity(20_000)
        .decode_table(vec![(1, Duration::from_millis(20))])
        .orca_format(Some(OrcaFormat::Text));
    let handle = server(config).await;
    let started = Instant::now();

    // 1. The batch fills: nothing ends or waits, so KV usage and running only grow.
    let mut holders = Vec::new();
    for (at, format) in [None, Some("JSON"), Some("text")].into_iter().enumerate() {
        let before = scrape(&handle).await;
        let response = stream(handle.url(), format).await;
        let after = scrape(&handle).await;
        let report = report(&response);
        within(
            "kv_cache_usage_perc",
            report.named("kv_cache_usage_perc"),
            before.kv,
            after.kv,
        );
        within(
            "num_requests_waiting",
            report.named("num_requests_waiting"),
            before.waiting,
            after.waiting,
        );
        within(
            "num_requests_running",
            report.named("num_requests_running"),
            before.running,
            after.running,
        );
        assert_eq!(
            report.named("num_requests_running"),
            at as f64 + 1.0,
            "{report:?}"
        );
        assert!(report.named("kv_cache_usage_perc") > 0.0, "{report:?}");
        holders.push(drain(response));
    }

    // 2. Three more wait; one holder hangs up, the first waiting one runs: its report counts
    // the two still waiting (KV usage falls then rises again here, so it is not bracketed).
    let mut queued: FuturesUnordered<_> = (0..3)
        .map(|_| tokio::spawn(stream(handle.url(), None)))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    let before = loop {
        let now = scrape(&handle).await;
        if now.waiting == 3.0 {
            break now;
        }
        assert!(Instant::now() < deadline, "the three never waited: {now:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    holders.remove(0).abort();
    let first = tokio::time::timeout(Duration::from_secs(10), queued.next())
        .await
        .expect("a waiting request ran within 10 s")
        .expect("one")
        .expect("the task");
    let after = scrape(&handle).await;
    let report = report(&first);
    within(
        "num_requests_waiting",
        report.named("num_requests_waiting"),
        before.waiting,
        after.waiting,
    );
    within(
        "num_requests_running",
        report.named("num_requests_running"),
        before.running,
        after.running,
    );
    assert_eq!(report.named("num_requests_waiting"), 2.0, "{report:?}");

    // Answers that are not 200 carry no report.
    let refused = client()
        .post(format!("{}/v1/completions", handle.url()))
        .header("endpoint-load-metrics-format", "TEXT")
        .body("{not json")
        .send()
        .await
        .expect("answered");
    assert_eq!(refused.status(), 400);
    assert!(refused.headers().get("endpoint-load-metrics").is_none());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    drop(first);
    for holder in holders {
        holder.abort();
    }
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_flag_only_requests_that_ask_get_a_report() {
    let handle = server(Config::default()).await;
    let body = json!({"prompt": "hi", "max_tokens": 2});
    for (asked, expected) in [
        (None, None),
        (Some("JSON"), Some("JSON ")),
        (Some("BIN"), None),
    ] {
        let mut request = client()
            .post(format!("{}/v1/completions", handle.url()))
            .header("content-type", "application/json");
        if let Some(asked) = asked {
            request = request.header("endpoint-load-metrics-format", asked);
        }
        let response = request
            .body(body.to_string())
            .send()
            .await
            .expect("answered");
        let header = response.headers().get("endpoint-load-metrics");
        match expected {
            None => assert!(header.is_none(), "{asked:?}: {header:?}"),
            Some(prefix) => {
                let value = header.expect("a report").to_str().expect("ASCII");
                assert!(value.starts_with(prefix), "{value}");
                parse(value).expect("Envoy parses it");
            }
        }
    }
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_generation_route_reports_its_load() {
    // Before: `/v1/responses` answered without the header that chat and completions carry.
    let handle = server(Config::default().orca_format(Some(OrcaFormat::Text))).await;
    let routes = [
        ("/v1/completions", json!({"prompt": "hi", "max_tokens": 2})),
        (
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}),
        ),
        (
            "/v1/responses",
            json!({"input": "hi", "max_output_tokens": 2}),
        ),
        (
            "/v1/responses",
            json!({"input": "hi", "max_output_tokens": 2, "stream": true}),
        ),
    ];
    for (path, body) in routes {
        let response = client()
            .post(format!("{}{path}", handle.url()))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("answered");
        assert_eq!(response.status(), 200, "{path} {body}");
        let value = response
            .headers()
            .get("endpoint-load-metrics")
            .unwrap_or_else(|| panic!("{path} {body}: no load report"))
            .to_str()
            .expect("ASCII")
            .to_owned();
        assert!(value.starts_with("TEXT "), "{path}: {value}");
        parse(&value).expect("Envoy parses it");
        let _ = response.bytes().await;
    }
    handle.shutdown().await.expect("clean shutdown");
}
