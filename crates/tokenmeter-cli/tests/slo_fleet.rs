//! Fleet SLOs: three simulated servers (in process) with the same SLO spec, scraped by one real
//! Prometheus evaluating the rules `tokenmeter slo rules` generated. The rules' fleet goodput
//! and attainment equal the sums of the three processes' own counts.

#[path = "serve_support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use support::slo::write_chat_spec;
use support::{Hosted, Target};
use tokenmeter_server::Config;
use tokenmeter_slo::SloSpec;
use tokenmeter_tests::TempDir;
use tokenmeter_tests::prometheus::{Job, Prometheus};

/// Sends `n` chat requests at once to `addr` and waits for every answer.
async fn load(addr: SocketAddr, n: usize) {
    let client = support::http::reqwest_client();
    let url = format!("http://{addr}/v1/chat/completions");
    let body = r#"{"model":"sim-llama-3-8b","messages":[{"role":"user","content":"tell me a story"}],"max_tokens":12}"#;
    let requests = (0..n).map(|_| {
        let request = client
            .post(&url)
            .header("content-type", "application/json")
            .body(body)
            .send();
        async move {
            if let Ok(response) = request.await {
                let _ = response.bytes().await;
            }
        }
    });
    futures_util::future::join_all(requests).await;
}

#[test]
fn fleet_goodput_and_attainment_equal_the_sums_of_the_replicas() {
    let dir = TempDir::new("fleet");
    let spec_path = write_chat_spec(&dir.0, "25ms");
    let spec = spec_path.to_str().expect("a UTF-8 path");
    let rules = dir.0.join("rules.yml");
    let status = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .args(["slo", "rules", "--spec"])
        .arg(spec)
        .arg("--out")
        .arg(&rules)
        .status()
        .expect("tokenmeter slo rules runs");
    assert!(status.success(), "tokenmeter slo rules failed");

    // Three replicas that fare differently: a healthy one, one with failures, one whose small
    // batch queues requests past the 25 ms TTFT threshold.
    let text = std::fs::read_to_string(&spec_path).expect("read the SLO spec");
    let config = Config::default().slo_spec(SloSpec::from_toml(&text).expect("a valid SLO spec"));
    let servers = [
        Hosted::start(config.clone().seed(1)),
        Hosted::start(config.clone().seed(2).error_rate(0.3)),
        Hosted::start(config.seed(3).max_batch(2)),
    ];
    let names = ["replica-a", "replica-b", "replica-c"];
    let jobs: Vec<Job<'_>> = servers
        .iter()
        .zip(names)
        .map(|(s, name)| Job {
            name,
            target: s.addr,
            path: "/metrics",
        })
        .collect();
    let prometheus = Prometheus::start_with_rules(&jobs, &[&rules]);
    // The counters exist at zero from the start; let Prometheus see them there first, so that
    // rate() counts the whole load.
    prometheus.wait_for_value(
        r#"count(tokenmeter_slo_requests_total{slo_class="chat"} == 0)"#,
        3.0,
        Duration::from_secs(20),
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        futures_util::future::join3(
            load(servers[0].addr, 20),
            load(servers[1].addr, 30),
            load(servers[2].addr, 24),
        )
        .await;
    });

    let sum = |series: &str| servers.iter().map(|s| s.sample(series)).sum::<f64>();
    let total = sum(r#"tokenmeter_slo_requests_total{slo_class="chat"}"#);
    let good = sum(r#"tokenmeter_slo_requests_good_total{slo_class="chat"}"#);
    let good_tokens = sum(r#"tokenmeter_slo_output_tokens_good_total{slo_class="chat"}"#);
    assert_eq!(total, 74.0, "every request was judged");
    assert!(
        good > 0.0 && good < total,
        "the replicas differ: {good} good of {total}"
    );

    // Wait until Prometheus has scraped the final counts and evaluated the rules on them.
    prometheus.wait_for_value(
        r#"tokenmeter:slo_requests:sum{slo_class="chat"}"#,
        total,
        Duration::from_secs(30),
    );
    prometheus.wait_for_value(
        r#"tokenmeter:slo_output_tokens_good:sum{slo_class="chat"}"#,
        good_tokens,
        Duration::from_secs(10),
    );
    assert_eq!(
        prometheus.value(r#"tokenmeter:slo_requests_good:sum{slo_class="chat"}"#),
        Some(good)
    );
    let attainment = prometheus
        .value(r#"tokenmeter:slo_attainment:ratio{slo_class="chat"}"#)
        .expect("fleet attainment");
    assert!(
        (attainment - good / total).abs() < 1e-12,
        "fleet attainment {attainment} vs {}",
        good / total
    );
    // The windowed rules see the same traffic once rate() has two samples of every counter.
    let window = Duration::from_secs(20);
    prometheus.wait_until(
        r#"tokenmeter:slo_goodput:requests_rate5m{slo_class="chat"}"#,
        window,
        |v| v > 0.0,
    );
    let errors = prometheus.wait_until(
        r#"slo:sli_error:ratio_rate5m{slo_class="chat",objective="success_rate"}"#,
        window,
        |v| v > 0.0,
    );
    assert!(
        errors < 1.0,
        "the failing replica shows in the fleet SLI, not more: {errors}"
    );
}
