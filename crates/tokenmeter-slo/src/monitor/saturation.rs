//! Saturation signals: queue depth and KV-cache usage against their limits and their trend.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;

use crate::spec;

/// Samples kept per signal for the trend.
const SAMPLES: usize = 512;

/// How close a signal is to its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SaturationLevel {
    /// Below the limit and not on course to cross it within the horizon.
    Ok,
    /// Below the limit, but rising fast enough to cross it within the horizon.
    Rising,
    /// Above the limit.
    Breached,
}

/// One saturation signal's state.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SaturationSignal {
    /// `waiting` or `kv_usage`.
    pub name: &'static str,
    /// The current value.
    pub value: f64,
    /// The limit from the spec.
    pub limit: f64,
    /// Change per second over the trend window (least squares).
    pub slope_per_second: f64,
    /// The value projected `horizon` ahead.
    pub projected: f64,
    /// The level.
    pub level: SaturationLevel,
}

#[derive(Debug, Default)]
struct Series {
    current: f64,
    samples: VecDeque<(Duration, f64)>,
}

impl Series {
    fn push(&mut self, at: Duration, value: f64) {
        self.current = value;
        if self.samples.len() == SAMPLES {
            self.samples.pop_front();
        }
        self.samples.push_back((at, value));
    }

    /// Least-squares slope over the samples of the last `span`.
    fn slope(&self, now: Duration, span: Duration) -> f64 {
        let from = now.saturating_sub(span);
        let points: Vec<(f64, f64)> = self
            .samples
            .iter()
            .filter(|(t, _)| *t >= from)
            .map(|(t, v)| (t.as_secs_f64(), *v))
            .collect();
        if points.len() < 2 {
            return 0.0;
        }
        let n = points.len() as f64;
        let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
        let my = points.iter().map(|p| p.1).sum::<f64>() / n;
        let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        if sxx > 0.0 { sxy / sxx } else { 0.0 }
    }
}

/// Tracks the signals.
#[derive(Debug)]
pub(crate) struct Saturation {
    limits: spec::Saturation,
    waiting: Mutex<Series>,
    kv: Mutex<Series>,
}

impl Saturation {
    pub(crate) fn new(limits: spec::Saturation) -> Self {
        Self {
            limits,
            waiting: Mutex::default(),
            kv: Mutex::default(),
        }
    }

    pub(crate) fn add_waiting(&self, at: Duration, delta: i64) {
        let mut s = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let value = s.current + delta as f64;
        s.push(at, value);
    }

    pub(crate) fn set_kv(&self, at: Duration, usage: f64) {
        if usage.is_finite() {
            self.kv
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(at, usage);
        }
    }

    /// The signals that have a limit in the spec and received at least one sample.
    pub(crate) fn observed_signals(&self, now: Duration) -> Vec<SaturationSignal> {
        let observed = |series: &Mutex<Series>| {
            !series
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .samples
                .is_empty()
        };
        let (waiting, kv) = (observed(&self.waiting), observed(&self.kv));
        self.signals(now)
            .into_iter()
            .filter(|s| match s.name {
                "waiting" => waiting,
                _ => kv,
            })
            .collect()
    }

    /// The signals that have a limit in the spec.
    pub(crate) fn signals(&self, now: Duration) -> Vec<SaturationSignal> {
        let horizon = self.limits.horizon;
        // The trend is read over a fifth of the horizon: recent enough to lead latency.
        let span = horizon / 5;
        let mut out = Vec::new();
        for (name, series, limit) in [
            ("waiting", &self.waiting, self.limits.waiting_max),
            ("kv_usage", &self.kv, self.limits.kv_usage_max),
        ] {
            let Some(limit) = limit else { continue };
            let s = series.lock().unwrap_or_else(PoisonError::into_inner);
            let slope = s.slope(now, span);
            let projected = s.current + slope.max(0.0) * horizon.as_secs_f64();
            let level = if s.current > limit {
                SaturationLevel::Breached
            } else if slope > 0.0 && projected > limit {
                SaturationLevel::Rising
            } else {
                SaturationLevel::Ok
            };
            out.push(SaturationSignal {
                name,
                value: s.current,
                limit,
                slope_per_second: slope,
                projected,
                level,
            });
        }
        out
    }
}
