//! [`LoadFlags`]: how requests are released (`--rate`, `--arrival`, `--burstiness`, the ramp,
//! `--concurrency`, `--duration`, `--warmup`, `--stage`).

use std::time::Duration;

use tokenmeter_bench::{DEFAULT_BURSTINESS, LoadArgs, StageSpec, parse};

use super::enums::{ArrivalKind, Curve};

/// How requests are released.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LoadFlags {
    /// Open-loop request rate in requests per second (`inf` sends all at once). Default 10 when
    /// --concurrency is not given.
    #[arg(long, visible_alias = "request-rate", value_parser = parse::parse_rate)]
    pub(crate) rate: Option<f64>,

    /// How open-loop arrivals are spaced.
    #[arg(long, value_enum, default_value = "poisson")]
    pub(crate) arrival: ArrivalKind,

    /// The gamma shape of Poisson gaps, as vLLM's --burstiness: 1 is a Poisson process, below 1
    /// burstier, above 1 steadier (the gaps' coefficient of variation is 1/√B).
    #[arg(long, default_value_t = DEFAULT_BURSTINESS, value_parser = parse::parse_burstiness, value_name = "B")]
    pub(crate) burstiness: f64,

    /// Ramp the rate from --ramp-up-start-rate to --ramp-up-end-rate over the run (by request,
    /// as vLLM does; by time when only --duration ends the run).
    #[arg(long, value_enum, value_name = "CURVE", requires_all = ["ramp_up_start_rate", "ramp_up_end_rate"])]
    pub(crate) ramp_up_strategy: Option<Curve>,

    /// The rate at the start of the ramp (requests per second).
    #[arg(long, value_parser = parse::parse_rate, requires = "ramp_up_strategy", value_name = "RATE")]
    pub(crate) ramp_up_start_rate: Option<f64>,

    /// The rate at the end of the ramp (requests per second).
    #[arg(long, value_parser = parse::parse_rate, requires = "ramp_up_strategy", value_name = "RATE")]
    pub(crate) ramp_up_end_rate: Option<f64>,

    /// Requests in flight: a closed loop without --rate, a cap on in-flight requests with it.
    /// A list (1,4,16) runs one closed-loop stage per level, each of -n requests (or
    /// --duration), reported level by level.
    #[arg(long, visible_alias = "max-concurrency", value_delimiter = ',')]
    pub(crate) concurrency: Vec<usize>,

    /// Run for this long (e.g. 30s, 10m), then let the requests in flight finish; with -n,
    /// whichever comes first.
    #[arg(long, value_parser = parse::parse_timeout, value_name = "DURATION", visible_alias = "benchmark-duration")]
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

impl LoadFlags {
    /// The library's load settings.
    pub(crate) fn settings(self) -> LoadArgs {
        let mut load = LoadArgs::default();
        load.rate = self.rate;
        load.arrival = self.arrival.into();
        load.burstiness = self.burstiness;
        load.ramp_up_strategy = self.ramp_up_strategy.map(Into::into);
        load.ramp_up_start_rate = self.ramp_up_start_rate;
        load.ramp_up_end_rate = self.ramp_up_end_rate;
        load.concurrency = self.concurrency;
        load.duration = self.duration;
        load.warmup = self.warmup;
        load.stages = self.stages;
        load
    }
}
