//! `--warmup N`: requests sent before the run at its first stage's load, and forgotten.

use std::sync::Arc;

use crate::args::BenchArgs;
use crate::client::Client;
use crate::collect::Collector;
use crate::interrupt::Interrupt;
use crate::progress::Progress;
use crate::schedule::Stage;
use crate::seeds::{self, Purpose};
use crate::validate::Validated;
use crate::{runner, saturation, workload};

/// Sends `--warmup` requests at the first stage's load and forgets them: prompts of their own
/// (the run's prompts do not depend on the warm-up), nothing recorded.
pub(super) async fn warm_up(
    args: &BenchArgs,
    plan: &Validated,
    client: Arc<Client>,
    stop: &Interrupt,
) {
    let mut rng = seeds::rng(args.seed, Purpose::WarmUp);
    let specs = workload::specs(&plan.source, args.load.warmup, &mut rng);
    let mut progress = Progress::new(args.load.warmup as u64, "warm-up", !args.no_progress);
    let stage = Stage::requests(plan.stages[0].load, args.load.warmup);
    let mut done = Collector::new(None);
    runner::run_stages(
        client,
        specs.into_iter(),
        &[stage],
        &mut rng,
        &mut progress,
        stop,
        &mut done,
        &mut saturation::Watch::off(),
    )
    .await;
    progress.done();
    let done = done.finish().0.measured;
    let ok = done.iter().filter(|m| m.succeeded()).count();
    crate::console::err(&format!(
        "warm-up: {} requests sent ({ok} succeeded), left out of the results\n",
        done.len()
    ));
}
