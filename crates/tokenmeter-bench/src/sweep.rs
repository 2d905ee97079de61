//! `--sweep`: finds the highest request rate at which SLO attainment reaches the target
//! (DistServe's goodput, `docs/src/reference/metrics.md` §5), searching both ways: up by doubling from a
//! passing rate, down by halving from a failing one, then by bisection between the highest
//! passing and the lowest failing rate until they are within `--sweep-resolution` of each
//! other. A capacity is stated with its bracket: "≥ R (not reached)" when the highest rate run
//! still passed.

use std::sync::Arc;

use tokenmeter::report::{Z95, wilson};

use rand::rngs::StdRng;
use serde::Serialize;

use crate::args::BenchArgs;
use crate::client::Client;
use crate::collect::Collector;
use crate::interrupt::Interrupt;
use crate::load_check::rate_over;
use crate::measured::Measured;
use crate::progress::Progress;
use crate::runner::{self, Load};
use crate::saturation::{StoppedEarly, Watch};
use crate::slo::Slo;
use crate::summary::{BenchSummary, summarize};
use crate::validate::Validated as Plan;
use crate::workload;

/// Steps of an automatic sweep, at most.
pub(crate) const MAX_AUTO_STEPS: usize = 12;

/// A step with fewer requests than this is too short for a steady state: it is warned about.
pub(crate) const MIN_STEADY_REQUESTS: u64 = 30;

/// One rate of a sweep.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct SweepStep {
    /// Offered rate (requests per second).
    pub(crate) rate: f64,
    /// The summary of the step's requests after its warm-up (see [`judge`]).
    pub(crate) summary: BenchSummary,
    /// Requests sent before the step was judged, left out of its summary (its warm-up).
    pub(crate) warmup_requests: u64,
    /// The rate the server answered at: (n − 1) ÷ the span of the judged successes' ends.
    pub(crate) served_rate: Option<f64>,
    /// The rate the schedule asked for: (n − 1) ÷ the span of the judged requests' due times.
    pub(crate) scheduled_rate: Option<f64>,
    /// The server kept up: not stopped early, and its served rate at least [`SERVED_SHARE`]
    /// of the scheduled rate.
    pub(crate) kept_up: bool,
    /// The Wilson 95% interval of the attainment.
    pub(crate) attainment_interval: Option<(f64, f64)>,
    /// Times the step was extended because the interval straddled the target.
    pub(crate) extended: u32,
    /// Why the step stopped early, if it did.
    pub(crate) stopped_early: Option<StoppedEarly>,
}

/// A step kept up when it served at least this share of its scheduled rate.
pub(crate) const SERVED_SHARE: f64 = 0.9;

/// A step whose attainment interval straddles the target is extended by its own size this
/// many times at most; then the point estimate decides, with a warning.
pub(crate) const MAX_EXTENSIONS: u32 = 2;

impl SweepStep {
    /// Whether the step reached `goal`: the server kept up, and the attainment's interval lies
    /// at or above the goal (its point estimate decides when the interval straddles it).
    pub(crate) fn passes(&self, goal: f64) -> bool {
        self.kept_up
            && match self.attainment_interval {
                Some((lo, _)) if lo >= goal => true,
                Some((_, hi)) if hi < goal => false,
                _ => self.summary.attainment >= goal,
            }
    }

    /// Whether the attainment interval straddles `goal` (more requests would decide it).
    fn undecided(&self, goal: f64) -> bool {
        self.attainment_interval
            .is_some_and(|(lo, hi)| lo < goal && goal <= hi)
    }
}

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

/// The capacity at one attainment goal.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Capacity {
    /// The attainment goal.
    pub(crate) goal: f64,
    /// The capacity (requests per second): the highest offered rate that passed below the
    /// lowest that failed, or the best rate any step was served at when that is lower.
    pub(crate) rate: Option<f64>,
    /// The highest offered rate that passed below the lowest that failed.
    pub(crate) passed_at: Option<f64>,
    /// The lowest rate above it that failed: `None` when the capacity was not reached (every
    /// rate run above it passed).
    pub(crate) failed_at: Option<f64>,
    /// The same per GPU, with `--gpus`.
    pub(crate) per_gpu: Option<f64>,
}

impl Capacity {
    /// In words: `12.5 req/s (15.0 failed)`, `≥ 32.0 req/s (not reached)` or `none (even 1.0
    /// req/s failed)`.
    pub(crate) fn describe(&self) -> String {
        let per_gpu = self
            .per_gpu
            .map_or(String::new(), |g| format!(", {g:.2} req/s per GPU"));
        let served = match (self.rate, self.passed_at) {
            (Some(rate), Some(passed)) if rate < passed => {
                format!(", the best served rate; {passed:.2} req/s offered passed")
            }
            _ => String::new(),
        };
        match (self.rate, self.failed_at) {
            (Some(rate), Some(failed)) => {
                format!("{rate:.2} req/s{per_gpu} ({failed:.2} req/s failed{served})")
            }
            (Some(rate), None) => format!(
                "≥ {rate:.2} req/s{per_gpu} (not reached: the highest rate run still passed)"
            ),
            (None, Some(failed)) => format!("none (even {failed:.2} req/s failed)"),
            (None, None) => "none (no rate was run)".to_owned(),
        }
    }
}

