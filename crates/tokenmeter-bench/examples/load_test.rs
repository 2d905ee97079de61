//! A load test as code, against your own server: `TOKENMETER_URL` names it (a base URL such
//! as `http://127.0.0.1:8000/v1`, with `OPENAI_API_KEY` for a key); without it, the
//! simulated server is started in-process. The plan is short; the objectives are checked and
//! the process exits 1 when one is missed, so a CI job can run it as it is:
//!
//! ```sh
//! TOKENMETER_URL=http://127.0.0.1:8000/v1 cargo run -p tokenmeter-bench --example load_test
//! ```

use std::process::ExitCode;

use tokenmeter_bench::Plan;
use tokenmeter_server::{Config, Server};

/// TTFT p95 must stay under this, in seconds.
const TTFT_P95_S: f64 = 2.0;
/// Goodput (requests/s meeting every objective) must reach this.
const MIN_GOODPUT: f64 = 1.0;

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let (url, server) = match std::env::var("TOKENMETER_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let server = Server::start(Config::default(), "127.0.0.1:0".parse()?).await?;
            (server.url(), Some(server))
        }
    };
    let run = Plan::builder()
        .url(&url)
        .requests(40)
        .rate(20.0)
        .input_tokens(256)
        .output_tokens(32)
        .slo("ttft=2s,tpot=200ms")
        .seed(7)
        .build()?
        .run()
        .await?;
    if let Some(server) = server {
        server.shutdown().await?;
    }
    println!(
        "{} requests, {} succeeded; TTFT p95 {:.1} ms; goodput {:.2} req/s; attainment {:.1}%",
        run.requests(),
        run.successful(),
        run.ttft().p95 * 1e3,
        run.goodput(),
        run.attainment() * 100.0
    );
    let mut failed = Vec::new();
    if run.errors() > 0 {
        failed.push(format!("{} requests failed", run.errors()));
    }
    if run.ttft().p95 >= TTFT_P95_S {
        failed.push(format!("TTFT p95 {:.3} s ≥ {TTFT_P95_S} s", run.ttft().p95));
    }
    if run.goodput() < MIN_GOODPUT {
        failed.push(format!(
            "goodput {:.2} req/s < {MIN_GOODPUT}",
            run.goodput()
        ));
    }
    if failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("load test failed: {}", failed.join("; "));
    Ok(ExitCode::FAILURE)
}
