//! ORCA load reports from the layer over real HTTP on loopback: off unless asked for, the
//! request's format or the layer's default, the source's values as Envoy parses them, and
//! none on a failed answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::routing::post;
use tokenmeter::orca::{LoadReport, OrcaFormat};
use tokenmeter_tests::orca::parse;

use super::*;

/// Serves `app` on a loopback port; its base URL.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

async fn answer() -> ([(header::HeaderName, &'static str); 1], &'static str) {
    let body = r#"data: {"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}

data: [DONE]

"#;
    ([(header::CONTENT_TYPE, "text/event-stream")], body)
}

async fn fail() -> StatusCode {
    StatusCode::SERVICE_UNAVAILABLE
}

async fn post_to(url: &str, format: Option<&str>) -> reqwest::Response {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut request = client.post(url);
    if let Some(format) = format {
        request = request.header("endpoint-load-metrics-format", format);
    }
    request.send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layer_reports_its_sources_load_as_envoy_reads_it() {
    let h = Harness::new();
    let waiting = Arc::new(AtomicU64::new(3));
    let source = {
        let waiting = Arc::clone(&waiting);
        move || LoadReport::new(0.375, waiting.load(Ordering::Relaxed), 7)
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(answer))
        .route("/fail", post(fail));
    let asked_only = serve(app.clone().layer(h.layer().orca(source.clone(), None))).await;
    let by_default = serve(
        app.clone()
            .layer(h.layer().orca(source, Some(OrcaFormat::Json))),
    )
    .await;
    let without = serve(app.layer(h.layer())).await;

    let report = |response: &reqwest::Response| {
        let value = response.headers().get("endpoint-load-metrics")?;
        Some(
            parse(value.to_str().unwrap())
                .unwrap_or_else(|e| panic!("Envoy refuses {value:?}: {e}")),
        )
    };
    let chat = |base: &str| format!("{base}/v1/chat/completions");
    assert!(report(&post_to(&chat(&asked_only), None).await).is_none());
    assert!(
        report(&post_to(&chat(&without), Some("TEXT")).await).is_none(),
        "off unless asked"
    );
    assert!(report(&post_to(&chat(&asked_only), Some("BIN")).await).is_none());
    for (url, format, prefix) in [
        (chat(&asked_only), Some("TEXT"), "TEXT "),
        (chat(&asked_only), Some("json"), "JSON "),
        (chat(&by_default), None, "JSON "),
        (chat(&by_default), Some("TEXT"), "TEXT "),
    ] {
        let response = post_to(&url, format).await;
        assert_eq!(response.status(), 200);
        let raw = response.headers()["endpoint-load-metrics"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(raw.starts_with(prefix), "{raw}");
        let got = report(&response).expect("a report");
        assert_eq!(got.named("kv_cache_usage_perc"), 0.375);
        assert_eq!(got.named("num_requests_waiting"), 3.0);
        assert_eq!(got.named("num_requests_running"), 7.0);
        // The stream is passed on unchanged and metered.
        assert!(response.text().await.unwrap().ends_with("data: [DONE]\n\n"));
    }
    // The source is read for each answer.
    waiting.store(11, Ordering::Relaxed);
    let got = report(&post_to(&chat(&by_default), None).await).expect("a report");
    assert_eq!(got.named("num_requests_waiting"), 11.0);
    // A failed answer carries none.
    let failed = post_to(&format!("{by_default}/fail"), Some("TEXT")).await;
    assert_eq!(failed.status(), 503);
    assert!(report(&failed).is_none());
}
