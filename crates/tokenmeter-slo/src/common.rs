//! What [`SloStatus`](crate::SloStatus) and [`RunStatus`](crate::RunStatus) compute and write
//! alike: the walk over the spec's classes with their counts, the diagnoses of breached
//! objectives, the lines of a summary and the formats of a percentage and a burn rate.

use std::sync::MutexGuard;
use std::time::Duration;

use crate::alert::Severity;
use crate::diagnosis::{Diagnosis, diagnose};
use crate::monitor::{SaturationLevel, SaturationSignal, Shared};
use crate::run::RunObjective;
use crate::spec::SloClass;
use crate::status::{ObjectiveStatus, UnclassifiedCounts};
use crate::window::{Counts, WINDOWS, Windows};

/// `each` of the spec's classes, in order, with its windows (locked while `each` runs) and the
/// counts of every window of [`WINDOWS`] then of the compliance period.
pub(crate) fn per_class<'a, T>(
    shared: &'a Shared,
    now: Duration,
    lock: impl Fn(usize) -> MutexGuard<'a, Windows>,
    mut each: impl FnMut(&'a SloClass, &Windows, &[Counts]) -> T,
) -> Vec<T> {
    shared
        .spec
        .classes
        .iter()
        .enumerate()
        .map(|(ci, class)| {
            let windows = lock(ci);
            let counts: Vec<Counts> = (0..=WINDOWS.len())
                .map(|w| windows.counts(w, now))
                .collect();
            each(class, &windows, &counts)
        })
        .collect()
}

/// The class's objectives breached over the counts of the window `window` picks for each (by
/// its index; `None`: none to judge), each diagnosed over that window, named by `name`.
pub(crate) fn diagnoses(
    class: &SloClass,
    counts: &[Counts],
    window: impl Fn(usize) -> Option<usize>,
    name: impl Fn(usize) -> String,
) -> Vec<Diagnosis> {
    class
        .objectives
        .iter()
        .enumerate()
        .filter_map(|(oi, o)| {
            let w = window(oi)?;
            let (good, events) = counts[w].objectives[oi];
            (events > 0 && (good as f64) < o.target * events as f64)
                .then(|| diagnose(o, &name(w), &counts[w], oi))
        })
        .collect()
}

/// An objective's state as a summary reads it.
pub(crate) trait Alerting {
    /// The objective's name, its most urgent firing alert and the rule that fired, if any.
    fn alert(&self) -> (&str, Severity, Option<&str>);
}

impl Alerting for ObjectiveStatus {
    fn alert(&self) -> (&str, Severity, Option<&str>) {
        (&self.name, self.alert, self.alert_rule.as_deref())
    }
}

impl Alerting for RunObjective {
    fn alert(&self) -> (&str, Severity, Option<&str>) {
        (&self.name, self.alert, self.alert_rule.as_deref())
    }
}

/// The lines of a summary, one per problem: the saturation signals first, then per class its
/// firing alerts and its diagnoses.
#[derive(Debug)]
pub(crate) struct Problems(Vec<String>);

impl Problems {
    /// A line per saturation signal rising or breached, ending with `advice`.
    pub(crate) fn saturation(signals: &[SaturationSignal], advice: &str) -> Self {
        Self(
            signals
                .iter()
                .filter(|signal| signal.level != SaturationLevel::Ok)
                .map(|signal| {
                    format!(
                        "saturation warning: {} {:.2} (limit {:.2}, {:+.3}/s, projected {:.2}){advice}",
                        signal.name,
                        signal.value,
                        signal.limit,
                        signal.slope_per_second,
                        signal.projected
                    )
                })
                .collect(),
        )
    }

    /// A line per firing alert of the class's objectives, then one per diagnosis.
    pub(crate) fn class(
        &mut self,
        class: &str,
        objectives: &[impl Alerting],
        diagnoses: &[Diagnosis],
    ) {
        for (objective, alert, rule) in objectives.iter().map(Alerting::alert) {
            if let Some(rule) = rule {
                self.0.push(format!(
                    "{class} {objective}: {} alert, burn {rule}",
                    alert.as_str()
                ));
            }
        }
        for d in diagnoses {
            self.0.push(format!("{class}: {}", d.sentence));
        }
    }

    /// A line when requests with objective headers went unclassified.
    pub(crate) fn unclassified(&mut self, counts: Option<&UnclassifiedCounts>) {
        self.0.extend(counts.and_then(UnclassifiedCounts::problem));
    }

    /// The lines, or `all_met` when there is none.
    pub(crate) fn text(self, all_met: &str) -> String {
        if self.0.is_empty() {
            all_met.to_owned()
        } else {
            self.0.join("\n")
        }
    }
}

/// `99.50%`, or `-` for none.
pub(crate) fn pct(fraction: Option<f64>) -> String {
    fraction.map_or("-".into(), |a| format!("{:.2}%", a * 100.0))
}

/// `14.40×`, or `-` for none.
pub(crate) fn burn(rate: Option<f64>) -> String {
    rate.map_or("-".into(), |b| format!("{b:.2}×"))
}
