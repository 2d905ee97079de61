//! [`RunStatus`]: the status of a bounded run (a benchmark) over the span it observed.
//!
//! [`SloStatus`](crate::SloStatus) is for a process that runs for a long time: it always
//! shows the usual windows (5m … 3d) and the error budget of the compliance period. A run of
//! 70 seconds covers none of them, so a run's status keeps to what the run covered:
//!
//! - the whole run as one span, and only the windows no longer than the run (the others are
//!   named in [`RunStatus::not_covered`]);
//! - per objective, the run's bad fraction against the fraction the objective allows, not a
//!   share of a 30-day budget extrapolated from a few seconds;
//! - burn-rate alerts only from rules whose windows the run covered;
//! - saturation signals only when something was observed: a queue depth from a server-side
//!   series or a KV-cache usage (a client's requests awaiting their first token are not a
//!   queue);
//! - diagnoses over the run.

use std::fmt;
use std::sync::MutexGuard;
use std::time::Duration;

use serde::Serialize;

use crate::alert::Severity;
use crate::common::{Problems, burn, diagnoses, pct, per_class};
use crate::diagnosis::Diagnosis;
use crate::monitor::{SaturationSignal, Shared};
use crate::spec::format_duration;
use crate::status::{
    ObjectiveWindow, UnclassifiedCounts, WindowStatus, objective_status, window_status,
};
use crate::window::{SKETCH_SLOTS, WINDOWS, Windows};

/// One objective over a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RunObjective {
    /// The objective's name.
    pub name: String,
    /// Its target: the fraction of events that must be good.
    pub target: f64,
    /// Valid events over the run.
    pub events: u64,
    /// Good events over the run.
    pub good: u64,
    /// good / events.
    pub attainment: Option<f64>,
    /// The run's bad fraction: 1 − attainment.
    pub bad_fraction: Option<f64>,
    /// The bad fraction the objective allows: 1 − target.
    pub allowed_fraction: f64,
    /// bad_fraction / allowed_fraction: above 1 the run failed more often than the objective
    /// allows (at that rate a budget of any period is spent before its end).
    pub burn_rate: Option<f64>,
    /// The windows the run covered (none shorter than the run: empty for a run under 5m).
    pub windows: Vec<ObjectiveWindow>,
    /// The most urgent burn-rate alert whose windows the run covered.
    pub alert: Severity,
    /// The rule that fired, like `1h & 5m > 14.4×`.
    pub alert_rule: Option<String>,
}

/// One class over a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RunClassStatus {
    /// The class name.
    pub name: String,
    /// The whole run (`window` is `run`, `seconds` the span observed): requests, good ones,
    /// attainment, goodput under the spec's objectives, percentiles.
    pub run: WindowStatus,
    /// The windows the run covered, each over its last stretch of the run.
    pub windows: Vec<WindowStatus>,
    /// Per objective.
    pub objectives: Vec<RunObjective>,
    /// The breached objectives over the run, each with its cause.
    pub diagnoses: Vec<Diagnosis>,
}

/// What a monitor saw over a bounded run: see the [module](self).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RunStatus {
    /// The span observed, from the monitor's start, in seconds.
    pub observed_seconds: f64,
    /// The windows longer than the run, left out: `5m`, `30m`, …
    pub not_covered: Vec<String>,
    /// Per class, in the spec's order.
    pub classes: Vec<RunClassStatus>,
    /// The saturation signals that have a limit in the spec and were observed at least once.
    pub saturation: Vec<SaturationSignal>,
    /// For a spec with header classes: the requests whose objective headers placed them in
    /// no class over the run. `None` (`null` in JSON) for a spec without.
    pub unclassified: Option<UnclassifiedCounts>,
}

