//! The flags of how requests are released (`--rate`, `--arrival`, `--burstiness`, the ramp,
//! `--concurrency`, `--duration`, `--warmup`, `--stage`), and the stages they make.

use std::time::Duration;

use anyhow::bail;

use crate::args::{DEFAULT_REQUESTS, parse_timeout};
use crate::runner::Load;
use crate::schedule::{Stage, StageSpec, parse_burstiness, parse_rate};
use crate::workload::{ArrivalKind, Curve, Ramp};

/// How requests are released.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LoadArgs {
    /// Open-loop request rate in requests per second (`inf` sends all at once). Default 10 when
    /// --concurrency is not given.
    #[arg(long, visible_alias = "request-rate", value_parser = parse_rate)]
    pub(crate) rate: Option<f64>,

    /// How open-loop arrivals are spaced.
    #[arg(long, value_enum, default_value = "poisson")]
    pub(crate) arrival: ArrivalKind,

    /// The gamma shape of Poisson gaps, as vLLM's --burstiness: 1 is a Poisson process, below 1
    /// burstier, above 1 steadier (the gaps' coefficient of variation is 1/√B).
    #[arg(long, default_value_t = 1.0, value_parser = parse_burstiness, value_name = "B")]
    pub(crate) burstiness: f64,

    /// Ramp the rate from --ramp-up-start-rate to --ramp-up-end-rate over the run (by request,
    /// as vLLM does; by time when only --duration ends the run).
    #[arg(long, value_enum, value_name = "CURVE", requires_all = ["ramp_up_start_rate", "ramp_up_end_rate"])]
    pub(crate) ramp_up_strategy: Option<Curve>,

    /// The rate at the start of the ramp (requests per second).
    #[arg(long, value_parser = parse_rate, requires = "ramp_up_strategy", value_name = "RATE")]
    pub(crate) ramp_up_start_rate: Option<f64>,

    /// The rate at the end of the ramp (requests per second).
    #[arg(long, value_parser = parse_rate, requires = "ramp_up_strategy", value_name = "RATE")]
    pub(crate) ramp_up_end_rate: Option<f64>,

    /// Requests in flight: a closed loop without --rate, a cap on in-flight requests with it.
    /// A list (1,4,16) runs one closed-loop stage per level, each of -n requests (or
    /// --duration), reported level by level.
    #[arg(long, visible_alias = "max-concurrency", value_delimiter = ',')]
    pub(crate) concurrency: Vec<usize>,

    /// Run for this long (e.g. 30s, 10m), then let the requests in flight finish; with -n,
    /// whichever comes first.
    #[arg(long, value_parser = parse_timeout, value_name = "DURATION", visible_alias = "benchmark-duration")]
    pub(crate) duration: Option<Duration>,

    /// Requests sent before the measured run, at its load, and left out of every result.
    #[arg(
        long,
        default_value_t = 0,
        visible_alias = "warmup-request-count",
        value_name = "N"
    )]
    pub(crate) warmup: usize,

    /// A stage of a multi-stage run, repeatable, e.g. `rate=2,duration=30s`,
    /// `rate=2..20,ramp=exponential,duration=60s`, `concurrency=16,requests=200` (keys: rate,
    /// ramp, concurrency, burstiness, arrival, requests, duration). Replaces --rate,
    /// --concurrency, -n and --duration.
    #[arg(long = "stage", value_name = "STAGE")]
    pub(crate) stages: Vec<StageSpec>,
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
