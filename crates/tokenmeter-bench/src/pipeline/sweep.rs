//! `--sweep` on a prepared client: each rate in turn (given, or searched), every request kept.

use crate::args::BenchArgs;
use crate::collect::Collector;
use crate::interrupt::Interrupt;
use crate::run_block::RunInfo;
use crate::sweep::{self, SweepResult};
use crate::validate::Validated;

use super::prepare::Prepared;

/// A finished sweep: what was run, the steps and capacities, and every request of every step.
pub(crate) struct Swept {
    /// The run's description; its load reads `sweep`.
    pub(crate) info: RunInfo,
    /// The steps and the capacities.
    pub(crate) result: SweepResult,
    /// Every request of every step (its trace line already written).
    pub(crate) collector: Collector,
}

/// Runs the sweep of `rates` (empty: searched) to its end or to `stop`. With `narrate`, each
/// step's line and the sweep's warnings go to stderr as they come (the command's); without,
/// nothing is printed (the warnings are in the result).
pub(crate) async fn sweep(
    args: &BenchArgs,
    plan: &Validated,
    rates: &[f64],
    prepared: Prepared,
    stop: &Interrupt,
    narrate: bool,
) -> Swept {
    let Prepared {
        client,
        mut info,
        mut rng,
        mut collector,
        ..
    } = prepared;
    let result = sweep::run(
        args,
        plan,
        rates,
        client,
        &mut rng,
        stop,
        &mut collector,
        narrate,
    )
    .await;
    info.load = "sweep".to_owned();
    Swept {
        info,
        result,
        collector,
    }
}