impl RunStatus {
    pub(crate) fn compute<'a>(
        shared: &'a Shared,
        now: Duration,
        lock: impl Fn(usize) -> MutexGuard<'a, Windows>,
    ) -> Self {
        let elapsed = now.saturating_sub(shared.started);
        // Percentiles: the shortest window whose sketches still hold the whole run (a ring
        // keeps its last full sub-windows and the current one); the longest, for a longer run.
        let kept = |w: &Duration| w.mul_f64(1.0 - 1.0 / SKETCH_SLOTS as f64) >= elapsed;
        let whole = WINDOWS.iter().position(kept).unwrap_or(WINDOWS.len() - 1);
        // Counts: the compliance period's, which hold everything since the start.
        let period = WINDOWS.len();
        let covered: Vec<usize> = (0..WINDOWS.len())
            .filter(|&w| WINDOWS[w] <= elapsed)
            .collect();
        let classes = per_class(shared, now, lock, |class, windows, counts| {
            let mut run = window_status(
                windows,
                &counts[period],
                whole,
                WINDOWS[whole],
                elapsed,
                now,
            );
            run.window = "run".to_owned();
            let objectives = class
                .objectives
                .iter()
                .enumerate()
                .map(|(oi, o)| {
                    let status =
                        objective_status(o, counts, oi, elapsed, shared.spec.period, elapsed);
                    let (good, events) = counts[period].objectives[oi];
                    let allowed = 1.0 - o.target;
                    let bad = (events > 0).then(|| 1.0 - good as f64 / events as f64);
                    RunObjective {
                        name: o.name.clone(),
                        target: o.target,
                        events,
                        good,
                        attainment: bad.map(|b| 1.0 - b),
                        bad_fraction: bad,
                        allowed_fraction: allowed,
                        burn_rate: bad.map(|b| b / allowed),
                        windows: covered.iter().map(|&w| status.windows[w].clone()).collect(),
                        alert: status.alert,
                        alert_rule: status.alert_rule,
                    }
                })
                .collect();
            RunClassStatus {
                name: class.name.clone(),
                run,
                windows: covered
                    .iter()
                    .map(|&w| window_status(windows, &counts[w], w, WINDOWS[w], elapsed, now))
                    .collect(),
                objectives,
                diagnoses: diagnoses(class, counts, |_| Some(period), |_| "the run".to_owned()),
            }
        });
        Self {
            observed_seconds: elapsed.as_secs_f64(),
            not_covered: WINDOWS
                .iter()
                .filter(|w| **w > elapsed)
                .map(|w| format_duration(*w))
                .collect(),
            classes,
            saturation: shared.saturation.observed_signals(now),
            unclassified: shared.unclassified(),
        }
    }

    /// One line per problem over the run: each saturation signal rising or breached, each
    /// firing alert, each breached objective with its cause; or that all were met.
    pub fn summary(&self) -> String {
        let mut problems = Problems::saturation(&self.saturation, "");
        for class in &self.classes {
            problems.class(&class.name, &class.objectives, &class.diagnoses);
        }
        problems.unclassified(self.unclassified.as_ref());
        problems.text("all objectives met over the run; no saturation observed")
    }
}

/// `70.0 s`, `2.5 min`.
fn span(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.1} s")
    } else {
        format!("{:.1} min", seconds / 60.0)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let run = span(self.observed_seconds);
        match self.not_covered.first() {
            Some(first) => writeln!(
                f,
                "over the run ({run}); windows of {first} and longer not covered: the run lasted {run}"
            )?,
            None => writeln!(f, "over the run ({run})")?,
        }
        for class in &self.classes {
            let r = &class.run;
            writeln!(
                f,
                "SLO class {}: {} requests, {} good (attainment {}), goodput under the spec's \
                 objectives {:.2} req/s, {:.1} tok/s over {run}",
                class.name,
                r.requests,
                r.good,
                pct(r.attainment),
                r.goodput_rps,
                r.goodput_tps
            )?;
            for o in &class.objectives {
                write!(
                    f,
                    "  {:<26} target {:>7}  run {:>8}  bad {:>7} of {} (allowed {}): {}",
                    o.name,
                    pct(Some(o.target)),
                    pct(o.attainment),
                    pct(o.bad_fraction),
                    o.events,
                    pct(Some(o.allowed_fraction)),
                    o.burn_rate
                        .map_or("-".into(), |b| format!("{b:.2}× the allowed rate"))
                )?;
                for w in &o.windows {
                    write!(
                        f,
                        "  {} {} burn {}",
                        w.window,
                        pct(w.attainment),
                        burn(w.burn_rate)
                    )?;
                }
                writeln!(f)?;
            }
        }
        write!(f, "{}", self.summary())
    }
}
