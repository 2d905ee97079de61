//! One run (not a sweep) to its end: the warm-up, the measured requests in their stages, the
//! time slices, and the finished [`Run`].

use tokenmeter_slo::batching::BatchAnalysis;

use super::prepare::Prepared;
use super::warm_up::warm_up;
use crate::args::BenchArgs;
use crate::finished::Run;
use crate::interrupt::{self, Interrupt};
use crate::progress::Progress;
use crate::runner::{self, Load};
use crate::schedule::Stage;
use crate::seeds::{self, Purpose};
use crate::summary;
use crate::validate::Validated;
use crate::{saturation, selfcheck, slices, workload};

/// Runs a single run (not a sweep) to its end: warm-up, the measured requests, the slices.
/// Returns the finished run and the trace file's end (an error if a line was not written).
pub(crate) async fn measure(
    args: &BenchArgs,
    plan: &Validated,
    prepared: Prepared,
    base: &reqwest::Url,
    server_batching: Option<&BatchAnalysis>,
    stop: &Interrupt,
) -> anyhow::Result<(Run, anyhow::Result<()>)> {
    let Prepared {
        client,
        api,
        info,
        monitor,
        shard,
        mut rng,
        mut collector,
    } = prepared;
    if args.load.warmup > 0 {
        warm_up(args, plan, client.clone(), stop).await;
    }
    let mut cancel_rng = seeds::rng(args.seed, Purpose::Cancellations);
    let injection = args.workload.injection();
    let classes = args.workload.slo_classes()?;
    let specs = workload::Specs::new(
        &plan.source,
        seeds::rng(args.seed, Purpose::Prompts),
        args.workload.think_time,
    )
    .map(move |mut spec| {
        if let Some(injection) = &injection {
            spec.cancel = injection.pick(&mut cancel_rng);
            for turn in &mut spec.next {
                turn.cancel = injection.pick(&mut cancel_rng);
            }
        }
        spec
    })
    .enumerate()
    .map(move |(k, mut spec)| {
        spec.skip = shard.is_some_and(|s| !s.owns(k as u64));
        // Names were checked against the classes when the dataset was read.
        spec.slo = classes
            .tag(k as u64, spec.slo_class.as_deref())
            .ok()
            .flatten();
        for turn in &mut spec.next {
            turn.slo = spec.slo;
        }
        spec
    });
    if let Some(at) = args.shard.start_at {
        interrupt::before_the_run(stop, "the wait for --start-at", at.wait()).await?;
    }
    let planned: Option<usize> = plan.stages.iter().map(Stage::planned).sum();
    let label = if plan.stages.len() > 1 {
        "stages"
    } else {
        "bench"
    };
    let mut progress = Progress::new(planned.unwrap_or(0) as u64, label, !args.no_progress);
    let embedded = server_batching.is_some();
    let view = slices::View::start(&args.slices, &client, base, embedded).await?;
    let cpu_before = selfcheck::process_cpu_time();
    let wall = std::time::Instant::now();
    let mut watch = saturation::Watch::new(
        args.stop_on_saturation
            .unwrap_or(false)
            .then(|| constant_rate(&plan.stages))
            .flatten(),
        args.max_error_rate,
    );
    runner::run_stages(
        client,
        specs,
        &plan.stages,
        &mut rng,
        &mut progress,
        stop,
        &mut collector,
        &mut watch,
    )
    .await;
    let client_cpu = selfcheck::process_cpu_time()
        .zip(cpu_before)
        .map(|(after, before)| (after.saturating_sub(before), wall.elapsed()));
    progress.done();
    let (done, written) = collector.finish();
    let slices = view.finish(&done.measured, &done.gaps, &args.slo).await;
    let planned = planned.unwrap_or(done.measured.len());
    let interrupted = stop.interrupted().then_some((done.measured.len(), planned));
    let summary = summary::summarize(&done.measured, &done.gaps, &args.slo);
    let run = Run {
        args: args.clone(),
        stages: plan.stages.clone(),
        info,
        api,
        collected: done,
        slices,
        monitor,
        server_batching: server_batching.cloned(),
        interrupted,
        planned,
        client_cpu,
        stopped_early: watch.stopped().cloned(),
        summary,
    };
    Ok((run, written))
}

/// The rate of a run of one constant open-loop stage (no ramp, finite): the one whose
/// saturation can be judged.
fn constant_rate(stages: &[Stage]) -> Option<f64> {
    match stages {
        [one] => match one.load {
            Load::Rate {
                rate, ramp: None, ..
            } if rate.is_finite() => Some(rate),
            _ => None,
        },
        _ => None,
    }
}
