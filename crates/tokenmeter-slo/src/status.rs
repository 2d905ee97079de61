//! [`SloStatus`]: goodput, attainment, percentiles, budget, burn rates, alerts, saturation and
//! diagnosis, per class and window.

use std::fmt;
use std::sync::MutexGuard;
use std::time::Duration;

use serde::Serialize;

use crate::alert::{MIN_EVENTS_PER_MINUTE, RULES, Severity};
use crate::common::{Problems, burn, diagnoses, pct, per_class};
use crate::diagnosis::Diagnosis;
use crate::monitor::{SaturationSignal, Shared};
use crate::spec::{LatencyMetric, Objective, format_duration};
use crate::window::{Counts, WINDOWS, Windows};

/// p50/p90/p95/p99 in seconds, from the windowed sketches (≤ 1% relative error).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Percentiles {
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

/// One class over one window.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct WindowStatus {
    /// `5m`, `30m`, ...
    pub window: String,
    /// The seconds of data the rates are computed over: the window, or less just after start.
    pub seconds: f64,
    /// Requests evaluated.
    pub requests: u64,
    /// Good requests (succeeded and met every latency objective).
    pub good: u64,
    /// good / requests.
    pub attainment: Option<f64>,
    /// Good requests per second.
    pub goodput_rps: f64,
    /// Output tokens of good requests per second.
    pub goodput_tps: f64,
    /// All requests per second.
    pub throughput_rps: f64,
    /// TTFT percentiles.
    pub ttft: Percentiles,
    /// TPOT percentiles.
    pub tpot: Percentiles,
    /// E2E percentiles.
    pub e2e: Percentiles,
    /// Queue-time percentiles.
    pub queue: Percentiles,
}

/// One objective over one window.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ObjectiveWindow {
    /// `5m`, `30m`, ...
    pub window: String,
    /// Valid events.
    pub events: u64,
    /// Good events.
    pub good: u64,
    /// good / events.
    pub attainment: Option<f64>,
    /// Error ratio / budget: 1 spends the budget exactly over the period.
    pub burn_rate: Option<f64>,
}

/// One objective's state.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ObjectiveStatus {
    /// The objective's name.
    pub name: String,
    /// Its target.
    pub target: f64,
    /// Per window of [`crate::window::WINDOWS`].
    pub windows: Vec<ObjectiveWindow>,
    /// Attainment over the compliance period (what the process has seen of it).
    pub period_attainment: Option<f64>,
    /// Share of the period's error budget left: 1 − errors / (budget × events); negative once
    /// overspent.
    pub budget_remaining: Option<f64>,
    /// The most urgent burn-rate alert firing.
    pub alert: Severity,
    /// The rule that fired, like `1h & 5m > 14.4×`.
    pub alert_rule: Option<String>,
    /// True when a rule's burn rates were over its factor but traffic was under the guard.
    pub low_traffic: bool,
}

/// One class's state.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ClassStatus {
    /// The class name.
    pub name: String,
    /// Per window.
    pub windows: Vec<WindowStatus>,
    /// Per objective.
    pub objectives: Vec<ObjectiveStatus>,
    /// The breached objectives, each with its cause.
    pub diagnoses: Vec<Diagnosis>,
}

/// Requests that carried objective headers (`x-slo-ttft-ms`, `x-slo-tpot-ms`) but were
/// counted under no class, since the monitor started: the same counts as
/// [`names::REQUESTS_UNCLASSIFIED`](crate::names::REQUESTS_UNCLASSIFIED), by `reason`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct UnclassifiedCounts {
    /// Headers that did not parse (`reason="malformed"`).
    pub malformed: u64,
    /// Targets no header class holds (`reason="no_class"`).
    pub no_class: u64,
}

impl UnclassifiedCounts {
    /// A line for a summary when any request went unclassified.
    pub(crate) fn problem(&self) -> Option<String> {
        let total = self.malformed + self.no_class;
        (total > 0).then(|| {
            format!(
                "{total} requests with objective headers fit no class ({} malformed, {} looser \
                 than every header class): judged by none, counted in \
                 {}",
                self.malformed,
                self.no_class,
                crate::names::REQUESTS_UNCLASSIFIED
            )
        })
    }
}

/// Everything the monitor knows at one moment.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SloStatus {
    /// Per class, in the spec's order.
    pub classes: Vec<ClassStatus>,
    /// Saturation signals that have a limit in the spec.
    pub saturation: Vec<SaturationSignal>,
    /// For a spec with header classes: the requests whose objective headers placed them in
    /// no class. `None` (`null` in JSON) for a spec without.
    pub unclassified: Option<UnclassifiedCounts>,
}

impl SloStatus {
    pub(crate) fn compute<'a>(
        shared: &'a Shared,
        now: Duration,
        lock: impl Fn(usize) -> MutexGuard<'a, Windows>,
    ) -> Self {
        let elapsed = now.saturating_sub(shared.started);
        let classes = per_class(shared, now, lock, |class, windows, counts| {
            let window_status = WINDOWS
                .iter()
                .enumerate()
                .map(|(w, d)| window_status(windows, &counts[w], w, *d, elapsed, now))
                .collect();
            let objectives: Vec<ObjectiveStatus> = class
                .objectives
                .iter()
                .enumerate()
                .map(|(oi, o)| {
                    objective_status(o, counts, oi, elapsed, shared.spec.period, Duration::MAX)
                })
                .collect();
            ClassStatus {
                name: class.name.clone(),
                windows: window_status,
                objectives,
                diagnoses: diagnoses(
                    class,
                    counts,
                    |oi| diagnosis_window(counts, oi),
                    |w| format_duration(WINDOWS[w]),
                ),
            }
        });
        Self {
            classes,
            saturation: shared.saturation.signals(now),
            unclassified: shared.unclassified(),
        }
    }

    /// One line per problem: each breached objective with its cause, each saturation signal
    /// that is rising or breached, each firing alert; or "all objectives met".
    pub fn summary(&self) -> String {
        let mut problems = Problems::saturation(&self.saturation, ": scale before latency rises");
        for class in &self.classes {
            problems.class(&class.name, &class.objectives, &class.diagnoses);
        }
        problems.unclassified(self.unclassified.as_ref());
        problems.text("all objectives met; no saturation warning")
    }
}

