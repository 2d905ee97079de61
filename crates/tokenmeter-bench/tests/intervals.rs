//! How sure is each figure: a run of 200 requests (the bench's default size) against the
//! simulated server in-process, over real HTTP on loopback, reports every figure with its
//! confidence interval — in the table (`±`, and `—` where 200 requests cannot bound p99), in
//! the JSON (both ends, and what was too few) and in the HTML (error bars on the CDFs).

use tokenmeter::report::Bounds;
use tokenmeter_bench::Plan;
use tokenmeter_server::{Config, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_figure_of_a_200_request_run_has_its_interval_or_says_why_not() -> anyhow::Result<()>
{
    let server = Server::start(Config::default(), "127.0.0.1:0".parse()?).await?;
    let run = Plan::builder()
        .url(&server.url())
        .requests(200)
        .rate(400.0)
        .input_tokens(16)
        .output_tokens(8)
        .slo("ttft=2s")
        .seed(3)
        .build()?
        .run()
        .await?;
    server.shutdown().await?;
    assert_eq!(run.successful(), 200);

    let iv = run.intervals();
    assert_eq!(iv, run.intervals(), "seeded: the same every time");
    assert_eq!(
        iv.ttft.p99,
        Bounds::TooFew {
            have: 200,
            need: 368
        }
    );
    let (lo, hi) = iv.ttft.p50.interval().unwrap();
    assert!(lo <= run.ttft().p50 && run.ttft().p50 <= hi);
    let itl = iv.itl.expect("an ITL interval");
    let (lo, hi) = itl.p50.interval().unwrap();
    assert!(lo <= run.itl().p50 && run.itl().p50 <= hi, "{lo} {hi}");
    assert_eq!(iv.itl_resamples, 1000);

    let table = run.table();
    assert!(table.contains("±: 95% confidence interval"), "{table}");
    let ttft = table
        .lines()
        .find(|l| l.trim_start().starts_with("TTFT (ms)"))
        .unwrap();
    // p50, p90, p95 with ±; p99 a dash, not a number that looks exact; the mean with ±.
    assert_eq!(ttft.matches('±').count(), 4, "{ttft}");
    assert!(ttft.contains('—'), "{ttft}");
    assert!(
        table.contains("p99 (have 200, need 368): TTFT, TTST, TPOT, NTPOT, E2E"),
        "{table}"
    );
    let throughput = table.lines().find(|l| l.contains("throughput ")).unwrap();
    let half: f64 = throughput
        .split('±')
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()?;
    let rate = run.requests() as f64 / run.duration().as_secs_f64();
    assert!(
        half > 0.0 && half < rate,
        "a plausible interval: {throughput}"
    );
    let throughput = table.lines().find(|l| l.contains("throughput ")).unwrap();
    assert!(
        throughput.contains("req/s") && throughput.contains('±'),
        "{throughput}"
    );
    assert!(table.contains("attainment 100.0% ["), "{table}");
    // The summary's intervals (from their header to the outcomes line) keep within 120
    // columns (the run's description above is as long as its flags).
    let summary: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("±:"))
        .take_while(|l| !l.contains("outcomes "))
        .collect();
    assert!(
        summary.iter().all(|l| l.chars().count() <= 120),
        "{}",
        summary.join("\n")
    );

    let json = run.to_json();
    let s = &json["summary"];
    assert_eq!(s["ttft"]["count"], 200, "the existing keys are kept");
    assert_eq!(s["ttft"]["ci"]["level"], 0.95);
    assert!(s["ttft"]["ci"]["p99"].is_null());
    assert_eq!(s["ttft"]["too_few"]["p99"]["need"], 368);
    let p50 = s["ttft"]["ci"]["p50"].as_array().unwrap();
    assert_eq!(p50[0].as_f64(), iv.ttft.p50.interval().map(|i| i.0));
    assert!(
        s["itl"]["ci"]["p99"].is_array(),
        "1,400 gaps bound the ITL's p99"
    );
    assert!(s["ci"]["attainment"].is_array() && s["ci"]["success_rate"].is_array());
    assert_eq!(
        run.to_vllm_json()["completed"],
        200,
        "vLLM's format unchanged"
    );

    let html = run.html()?;
    // The bars' colour: an error bar on each CDF for each percentile with an interval.
    assert!(
        html.matches("#5A5A5A").count() >= 3 * 3 * 3,
        "error bars missing"
    );
    assert!(html.contains(" ±"), "interval cells missing");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_level_is_a_setting_and_a_wrong_one_is_refused() -> anyhow::Result<()> {
    let run = Plan::builder()
        .requests(10)
        .rate(f64::INFINITY)
        .output_tokens(4)
        .confidence("99%")
        .build()?
        .run()
        .await?;
    assert_eq!(run.intervals().level.level(), 0.99);
    assert!(run.table().contains("±: 99% confidence interval"));
    assert_eq!(run.to_json()["summary"]["ci"]["level"], 0.99);
    let error = Plan::builder().confidence("100").build().unwrap_err();
    assert!(format!("{error:#}").contains("--confidence"), "{error:#}");
    Ok(())
}
