//! [`Load`]: how one stage releases its requests (open loop at a rate, closed loop at a
//! concurrency, or a trace replayed), and how it is described in the table.

use crate::workload::{ArrivalKind, Curve, Ramp};

/// How requests are released.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Load {
    /// Open loop at `rate` requests per second, with at most `max_concurrency` in flight
    /// (arrivals wait for a slot) when given.
    Rate {
        /// Requests per second (may be infinite: all at once).
        rate: f64,
        /// Poisson or constant gaps.
        kind: ArrivalKind,
        /// Cap on requests in flight.
        max_concurrency: Option<usize>,
        /// The gamma shape of Poisson gaps (1: exponential).
        burstiness: f64,
        /// The rate at the end of the stage, when it ramps.
        ramp: Option<Ramp>,
    },
    /// Closed loop: `n` requests always in flight.
    Concurrency(usize),
    /// A trace replayed at its timestamps, `speed` times as fast.
    Replay {
        /// 2: twice as fast.
        speed: f64,
    },
}

impl std::fmt::Display for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Load::Rate {
                rate,
                kind,
                max_concurrency,
                burstiness,
                ramp,
            } => {
                let kind = match (kind, burstiness) {
                    (ArrivalKind::Poisson, b) if *b == 1.0 => "Poisson".to_owned(),
                    (ArrivalKind::Poisson, b) => format!("gamma (burstiness {b})"),
                    (ArrivalKind::Constant, _) => "constant".to_owned(),
                };
                match ramp {
                    _ if !rate.is_finite() => write!(f, "all requests at once")?,
                    Some(Ramp { end, curve }) => {
                        let curve = match curve {
                            Curve::Linear => "linear",
                            Curve::Exponential => "exponential",
                        };
                        write!(
                            f,
                            "{kind} arrivals, {curve} ramp from {rate} to {end} req/s"
                        )?;
                    }
                    None => write!(f, "{kind} arrivals at {rate} req/s")?,
                }
                if let Some(n) = max_concurrency {
                    write!(f, ", at most {n} in flight")?;
                }
                Ok(())
            }
            Load::Concurrency(n) => write!(f, "{n} concurrent requests (closed loop)"),
            Load::Replay { speed } if *speed == 1.0 => write!(f, "a trace replayed at its times"),
            Load::Replay { speed } => write!(f, "a trace replayed at {speed}× its speed"),
        }
    }
}
