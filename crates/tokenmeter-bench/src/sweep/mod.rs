//! `--sweep`: finds the highest request rate at which SLO attainment reaches the target
//! (DistServe's goodput, `docs/src/reference/metrics.md` §5), searching both ways: up by doubling from a
//! passing rate, down by halving from a failing one, then by bisection between the highest
//! passing and the lowest failing rate until they are within `--sweep-resolution` of each
//! other. A capacity is stated with its bracket: "≥ R (not reached)" when the highest rate run
//! still passed.

mod capacity;
mod search;
mod step;

pub(crate) use capacity::{Capacity, capacity_at};
pub(crate) use step::SweepStep;

use std::sync::Arc;

use rand::rngs::StdRng;
use serde::Serialize;

use crate::args::BenchArgs;
use crate::client::Client;
use crate::collect::Collector;
use crate::interrupt::Interrupt;
use crate::progress::Progress;
use crate::reqs::Reqs;
use crate::runner::{self, Load};
use crate::saturation::Watch;
use crate::slo::Slo;
use crate::validate::Validated as Plan;
use crate::workload;

use capacity::{capacities, capacity};
use search::Rates;
use step::{MAX_EXTENSIONS, judge, short_step};

/// A whole sweep.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SweepResult {
    /// The objectives.
    pub(crate) slo: Slo,
    /// The attainment a rate must reach.
    pub(crate) target: f64,
    /// The search's resolution: it stops when the failing rate is within this fraction above
    /// the passing one.
    pub(crate) resolution: f64,
    /// Every rate run, in order.
    pub(crate) steps: Vec<SweepStep>,
    /// The capacity at the target: the highest passing rate below the lowest failing one.
    pub(crate) capacity: Option<f64>,
    /// The capacity at each attainment goal (the target, 90% and 99%), once each.
    pub(crate) capacities: Vec<Capacity>,
    /// What makes the result less certain (steps too short for a steady state).
    pub(crate) warnings: Vec<String>,
}

