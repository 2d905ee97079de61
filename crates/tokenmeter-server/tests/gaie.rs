//! The Gateway API Inference Extension's model-server protocol (what llm-d's endpoint picker
//! scrapes), checked on a real `/metrics` over loopback against the protocol's one table
//! (`tokenmeter_tests::gaie::PROTOCOL`, which the OpenTelemetry test checks too):
//! `serve`'s (the simulator under load) in both profiles, and a minimal library server that
//! reports its engine through `Meter::engine`.

use std::time::Duration;

use tokenmeter::sink::{
    AdmissionReason, CacheConfig, MAX_LORA_ADAPTERS, MAX_LORA_COMBINATIONS, MAX_LORA_NAME_BYTES,
    WaitingReason,
};
use tokenmeter::{Labels, Meter};
use tokenmeter_prometheus::{Builder, Profile};
use tokenmeter_server::{Config, MetricsProfile, Server};
use tokenmeter_tests::gaie::{check, parse};

async fn scrape(url: &str) -> String {
    let response = reqwest::get(format!("{url}/metrics"))
        .await
        .expect("scrape");
    assert_eq!(response.status(), 200);
    response.text().await.expect("body")
}

async fn stream(client: reqwest::Client, url: String, model: &'static str) -> u16 {
    let body = serde_json::json!({
        "model": model,
        "messages": [{"role": "user", "content": "Hello there"}],
        "max_tokens": 16,
        "stream": true,
    });
    let response = client
        .post(format!("{url}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("send");
    let status = response.status().as_u16();
    let _ = response.bytes().await;
    status
}

/// `serve` under load (more requests than its queue takes, on a base model and two LoRA
/// adapters) exposes every signal of the protocol, in both profiles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exposes_every_gaie_signal_in_both_profiles() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    for (profile, vllm) in [
        (MetricsProfile::Vllm, true),
        (MetricsProfile::Semconv, false),
    ] {
        let mut config = Config::default();
        config.profile = profile;
        config.served_model_name = vec!["base".into(), "lora-a".into(), "lora-b".into()];
        config.max_loras = 2;
        config.max_batch = 2;
        config.queue_limit = 2;
        let server = Server::start(config, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let url = server.url();
        let client = reqwest::Client::new();
        let models = ["base", "lora-a", "lora-b"];
        let load = (0..12).map(|i| stream(client.clone(), url.clone(), models[i % 3]));
        let statuses = tokio::time::timeout(Duration::from_secs(60), futures_join(load))
            .await
            .expect("the load ends within its deadline");
        assert!(
            statuses.contains(&429),
            "the queue limit refused some: {statuses:?}"
        );
        let exposition = parse(&scrape(&url).await);
        check(&exposition, vllm);
        let name =
            |semconv: &'static str, vllm_name: &'static str| if vllm { vllm_name } else { semconv };
        let lora = &exposition.samples[name(
            "tokenmeter_engine_lora_requests_info",
            "vllm:lora_requests_info",
        )];
        assert!(
            lora.iter()
                .any(|(labels, _)| labels["running_lora_adapters"].contains("lora-")),
            "{lora:?}"
        );
        assert!(lora.iter().all(|(labels, _)| labels["max_lora"] == "2"));
        let rejected = &exposition.samples["tokenmeter_engine_admission_rejections_total"];
        let queue_full: f64 = rejected
            .iter()
            .filter(|(labels, _)| labels["reason"] == "queue_full")
            .map(|(_, v)| v)
            .sum();
        let refused = statuses.iter().filter(|s| **s == 429).count() as f64;
        assert_eq!(queue_full, refused, "every 429 is one admission rejection");
        let config = &exposition.samples[name(
            "tokenmeter_engine_cache_config_info",
            "vllm:cache_config_info",
        )];
        assert_eq!(config.len(), 1);
        assert_eq!(config[0].0["block_size"], "16");
        server.shutdown().await.unwrap();
    }
}

async fn futures_join<F: std::future::Future<Output = u16> + Send + 'static>(
    futures: impl Iterator<Item = F>,
) -> Vec<u16> {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for handle in handles {
        out.push(handle.await.expect("a request task"));
    }
    out
}

