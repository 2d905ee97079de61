//! The flags of how requests are released (`--rate`, `--arrival`, `--burstiness`, the ramp,
//! `--concurrency`, `--duration`, `--warmup`, `--stage`): [`LoadArgs`], and the stages they
//! make.

use std::time::Duration;

use anyhow::bail;

use crate::runner::Load;
use crate::schedule::{Stage, StageSpec};
use crate::workload::{ArrivalKind, Curve, Ramp};

/// How requests are released: part of [`BenchArgs`](crate::BenchArgs).
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_bench::{ArrivalKind, BenchArgs, LoadArgs};
///
/// let mut load = LoadArgs::default();
/// assert_eq!(load.arrival, ArrivalKind::Poisson);
/// load.rate = Some(20.0);
/// load.concurrency = vec![16];
/// load.duration = Some(Duration::from_secs(30));
/// let mut args = BenchArgs::default();
/// args.load = load;
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoadArgs {
    /// Open-loop rate in requests per second (infinite: all at once); `None` (default): 10 unless `concurrency` is given.
    pub rate: Option<f64>,
    /// How open-loop arrivals are spaced; default [`ArrivalKind::Poisson`].
    pub arrival: ArrivalKind,
    /// The gamma shape of Poisson gaps (1: Poisson, below 1 burstier); default [`DEFAULT_BURSTINESS`] (1).
    pub burstiness: f64,
    /// Ramp the rate from `ramp_up_start_rate` to `ramp_up_end_rate` with this curve; `None` (default): no ramp.
    pub ramp_up_strategy: Option<Curve>,
    /// The rate at the start of the ramp, in requests per second; `None` (default).
    pub ramp_up_start_rate: Option<f64>,
    /// The rate at the end of the ramp, in requests per second; `None` (default).
    pub ramp_up_end_rate: Option<f64>,
    /// Requests in flight (a closed loop, or a cap with `rate`); several: one stage per level; empty (default): none.
    pub concurrency: Vec<usize>,
    /// Run for this long, then let the requests in flight finish; `None` (default): until the requests are sent.
    pub duration: Option<Duration>,
    /// Requests sent before the measured run and left out of every result; default 0.
    pub warmup: usize,
    /// The stages of a multi-stage run (replacing rate, concurrency, requests, duration); empty (default): one stage.
    pub stages: Vec<StageSpec>,
}

/// The gamma shape of Poisson gaps by default ([`LoadArgs::burstiness`]): a Poisson process.
///
/// ```
/// use tokenmeter_bench::{DEFAULT_BURSTINESS, LoadArgs};
/// assert_eq!(LoadArgs::default().burstiness, DEFAULT_BURSTINESS);
/// ```
pub const DEFAULT_BURSTINESS: f64 = 1.0;

/// Requests of a single run when --requests is not given.
///
/// ```
/// assert_eq!(tokenmeter_bench::DEFAULT_REQUESTS, 200);
/// ```
pub const DEFAULT_REQUESTS: usize = 200;

impl Default for LoadArgs {
    fn default() -> Self {
        Self {
            rate: None,
            arrival: ArrivalKind::Poisson,
            burstiness: DEFAULT_BURSTINESS,
            ramp_up_strategy: None,
            ramp_up_start_rate: None,
            ramp_up_end_rate: None,
            concurrency: Vec::new(),
            duration: None,
            warmup: 0,
            stages: Vec::new(),
        }
    }
}

impl LoadArgs {
    /// The stages of a single run, from --stage, a list of --concurrency levels, or the load
    /// flags.
    /// `requests` is `-n`.
    pub(crate) fn stages(&self, requests: Option<usize>) -> anyhow::Result<Vec<Stage>> {
        if !self.stages.is_empty() {
            let global = [
                (self.rate.is_some(), "--rate"),
                (!self.concurrency.is_empty(), "--concurrency"),
                (requests.is_some(), "-n/--requests"),
                (self.duration.is_some(), "--duration"),
                (self.ramp_up_strategy.is_some(), "--ramp-up-strategy"),
            ];
            if let Some((_, flag)) = global.iter().find(|(set, _)| *set) {
                bail!("--stage describes the whole load; drop {flag} (give it in each stage)");
            }
            return Ok(self
                .stages
                .iter()
                .map(|s| s.stage(self.arrival, self.burstiness))
                .collect());
        }
        if self.burstiness != 1.0 && self.arrival == ArrivalKind::Constant {
            bail!("--burstiness shapes Poisson gaps; drop it or --arrival constant");
        }
        let requests = match (requests, self.duration) {
            (None, None) => Some(DEFAULT_REQUESTS),
            (n, _) => n,
        };
        let ramp = match (
            self.ramp_up_strategy,
            self.ramp_up_start_rate,
            self.ramp_up_end_rate,
        ) {
            (Some(curve), Some(start), Some(end)) => {
                if self.rate.is_some() {
                    bail!("--ramp-up-strategy sets the rate; drop --rate");
                }
                if !(start.is_finite() && end.is_finite()) {
                    bail!("a ramp needs finite rates; give numbers, not `inf`");
                }
                Some((start, Ramp { end, curve }))
            }
            _ => None,
        };
        let stage = |load| Stage {
            load,
            requests,
            duration: self.duration,
        };
        match (self.rate, self.concurrency.as_slice(), ramp) {
            (None, [], None) | (Some(_), _, _) | (None, [_], Some(_)) | (None, [], Some(_)) => {
                let (rate, ramp) = match ramp {
                    Some((start, ramp)) => (start, Some(ramp)),
                    None => (self.rate.unwrap_or(10.0), None),
                };
                let max_concurrency = match self.concurrency.as_slice() {
                    [] => None,
                    [c] => Some(*c),
                    _ => bail!(
                        "a list of --concurrency levels runs closed loops; drop --rate or give one level"
                    ),
                };
                Ok(vec![stage(Load::Rate {
                    rate,
                    kind: self.arrival,
                    max_concurrency,
                    burstiness: self.burstiness,
                    ramp,
                })])
            }
            (None, levels, None) => Ok(levels
                .iter()
                .map(|&c| stage(Load::Concurrency(c)))
                .collect()),
            (None, _, Some(_)) => bail!(
                "a list of --concurrency levels runs closed loops; drop the ramp or give one level"
            ),
        }
    }
}