/// Runs the sweep: each rate in turn (given, or searched), until the search ends or `stop`.
/// With `narrate`, each step's line and the warnings are written to stderr as they come.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    args: &BenchArgs,
    plan: &Plan,
    rates: &[f64],
    client: Arc<Client>,
    rng: &mut StdRng,
    stop: &Interrupt,
    into: &mut Collector,
    narrate: bool,
) -> SweepResult {
    let rates = if rates.is_empty() {
        Rates::Search {
            start: match plan.load {
                Load::Rate { rate, .. } if args.load.rate.is_some() && rate.is_finite() => rate,
                _ => 2.0,
            },
            resolution: args.sweep_resolution,
        }
    } else {
        Rates::Given(rates.to_vec())
    };
    let max_concurrency = match plan.load {
        Load::Rate {
            max_concurrency, ..
        } => max_concurrency,
        Load::Concurrency(_) | Load::Replay { .. } => None,
    };
    let mut steps: Vec<SweepStep> = Vec::new();
    let mut warnings = Vec::new();
    let stop_on_saturation = args.stop_on_saturation.unwrap_or(true);
    while let Some(rate) = rates.next(&steps, args.sweep_target) {
        if stop.interrupted() {
            break;
        }
        let n = args.requests_at(rate);
        let load = Load::Rate {
            rate,
            kind: args.load.arrival,
            max_concurrency,
            burstiness: args.load.burstiness,
            ramp: None,
        };
        let first = into.len();
        into.set_rate(Some(rate));
        let mut watch = Watch::new(stop_on_saturation.then_some(rate), args.max_error_rate);
        let mut step = SweepStep::default();
        loop {
            // Ids go on from the step's earlier requests: (rate, id) names one trace line.
            let done = Reqs::from(&into.done().measured).tail(first);
            let taken = done.iter().map(|m| m.id + 1).max();
            let mut specs = workload::specs(&plan.source, n, rng);
            for spec in &mut specs {
                spec.id += taken.unwrap_or(0);
                for turn in &mut spec.next {
                    turn.id += taken.unwrap_or(0);
                }
            }
            let label = format!("{rate} req/s");
            let mut progress = Progress::new(specs.len() as u64, &label, !args.no_progress);
            runner::run_until(
                client.clone(),
                specs,
                load,
                rng,
                &mut progress,
                stop,
                into,
                &mut watch,
            )
            .await;
            progress.done();
            let extended = step.extended;
            step = judge(
                rate,
                Reqs::from(&into.done().measured).tail(first),
                into,
                args,
                &watch,
            );
            step.extended = extended;
            if step.kept_up
                && step.undecided(args.sweep_target)
                && step.extended < MAX_EXTENSIONS
                && !stop.interrupted()
            {
                step.extended += 1;
                if narrate {
                    crate::console::err(&format!(
                        "sweep: {rate} req/s → attainment {:.1}%, its 95% interval straddles the \
                         target: {n} more requests\n",
                        step.summary.attainment * 100.0
                    ));
                }
                continue;
            }
            break;
        }
        if step.kept_up && step.undecided(args.sweep_target) {
            warnings.push(format!(
                "the sweep step at {rate:.2} req/s stayed undecided after {} requests (attainment \
                 {:.1}%, its 95% interval straddling the target): its point estimate decided",
                step.summary.requests,
                step.summary.attainment * 100.0
            ));
        }
        let served = step
            .served_rate
            .map_or("-".to_owned(), |r| format!("{r:.2} req/s"));
        let why = match &step.stopped_early {
            Some(stopped) => format!(" (stopped early: {})", stopped.verdict),
            None if !step.kept_up => " (the server did not keep up)".to_owned(),
            None => String::new(),
        };
        if narrate {
            crate::console::err(&format!(
                "sweep: {rate} req/s → served {served}, attainment {:.1}%, goodput {:.2} req/s{why}\n",
                step.summary.attainment * 100.0,
                step.summary.goodput,
            ));
        }
        warnings.extend(short_step(&step));
        steps.push(step);
    }
    for warning in warnings.iter().filter(|_| narrate) {
        crate::console::warn(warning);
    }
    SweepResult {
        slo: args.slo,
        target: args.sweep_target,
        resolution: args.sweep_resolution,
        capacity: capacity(&steps, args.sweep_target),
        capacities: capacities(&steps, args.sweep_target, args.gpus),
        steps,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::search::{MAX_AUTO_STEPS, round};
    use super::*;
    use crate::summary::BenchSummary;

    fn step(rate: f64, attainment: f64) -> SweepStep {
        SweepStep {
            rate,
            kept_up: true,
            summary: BenchSummary {
                attainment,
                requests: 50,
                ..BenchSummary::default()
            },
            ..SweepStep::default()
        }
    }

    /// Runs a search against a server whose attainment is 1 up to `capacity`, 0 above.
    fn search(start: f64, capacity: f64) -> Vec<SweepStep> {
        let rates = Rates::Search {
            start,
            resolution: 0.1,
        };
        let mut done = Vec::new();
        while let Some(rate) = rates.next(&done, 0.9) {
            done.push(step(rate, if rate <= capacity { 1.0 } else { 0.0 }));
        }
        done
    }

    #[test]
    fn the_search_brackets_the_capacity_from_below_and_from_above() {
        for start in [1.0, 2.0, 100.0, 1000.0] {
            let done = search(start, 13.0);
            let at = capacity_at(&done, 0.9, None);
            let (rate, failed) = (at.rate.unwrap(), at.failed_at.unwrap());
            assert!(rate <= 13.0 && failed > 13.0, "from {start}: {at:?}");
            assert!(failed <= rate * 1.1 + 1e-9, "within the resolution: {at:?}");
            assert!(done.len() <= MAX_AUTO_STEPS, "{}", done.len());
            assert!(at.describe().contains("failed)"), "{}", at.describe());
        }
        let run: Vec<f64> = search(1.0, 13.0).iter().map(|s| s.rate).collect();
        assert_eq!(run[..5], [1.0, 2.0, 4.0, 8.0, 16.0], "doubling first");
        let down: Vec<f64> = search(100.0, 13.0).iter().map(|s| s.rate).collect();
        assert_eq!(down[..4], [100.0, 50.0, 25.0, 12.5], "halving first");
    }

    #[test]
    fn a_capacity_never_reached_is_stated_as_a_lower_bound() {
        let done = vec![step(2.0, 1.0), step(8.0, 0.95), step(32.0, 0.91)];
        let at = capacities(&done, 0.9, Some(2));
        assert_eq!(at.len(), 2, "one capacity per goal: {at:?}");
        assert_eq!((at[0].rate, at[0].failed_at), (Some(32.0), None));
        assert_eq!(at[0].per_gpu, Some(16.0));
        assert!(
            at[0]
                .describe()
                .starts_with("≥ 32.00 req/s, 16.00 req/s per GPU (not reached")
        );
        assert_eq!((at[1].rate, at[1].failed_at), (Some(2.0), Some(8.0)));
        let none = capacity_at(&[step(1.0, 0.2)], 0.9, None);
        assert_eq!(none.describe(), "none (even 1.00 req/s failed)");
        // Given rates all run, and a pass above a failure does not count.
        let rates = Rates::Given(vec![1.0, 3.0]);
        assert_eq!(rates.next(&[step(1.0, 0.2)], 0.9), Some(3.0));
        let noisy = [step(1.0, 1.0), step(2.0, 0.5), step(4.0, 1.0)];
        assert_eq!(capacity(&noisy, 0.9), Some(1.0));
    }

    #[test]
    fn short_steps_are_warned_about_and_rates_are_rounded() {
        let mut short = step(5.0, 1.0);
        short.summary.requests = 10;
        assert!(
            short_step(&short)
                .unwrap()
                .contains("too few for a steady state")
        );
        assert_eq!(short_step(&step(5.0, 1.0)), None);
        assert_eq!(round(14.142_135), 14.1);
        assert_eq!(round(0.123_456), 0.123);
    }
}