/// A minimal server of its own (not `serve`): a Prometheus sink, an engine reporting through
/// `Meter::engine`, `/metrics` over loopback. Every protocol signal is there, and a flood of
/// adapter names does not grow the exposition without bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_server_exposes_every_gaie_signal_and_bounds_lora_labels() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    for (profile, vllm) in [(Profile::Vllm, true), (Profile::Semconv, false)] {
        let (sink, handle) = Builder::new(profile).build_recorder().unwrap();
        let meter = Meter::builder().sink(sink).build();
        let labels = Labels::server("chat").request_model("llama");
        let engine = meter.engine(&Labels::server("").request_model("llama"));
        engine.set_cache_config(CacheConfig::new(16, 1000));
        engine.set_cache_config(CacheConfig::new(32, 9)); // ignored: one series
        engine.set_kv_cache_usage(0.25);
        engine.set_waiting_by_reason(WaitingReason::Capacity, 1);
        engine.set_waiting_by_reason(WaitingReason::Deferred, 0);
        engine.add_admission_rejections(AdmissionReason::QueueFull, 2);
        let waiting = meter.series(&labels).start(); // the lifecycle's waiting gauge
        let mut running = meter.series(&labels).start();
        running.mark_scheduled();
        // a flood of adapter names: long, many, with commas
        let long = "x".repeat(500);
        for i in 0..2_000 {
            let name = format!("adapter,{i}-{long}");
            engine.set_lora_adapters(4, [name.as_str()], ["waiting-one"]);
        }
        let app = axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let handle = handle.clone();
                async move { handle.render() }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let served = tokio::spawn(async move { axum::serve(listener, app).await });
        let exposition = parse(&scrape(&url).await);
        served.abort();
        check(&exposition, vllm);
        let lora_name = if vllm {
            "vllm:lora_requests_info"
        } else {
            "tokenmeter_engine_lora_requests_info"
        };
        let lora = &exposition.samples[lora_name];
        assert!(
            lora.len() <= MAX_LORA_COMBINATIONS + 1,
            "{} series",
            lora.len()
        );
        let longest = MAX_LORA_ADAPTERS * (MAX_LORA_NAME_BYTES + 1);
        for (labels, _) in lora {
            assert!(labels["running_lora_adapters"].len() <= longest);
            assert!(
                !labels["running_lora_adapters"].contains("adapter,"),
                "a comma splits a name"
            );
        }
        assert_eq!(
            lora.iter().filter(|(_, v)| *v > 0.0).count(),
            1,
            "one current series"
        );
        let cache = if vllm {
            "vllm:cache_config_info"
        } else {
            "tokenmeter_engine_cache_config_info"
        };
        assert_eq!(exposition.samples[cache].len(), 1);
        assert_eq!(exposition.samples[cache][0].0["num_gpu_blocks"], "1000");
        drop((waiting, running));
    }
}

/// The sum of the samples of `name` whose labels include every pair of `want`.
fn total(
    exposition: &tokenmeter_tests::gaie::Exposition,
    name: &str,
    want: &[(&str, &str)],
) -> f64 {
    exposition.samples.get(name).map_or(0.0, |samples| {
        samples
            .iter()
            .filter(|(labels, _)| {
                want.iter()
                    .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|(_, v)| v)
            .sum()
    })
}

/// Scrapes until `done` holds, for at most 20 s.
async fn scrape_until(
    url: &str,
    what: &str,
    done: impl Fn(&tokenmeter_tests::gaie::Exposition) -> bool,
) -> tokenmeter_tests::gaie::Exposition {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let exposition = parse(&scrape(url).await);
        if done(&exposition) {
            return exposition;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} within 20 s: waiting by reason {:?}, LoRA info {:?}",
            exposition
                .samples
                .get("vllm:num_requests_waiting_by_reason"),
            exposition.samples.get("vllm:lora_requests_info"),
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// With `max_loras` 1, a request on a second adapter waits while the first adapter runs, though
/// the batch has room: `vllm:num_requests_waiting_by_reason{reason="deferred"}` counts it (as
/// vLLM counts a request held back by its LoRA budget), and `vllm:lora_requests_info` lists it
/// waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_the_lora_budget_waits_deferred() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = Config::default();
    config.profile = MetricsProfile::Vllm;
    config.served_model_name = vec!["base".into(), "lora-a".into(), "lora-b".into()];
    config.max_loras = 1;
    config.max_batch = 4;
    let server = Server::start(config, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = server.url();
    let client = reqwest::Client::new();
    let long = serde_json::json!({
        "model": "lora-a",
        "messages": [{"role": "user", "content": "Hello there"}],
        "max_tokens": 300,
        "stream": true,
    });
    let first = {
        let (client, url) = (client.clone(), url.clone());
        tokio::spawn(async move {
            let response = client
                .post(format!("{url}/v1/chat/completions"))
                .header("content-type", "application/json")
                .body(long.to_string())
                .send()
                .await
                .expect("send");
            let status = response.status().as_u16();
            let _ = response.bytes().await;
            status
        })
    };
    scrape_until(&url, "the first request runs", |e| {
        total(e, "vllm:num_requests_running", &[]) == 1.0
    })
    .await;
    let second = tokio::spawn(stream(client.clone(), url.clone(), "lora-b"));
    let seen = scrape_until(&url, "the second request deferred", |e| {
        total(
            e,
            "vllm:num_requests_waiting_by_reason",
            &[("reason", "deferred")],
        ) == 1.0
    })
    .await;
    assert_eq!(total(&seen, "vllm:num_requests_running", &[]), 1.0);
    assert_eq!(
        total(
            &seen,
            "vllm:num_requests_waiting_by_reason",
            &[("reason", "capacity")]
        ),
        0.0
    );
    let current: Vec<_> = seen.samples["vllm:lora_requests_info"]
        .iter()
        .filter(|(_, v)| *v > 0.0)
        .collect();
    assert_eq!(current.len(), 1, "{current:?}");
    assert_eq!(current[0].0["running_lora_adapters"], "lora-a");
    assert_eq!(current[0].0["waiting_lora_adapters"], "lora-b");
    let statuses = tokio::time::timeout(Duration::from_secs(60), async {
        (first.await.expect("first"), second.await.expect("second"))
    })
    .await
    .expect("both end within their deadline");
    assert_eq!(statuses, (200, 200));
    server.shutdown().await.unwrap();
}