/// The shortest window with at least 10 events for the objective, else the longest with any.
fn diagnosis_window(counts: &[Counts], oi: usize) -> Option<usize> {
    let events = |w: usize| counts[w].objectives[oi].1;
    (0..WINDOWS.len())
        .find(|&w| events(w) >= 10)
        .or_else(|| (0..WINDOWS.len()).rev().find(|&w| events(w) > 0))
}

fn effective(window: Duration, elapsed: Duration) -> f64 {
    window.min(elapsed).as_secs_f64().max(1e-9)
}

pub(crate) fn window_status(
    windows: &Windows,
    c: &Counts,
    w: usize,
    d: Duration,
    elapsed: Duration,
    now: Duration,
) -> WindowStatus {
    let seconds = effective(d, elapsed);
    let p = |metric| Percentiles {
        p50: windows.quantile(w, now, metric, 0.50),
        p90: windows.quantile(w, now, metric, 0.90),
        p95: windows.quantile(w, now, metric, 0.95),
        p99: windows.quantile(w, now, metric, 0.99),
    };
    WindowStatus {
        window: format_duration(d),
        seconds,
        requests: c.requests,
        good: c.good,
        attainment: (c.requests > 0).then(|| c.good as f64 / c.requests as f64),
        goodput_rps: c.good as f64 / seconds,
        goodput_tps: c.good_tokens as f64 / seconds,
        throughput_rps: c.requests as f64 / seconds,
        ttft: p(LatencyMetric::Ttft),
        tpot: p(LatencyMetric::Tpot),
        e2e: p(LatencyMetric::E2e),
        queue: p(LatencyMetric::Queue),
    }
}

/// One objective's state; only the burn-rate rules whose long window is at most `covered`
/// may fire (`Duration::MAX`: all).
pub(crate) fn objective_status(
    objective: &Objective,
    counts: &[Counts],
    oi: usize,
    elapsed: Duration,
    period: Duration,
    covered: Duration,
) -> ObjectiveStatus {
    let budget = 1.0 - objective.target;
    let burn = |w: usize| {
        let (good, events) = counts[w].objectives[oi];
        (events > 0).then(|| (1.0 - good as f64 / events as f64) / budget)
    };
    let windows = WINDOWS
        .iter()
        .enumerate()
        .map(|(w, d)| {
            let (good, events) = counts[w].objectives[oi];
            ObjectiveWindow {
                window: format_duration(*d),
                events,
                good,
                attainment: (events > 0).then(|| good as f64 / events as f64),
                burn_rate: burn(w),
            }
        })
        .collect();
    let (period_good, period_events) = counts[WINDOWS.len()].objectives[oi];
    let index = |d: Duration| WINDOWS.iter().position(|w| *w == d);
    let mut alert = Severity::None;
    let mut alert_rule = None;
    let mut low_traffic = false;
    for rule in RULES.iter().filter(|r| r.long <= covered) {
        let (Some(long), Some(short)) = (index(rule.long), index(rule.short)) else {
            continue;
        };
        let factor = rule.factor(period);
        let over = |w| burn(w).is_some_and(|b| b > factor);
        if over(long) && over(short) {
            let per_minute =
                counts[long].objectives[oi].1 as f64 / (effective(rule.long, elapsed) / 60.0);
            if per_minute < MIN_EVENTS_PER_MINUTE {
                low_traffic = true;
            } else if rule.severity > alert {
                alert = rule.severity;
                alert_rule = Some(format!(
                    "{} & {} > {factor}×",
                    format_duration(rule.long),
                    format_duration(rule.short)
                ));
            }
        }
    }
    ObjectiveStatus {
        name: objective.name.clone(),
        target: objective.target,
        windows,
        period_attainment: (period_events > 0).then(|| period_good as f64 / period_events as f64),
        budget_remaining: (period_events > 0).then(|| {
            let errors = (period_events - period_good) as f64;
            1.0 - errors / (budget * period_events as f64)
        }),
        alert,
        alert_rule,
        low_traffic,
    }
}

impl fmt::Display for SloStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for class in &self.classes {
            writeln!(f, "SLO class {}:", class.name)?;
            let w = &class.windows[0];
            writeln!(
                f,
                "  last {}: {} requests, {} good (attainment {}), goodput {:.2} req/s, {:.1} tok/s",
                w.window,
                w.requests,
                w.good,
                w.attainment
                    .map_or("-".into(), |a| format!("{:.1}%", a * 100.0)),
                w.goodput_rps,
                w.goodput_tps
            )?;
            for o in &class.objectives {
                let five = &o.windows[0];
                let hour = &o.windows[2];
                writeln!(
                    f,
                    "  {:<26} target {:>7}  5m {:>8} burn {:>7}  1h {:>8} burn {:>7}  budget left {:>8}  alert {}",
                    o.name,
                    pct(Some(o.target)),
                    pct(five.attainment),
                    burn(five.burn_rate),
                    pct(hour.attainment),
                    burn(hour.burn_rate),
                    o.budget_remaining
                        .map_or("-".into(), |b| format!("{:.1}%", b * 100.0)),
                    o.alert.as_str()
                )?;
            }
        }
        write!(f, "{}", self.summary())
    }
}
