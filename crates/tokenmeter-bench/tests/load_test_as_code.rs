//! A load test as code: what a Rust inference server's team puts in its own `cargo test`.
//! The simulated server is started in-process (`tokenmeter-server`), a short plan runs
//! against it over real HTTP on loopback, and the test asserts on TTFT p95, goodput and the
//! outcomes. `examples/load_test.rs` is the same against a URL from the environment.

use tokenmeter_bench::Plan;
use tokenmeter_server::{Config, Server};

/// The objectives the test holds the server to: the simulator's default engine answers a
/// 128-token prompt well inside them (its prefill is milliseconds; a 2-core machine under
/// load adds tens).
const SLO: &str = "ttft=2s,tpot=200ms";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_process_server_holds_its_objectives() -> anyhow::Result<()> {
    let server = Server::start(Config::default(), "127.0.0.1:0".parse()?).await?;
    let run = Plan::builder()
        .url(&server.url())
        .requests(30)
        .rate(50.0)
        .input_tokens(128)
        .output_tokens(16)
        .slo(SLO)
        .seed(1)
        .build()?
        .run()
        .await?;
    server.shutdown().await?;

    assert_eq!(run.requests(), 30);
    assert_eq!(
        run.successful(),
        30,
        "errors: {:?}",
        run.errors_by_class().collect::<Vec<_>>()
    );
    assert_eq!(run.errors(), 0);
    assert_eq!(run.ttft().count, 30);
    assert!(run.ttft().p95 < 2.0, "TTFT p95 {:.3} s", run.ttft().p95);
    assert!(run.ttft().p95 > 0.0);
    // Each request asked for 16 tokens and the simulator honours max_tokens.
    assert_eq!(run.output_tokens().max, 16.0);
    assert!(run.goodput() > 0.0);
    assert_eq!(run.attainment(), 1.0, "every request met {SLO}");
    assert_eq!(run.records().count(), 30);

    // The command's outputs are functions of the finished run.
    let table = run.table();
    assert!(
        table.contains("TTFT") && table.contains("goodput"),
        "{table}"
    );
    let json = run.to_json();
    assert_eq!(json["summary"]["ttft"]["count"], 30);
    assert_eq!(json["summary"]["requests"], 30);
    let vllm = run.to_vllm_json();
    assert_eq!(vllm["completed"], 30);
    assert_eq!(vllm["num_prompts"], 30);
    let html = run.html()?;
    assert!(
        html.contains("<svg") && html.ends_with("</html>\n"),
        "{}",
        &html[html.len() - 80..]
    );
    Ok(())
}

/// A plan the objectives cannot hold shows as attainment, not as an error: a 1 µs TTFT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missed_objective_is_a_number_not_an_error() -> anyhow::Result<()> {
    let server = Server::start(Config::default(), "127.0.0.1:0".parse()?).await?;
    let run = Plan::builder()
        .url(&server.url())
        .requests(5)
        .output_tokens(4)
        .slo("ttft=1us")
        .build()?
        .run()
        .await?;
    server.shutdown().await?;
    assert_eq!(run.successful(), 5);
    assert_eq!(run.attainment(), 0.0);
    assert_eq!(run.goodput(), 0.0);
    Ok(())
}

/// Settings that are wrong are refused by `build`, naming what is wrong.
#[test]
fn a_wrong_setting_is_named() {
    let error = Plan::builder().url("not a url").build().unwrap_err();
    assert!(error.to_string().contains("is not a URL"), "{error}");
    let error = Plan::builder().slo("ttft=fast").build().unwrap_err();
    assert!(error.to_string().contains("ttft"), "{error}");
    // Values no flag would take are refused too, naming the setting (a rate of 0 would
    // otherwise never release a request).
    let error = Plan::builder().rate(0.0).build().unwrap_err();
    assert!(
        error.to_string().starts_with("load.rate (--rate)"),
        "{error}"
    );
    let error = Plan::builder().requests(0).build().unwrap_err();
    assert!(
        error.to_string().contains("--requests must be at least 1"),
        "{error}"
    );
}
