//! A sweep as code: `Plan::sweep` runs a few rates against the simulated server started
//! in-process, over real HTTP on loopback, and returns each step's offered and served rate,
//! attainment with its interval, and the capacity — what `tokenmeter bench --sweep` prints.

use std::time::Duration;

use tokenmeter_bench::{Plan, SweepRates};
use tokenmeter_server::{Config, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_of_given_rates_reports_each_step_and_the_capacity() -> anyhow::Result<()> {
    let server = Server::start(Config::default(), "127.0.0.1:0".parse()?).await?;
    let plan = Plan::builder()
        .url(&server.url())
        .input_tokens(64)
        .output_tokens(8)
        .slo("ttft=2s,tpot=200ms")
        .seed(3)
        .requests(12)
        .sweep(SweepRates::Given(vec![10.0, 30.0]))
        .sweep_target(0.5)
        .build()?;
    // Bounded: two steps of 12 requests (at most 3 rounds each); generous for a loaded machine.
    let sweep = tokio::time::timeout(Duration::from_secs(60), plan.sweep()).await;
    server.shutdown().await?;
    let sweep = sweep.expect("the sweep finishes within its deadline")?;

    let offered: Vec<f64> = sweep.steps.iter().map(|s| s.offered_rate).collect();
    assert_eq!(offered, [10.0, 30.0], "the given rates, in order");
    assert_eq!(sweep.target, 0.5);
    for step in &sweep.steps {
        assert!(
            step.requests >= 11,
            "12 sent, the first is the warm-up: {step:?}"
        );
        assert!((0.0..=1.0).contains(&step.attainment), "{step:?}");
        let (lo, hi) = step.attainment_interval.expect("requests were judged");
        assert!(lo <= step.attainment && step.attainment <= hi, "{step:?}");
        assert!(step.served_rate.is_some_and(|r| r > 0.0), "{step:?}");
        if step.passed {
            assert!(
                step.kept_up && (lo >= 0.5 || step.attainment >= 0.5),
                "{step:?}"
            );
        }
    }
    let capacity = sweep
        .capacity
        .expect("a rate of 10 req/s passes on the simulator");
    let best = sweep.best_served_rate().expect("steps were served");
    assert!(
        capacity > 0.0 && capacity <= best + 1e-9,
        "{capacity} > best served {best}"
    );
    assert!(sweep.steps.iter().any(|s| s.passed));
    Ok(())
}

#[test]
fn a_plan_says_which_way_it_runs_and_names_a_wrong_sweep_setting() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let sweep = Plan::builder().sweep(SweepRates::Auto).build()?;
    let err = runtime.block_on(sweep.run()).unwrap_err().to_string();
    assert!(err.contains("Plan::sweep"), "{err}");
    let single = Plan::builder().build()?;
    let err = runtime.block_on(single.sweep()).unwrap_err().to_string();
    assert!(err.contains("not a sweep"), "{err}");

    let wrong = |builder: tokenmeter_bench::PlanBuilder| builder.build().unwrap_err().to_string();
    let err = wrong(Plan::builder().sweep(SweepRates::Given(vec![5.0, 0.0])));
    assert!(err.contains("sweep rate 0"), "{err}");
    let err = wrong(Plan::builder().sweep(SweepRates::Given(vec![])));
    assert!(err.contains("SweepRates::Auto"), "{err}");
    let err = wrong(Plan::builder().sweep(SweepRates::Auto).sweep_target(1.5));
    assert!(err.contains("sweep target 1.5"), "{err}");
    let err = wrong(Plan::builder().sweep_resolution(0.0));
    assert!(err.contains("resolution"), "{err}");
    let err = wrong(Plan::builder().sweep_step_duration(Duration::ZERO));
    assert!(err.contains("step duration"), "{err}");
    Ok(())
}
