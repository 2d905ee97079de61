//! `x-slo-ttft-ms` and `x-slo-tpot-ms`: parsed strictly (a 400 naming the header), folded into
//! the spec's declared header classes, never a series per value.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::json;
use tokenmeter_slo::SloSpec;

use super::{get, json, server};
use crate::Config;

const SPEC: &str = r#"
[[class]]
name = "interactive"
from_headers = true
[[class.objective]]
latency = "ttft"
percentile = 90
threshold = "500ms"
[[class.objective]]
latency = "tpot"
percentile = 90
threshold = "50ms"

[[class]]
name = "batch"
from_headers = true
[[class.objective]]
latency = "ttft"
percentile = 90
threshold = "20m"

[[objective]]
success_rate = 0.99
"#;

async fn with_spec() -> crate::Server {
    server(Config::default().slo_spec(SloSpec::from_toml(SPEC).expect("valid spec"))).await
}

fn chat() -> String {
    json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}).to_string()
}

async fn send(handle: &crate::Server, headers: &[(&str, &str)]) -> (u16, String) {
    let mut request = crate::tests::client()
        .post(format!("{}/v1/chat/completions", handle.url()))
        .header("content-type", "application/json")
        .body(chat());
    for (name, value) in headers {
        request = request.header(*name, *value); // appends: a name given twice is sent twice
    }
    let response = request.send().await.expect("the server answers");
    let status = response.status().as_u16();
    (status, response.text().await.expect("a body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_objective_headers_are_refused_with_a_400_naming_the_header() {
    let handle = with_spec().await;
    let ttft = "x-slo-ttft-ms";
    let tpot = "x-slo-tpot-ms";
    let cases: [&[(&str, &str)]; 8] = [
        &[(ttft, "12ms")],
        &[(ttft, "-1")],
        &[(ttft, "1e3")],
        &[(ttft, "")],
        &[(ttft, "99999999999999999999999")],
        &[(tpot, "3600001")],
        &[(ttft, "0")],
        &[(tpot, "20"), (tpot, "20")],
    ];
    for headers in cases {
        let (status, body) = send(&handle, headers).await;
        assert_eq!(status, 400, "{headers:?}: {body}");
        let error = json(&body);
        let header = headers[0].0;
        assert_eq!(error["error"]["param"], header, "{body}");
        let message = error["error"]["message"].as_str().expect("a message");
        assert!(
            message.contains("whole number of milliseconds"),
            "{message}"
        );
        if headers[0].1.len() > 1 {
            assert!(
                !message.contains(headers[0].1),
                "echoes the value: {message}"
            );
        }
    }
    // Well-formed: answered, and counted under the class holding the targets.
    assert_eq!(send(&handle, &[(ttft, "300"), (tpot, "40")]).await.0, 200);
    assert_eq!(send(&handle, &[(ttft, "60000")]).await.0, 200);
    assert_eq!(send(&handle, &[(ttft, "3600000")]).await.0, 200);
    assert_eq!(send(&handle, &[]).await.0, 200);
    let (_, metrics) = get(&handle, "/metrics").await;
    for line in [
        r#"tokenmeter_slo_requests_total{slo_class="interactive"} 1"#,
        r#"tokenmeter_slo_requests_total{slo_class="batch"} 1"#,
        r#"tokenmeter_slo_requests_total{slo_class="default"} 1"#,
        r#"tokenmeter_slo_requests_unclassified_total{reason="malformed"} 8"#,
        r#"tokenmeter_slo_requests_unclassified_total{reason="no_class"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} missing from:\n{metrics}");
    }
    // The status at /slo says the same.
    let (_, status) = get(&handle, "/slo").await;
    let status = json(&status);
    assert_eq!(
        status["slo"]["unclassified"],
        json!({"malformed": 8, "no_class": 1}),
        "{status}"
    );
}

/// 2,000 requests with random, mostly distinct objective values: the exposition keeps exactly
/// the declared classes' series plus the two unclassified reasons, and counts every request
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_distinct_header_values_stays_within_the_declared_classes() {
    const N: u64 = 2_000;
    let handle = with_spec().await;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut random = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let values: Vec<(String, Option<String>)> = (0..N)
        .map(|_| {
            let ttft = (1 + random() % 3_600_000).to_string();
            let tpot = (random() % 2 == 0).then(|| (1 + random() % 100).to_string());
            (ttft, tpot)
        })
        .collect();
    let url = format!("{}/v1/chat/completions", handle.url());
    let client = crate::tests::client();
    let answered: Vec<u16> = futures_util::stream::iter(values)
        .map(|(ttft, tpot)| {
            let mut request = client
                .post(&url)
                .header("content-type", "application/json")
                .header("x-slo-ttft-ms", ttft)
                .body(chat());
            if let Some(tpot) = tpot {
                request = request.header("x-slo-tpot-ms", tpot);
            }
            async move {
                assert!(Instant::now() < deadline, "the flood took over 120 s");
                let response = request.send().await.expect("the server answers");
                let status = response.status().as_u16();
                let _ = response.bytes().await;
                status
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    assert!(answered.iter().all(|s| *s == 200), "{answered:?}");
    let (_, metrics) = get(&handle, "/metrics").await;
    let slo_series: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("tokenmeter_slo_"))
        .collect();
    // interactive: 4 request counters + 2 objectives × 2; batch: 4 + 1 × 2; default: 4 + 1 × 2;
    // unclassified: 2 reasons.
    assert_eq!(slo_series.len(), 8 + 6 + 6 + 2, "{slo_series:#?}");
    let value = |prefix: &str| -> u64 {
        slo_series
            .iter()
            .filter(|l| l.starts_with(prefix))
            .map(|l| {
                l.rsplit(' ')
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .expect("a count")
            })
            .sum()
    };
    let classified = value("tokenmeter_slo_requests_total{");
    let unclassified = value("tokenmeter_slo_requests_unclassified_total{");
    assert_eq!(classified + unclassified, N, "every request counted once");
    assert!(
        classified > 0 && unclassified > 0,
        "{classified} + {unclassified}"
    );
}
