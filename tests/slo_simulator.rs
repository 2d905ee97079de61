//! A queue builds in the simulator: the saturation warning fires before the TTFT objective is
//! breached, and the diagnosis names queueing. Paused tokio time: the run takes no wall time.

use std::time::Duration;

use futures_util::StreamExt;
use tokenmeter::{Clock, Meter};
use tokenmeter_sim::{Engine, GenerateRequest, SimConfig};
use tokenmeter_slo::diagnosis::Cause;
use tokenmeter_slo::{LatencyMetric, Objective, SaturationLevel, SloMonitor, SloSpec};

#[tokio::test(start_paused = true)]
async fn saturation_warns_before_the_ttft_breach_and_the_diagnosis_names_queueing() {
    let spec = SloSpec::builder()
        .objective(Objective::latency(
            LatencyMetric::Ttft,
            95.0,
            Duration::from_millis(500),
        ))
        .waiting_max(20.0)
        .saturation_horizon(Duration::from_secs(60))
        .build()
        .expect("spec");
    let clock = Clock::tokio();
    let monitor = SloMonitor::new(spec, clock.clone());
    let meter = Meter::builder().clock(clock).sink(monitor.clone()).build();
    let engine = Engine::builder()
        .meter(meter)
        .config(SimConfig::default().max_batch(8).seed(7))
        .build()
        .expect("engine");

    // 8 slots, 64 tokens each at ~8 ms a step: about 15 requests a second fit. 10 a second for
    // 30 s is calm; then 25 a second builds a queue.
    let mut warned_at = None;
    let mut breached_at = None;
    let mut calm_warnings = 0;
    let step = Duration::from_millis(20);
    let mut t = Duration::ZERO;
    let mut since_arrival = Duration::ZERO;
    while t < Duration::from_secs(90) {
        let gap = if t < Duration::from_secs(30) {
            Duration::from_millis(100)
        } else {
            Duration::from_millis(40)
        };
        if since_arrival >= gap {
            since_arrival = Duration::ZERO;
            let tokens = engine
                .submit(GenerateRequest::chat(100, 64))
                .expect("admitted");
            tokio::spawn(tokens.count());
        }
        tokio::time::sleep(step).await;
        t += step;
        since_arrival += step;
        let status = monitor.status();
        let warning = status
            .saturation
            .iter()
            .any(|s| s.level != SaturationLevel::Ok);
        if t < Duration::from_secs(30) {
            calm_warnings += usize::from(warning);
        } else if warning && warned_at.is_none() {
            warned_at = Some(t);
        }
        let attainment = status.classes[0].objectives[0].windows[0].attainment;
        if breached_at.is_none() && attainment.is_some_and(|a| a < 0.95) {
            breached_at = Some(t);
        }
    }
    assert_eq!(calm_warnings, 0, "no warning while the engine keeps up");
    let warned = warned_at.expect("the queue must raise a saturation warning");
    let breached = breached_at.expect("the queue must break the TTFT objective");
    assert!(
        warned < breached,
        "warning at {warned:?} must precede the breach at {breached:?}"
    );

    let status = monitor.status();
    let diagnosis = status.classes[0]
        .diagnoses
        .iter()
        .find(|d| d.objective == "ttft_p95")
        .unwrap_or_else(|| panic!("a TTFT diagnosis in {status}"));
    assert_eq!(diagnosis.cause, Cause::Queueing, "{}", diagnosis.sentence);
    assert!(diagnosis.share > 0.8, "{}", diagnosis.sentence);
    println!("warned at {warned:?}, breached at {breached:?}\n{status}");
}