/// The capacity at `goal`: the highest rate that passed below the lowest rate that failed
/// ([`SweepStep::passes`]), never above the highest rate any step was served at.
pub(crate) fn capacity_at(steps: &[SweepStep], goal: f64, gpus: Option<u32>) -> Capacity {
    let lowest_fail = steps
        .iter()
        .filter(|s| !s.passes(goal))
        .map(|s| s.rate)
        .min_by(f64::total_cmp);
    let best_served = steps
        .iter()
        .filter_map(|s| s.served_rate)
        .max_by(f64::total_cmp);
    let passed_at = steps
        .iter()
        .filter(|s| s.passes(goal) && lowest_fail.is_none_or(|f| s.rate < f))
        .map(|s| s.rate)
        .max_by(f64::total_cmp);
    let rate = passed_at.map(|rate| best_served.map_or(rate, |best| rate.min(best)));
    Capacity {
        goal,
        rate,
        passed_at,
        failed_at: lowest_fail,
        per_gpu: rate.zip(gpus).map(|(r, g)| r / f64::from(g)),
    }
}

/// The capacity at the target and at 90% and 99% (each goal once), per GPU when `gpus` is given.
pub(crate) fn capacities(steps: &[SweepStep], target: f64, gpus: Option<u32>) -> Vec<Capacity> {
    let mut goals = vec![target, 0.9, 0.99];
    goals.sort_by(f64::total_cmp);
    goals.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    goals
        .into_iter()
        .map(|goal| capacity_at(steps, goal, gpus))
        .collect()
}

/// The highest passing rate below the lowest failing one at `target`.
pub(crate) fn capacity(steps: &[SweepStep], target: f64) -> Option<f64> {
    capacity_at(steps, target, None).rate
}

/// The warning for a step too short for a steady state, if it is.
pub(crate) fn short_step(step: &SweepStep) -> Option<String> {
    let n = step.summary.requests;
    (n < MIN_STEADY_REQUESTS).then(|| {
        format!(
            "the sweep step at {:.2} req/s had {n} requests, too few for a steady state (at \
             least {MIN_STEADY_REQUESTS}: raise -n)",
            step.rate
        )
    })
}

/// Which rates to run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Rates {
    /// These, in order.
    Given(Vec<f64>),
    /// A search from `start`: doubling while rates pass, halving while they fail, then
    /// bisecting until the failing rate is within `resolution` of the passing one.
    Search {
        /// The first rate.
        start: f64,
        /// The relative resolution, e.g. 0.1.
        resolution: f64,
    },
}

impl Rates {
    /// The next rate to run after `done`, or `None` when the sweep is over.
    pub(crate) fn next(&self, done: &[SweepStep], target: f64) -> Option<f64> {
        let (start, resolution) = match self {
            Rates::Given(rates) => return rates.get(done.len()).copied(),
            Rates::Search { start, resolution } => (*start, *resolution),
        };
        if done.is_empty() {
            return Some(start);
        }
        if done.len() >= MAX_AUTO_STEPS {
            return None;
        }
        let at = capacity_at(done, target, None);
        let next = match (at.passed_at, at.failed_at) {
            (Some(pass), None) => pass * 2.0,
            (None, Some(fail)) => fail / 2.0,
            (Some(pass), Some(fail)) if fail > pass * (1.0 + resolution) => {
                round(pass + (fail - pass) / 2.0)
            }
            _ => return None,
        };
        // Halving to nothing, or a midpoint already run (rounding): the search is over.
        let known = done.iter().any(|s| (s.rate - next).abs() < 1e-9);
        (next >= start / 1024.0 && !known).then_some(next)
    }
}

/// `rate` to 3 significant digits (midpoints print as what they are).
fn round(rate: f64) -> f64 {
    if rate <= 0.0 || !rate.is_finite() {
        return rate;
    }
    let scale = 10f64.powi(2 - rate.log10().floor() as i32);
    (rate * scale).round() / scale
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
            let taken = into.done().measured[first..].iter().map(|m| m.id + 1).max();
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
            step = judge(rate, &into.done().measured[first..], into, args, &watch);
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

/// The step at `rate` from its requests so far (`measured`, in id order): the first tenth of
/// them (at least one) is its warm-up, the rest is judged.
fn judge(
    rate: f64,
    measured: &[Measured],
    into: &Collector,
    args: &BenchArgs,
    watch: &Watch,
) -> SweepStep {
    let warmup = (measured.len() / 10).max(1).min(measured.len());
    let judged = &measured[warmup..];
    let summary = summarize(judged, &into.done().gaps, &args.slo);
    let served_rate = rate_over(
        judged
            .iter()
            .filter(|m| m.succeeded())
            .filter_map(|m| Some(m.record.as_ref()?.end()))
            .collect(),
    );
    let scheduled_rate = rate_over(judged.iter().filter_map(|m| m.due).collect());
    let stopped_early = watch.stopped().cloned();
    let kept_up = stopped_early.is_none()
        && match (served_rate, scheduled_rate) {
            (Some(served), Some(asked)) => served >= SERVED_SHARE * asked,
            _ => summary.successful > 0,
        };
    SweepStep {
        rate,
        attainment_interval: wilson(summary.good_requests, summary.requests, Z95),
        summary,
        warmup_requests: warmup as u64,
        served_rate,
        scheduled_rate,
        kept_up,
        extended: 0,
        stopped_early,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
