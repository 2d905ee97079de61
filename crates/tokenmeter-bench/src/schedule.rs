//! The load of a run as stages: each stage a [`Load`] that ends after a number of requests, a
//! duration, or whichever comes first; warm-up requests before them.
//!
//! A run without `--stage` is one stage built from `--rate`/`--concurrency`, the ramp flags,
//! `-n` and `--duration`. A list of concurrency levels (`--concurrency 1,4,16`) is one stage per
//! level. `--stage` gives the stages by hand:
//!
//! ```text
//! --stage rate=2,duration=30s --stage rate=2..20,ramp=exponential,duration=60s
//! --stage concurrency=16,requests=200 --stage rate=8,burstiness=0.5,requests=100
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;
use tokenmeter_slo::spec::parse_duration;

use crate::load::Load;
use crate::workload::{ArrivalKind, Curve, Ramp};

/// One stage: a load and when it ends.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Stage {
    /// How requests are released.
    pub(crate) load: Load,
    /// The stage ends after this many requests.
    pub(crate) requests: Option<usize>,
    /// The stage ends this long after it began (requests in flight then finish).
    pub(crate) duration: Option<Duration>,
}

impl Stage {
    /// A stage of `n` requests at `load`.
    pub(crate) fn requests(load: Load, n: usize) -> Self {
        Self {
            load,
            requests: Some(n),
            duration: None,
        }
    }

    /// Requests the stage will send, when known in advance.
    pub(crate) fn planned(&self) -> Option<usize> {
        match (self.requests, self.duration, self.load) {
            (Some(n), _, _) => Some(n),
            (None, Some(d), Load::Rate { rate, ramp, .. }) if rate.is_finite() => {
                // The mean rate of a ramp, as an estimate for the progress bar.
                let end = ramp.map_or(rate, |r| r.end);
                Some(((rate + end) / 2.0 * d.as_secs_f64()).ceil() as usize)
            }
            _ => None,
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.load)?;
        match (self.requests, self.duration) {
            (Some(n), Some(d)) => write!(f, ", {n} requests or {d:?}, whichever first"),
            (Some(n), None) => write!(f, ", {n} requests"),
            (None, Some(d)) => write!(f, ", for {d:?}"),
            (None, None) => Ok(()),
        }
    }
}

/// What a stage reports about itself in the JSON.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StageInfo {
    /// The stage, in words.
    pub(crate) load: String,
    /// Requests per second at the start (null: closed loop; "inf": all at once).
    pub(crate) rate: serde_json::Value,
    /// Requests per second at the end of a ramp.
    pub(crate) ramp_to: Option<f64>,
    /// Requests in flight (closed loop) or their cap.
    pub(crate) concurrency: Option<usize>,
    /// The request limit.
    pub(crate) requests: Option<usize>,
    /// The time limit, in seconds.
    pub(crate) duration_s: Option<f64>,
}

impl From<&Stage> for StageInfo {
    fn from(stage: &Stage) -> Self {
        let (rate, ramp_to, concurrency) = match stage.load {
            Load::Rate {
                rate,
                ramp,
                max_concurrency,
                ..
            } => (
                if rate.is_finite() {
                    rate.into()
                } else {
                    "inf".into()
                },
                ramp.map(|r| r.end),
                max_concurrency,
            ),
            Load::Concurrency(c) => (serde_json::Value::Null, None, Some(c)),
            Load::Replay { .. } => (serde_json::Value::Null, None, None),
        };
        Self {
            load: stage.to_string(),
            rate,
            ramp_to,
            concurrency,
            requests: stage.requests,
            duration_s: stage.duration.map(|d| d.as_secs_f64()),
        }
    }
}

/// A `--stage` as typed: the global `--arrival` and `--burstiness` apply unless it sets its own.
///
/// ```
/// # fn main() -> anyhow::Result<()> {
/// use tokenmeter_bench::{LoadArgs, StageSpec};
///
/// let mut load = LoadArgs::default();
/// load.stages = vec![
///     "rate=2..20,duration=60s".parse::<StageSpec>().map_err(anyhow::Error::msg)?,
///     "concurrency=8,requests=100".parse().map_err(anyhow::Error::msg)?,
/// ];
/// assert!("rate=fast".parse::<StageSpec>().is_err());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct StageSpec {
    rate: Option<(f64, Option<f64>)>,
    curve: Option<Curve>,
    concurrency: Option<usize>,
    burstiness: Option<f64>,
    arrival: Option<ArrivalKind>,
    requests: Option<usize>,
    duration: Option<Duration>,
}

const STAGE_FORM: &str = "a stage is comma-separated key=value: rate=R or rate=FROM..TO, \
    ramp=linear|exponential, concurrency=C, burstiness=B, arrival=poisson|constant, and \
    requests=N and/or duration=D (e.g. `rate=2..20,duration=60s` or `concurrency=8,requests=100`)";

impl FromStr for StageSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut spec = StageSpec {
            rate: None,
            curve: None,
            concurrency: None,
            burstiness: None,
            arrival: None,
            requests: None,
            duration: None,
        };
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = part.split_once('=') else {
                return Err(format!("`{part}` has no `=`; {STAGE_FORM}"));
            };
            let (key, value) = (key.trim(), value.trim());
            let bad = |why: &str| format!("`{part}`: {why}; {STAGE_FORM}");
            match key {
                "rate" => {
                    let (from, to) = match value.split_once("..") {
                        Some((a, b)) => (a, Some(b)),
                        None => (value, None),
                    };
                    let from = parse_rate(from).map_err(|e| bad(&e))?;
                    let to = to.map(parse_rate).transpose().map_err(|e| bad(&e))?;
                    if to.is_some() && !from.is_finite() {
                        return Err(bad("a ramp needs finite rates"));
                    }
                    spec.rate = Some((from, to));
                }
                "ramp" => {
                    spec.curve = Some(match value {
                        "linear" => Curve::Linear,
                        "exponential" => Curve::Exponential,
                        _ => return Err(bad("ramp is linear or exponential")),
                    });
                }
                "concurrency" => {
                    spec.concurrency = Some(
                        value
                            .parse()
                            .ok()
                            .filter(|&c| c > 0)
                            .ok_or_else(|| bad("concurrency is a whole number above 0"))?,
                    );
                }
                "burstiness" => {
                    spec.burstiness = Some(parse_burstiness(value).map_err(|e| bad(&e))?)
                }
                "arrival" => {
                    spec.arrival = Some(match value {
                        "poisson" => ArrivalKind::Poisson,
                        "constant" => ArrivalKind::Constant,
                        _ => return Err(bad("arrival is poisson or constant")),
                    });
                }
                "requests" => {
                    spec.requests = Some(
                        value
                            .parse()
                            .ok()
                            .filter(|&n| n > 0)
                            .ok_or_else(|| bad("requests is a whole number above 0"))?,
                    );
                }
                "duration" => {
                    spec.duration = Some(
                        parse_duration(value)
                            .ok()
                            .filter(|d| !d.is_zero())
                            .ok_or_else(|| {
                                bad("duration is a time above 0 with a unit, e.g. 30s")
                            })?,
                    );
                }
                _ => return Err(bad(&format!("unknown key `{key}`"))),
            }
        }
        if spec.rate.is_none() && spec.concurrency.is_none() {
            return Err(format!(
                "`{text}` gives neither rate nor concurrency; {STAGE_FORM}"
            ));
        }
        if spec.requests.is_none() && spec.duration.is_none() {
            return Err(format!(
                "`{text}` never ends: give requests=N or duration=D"
            ));
        }
        if spec.curve.is_some() && !matches!(spec.rate, Some((_, Some(_)))) {
            return Err(format!("`{text}`: ramp= needs rate=FROM..TO"));
        }
        Ok(spec)
    }
}

impl StageSpec {
    /// The stage, with `arrival` and `burstiness` unless it sets its own.
    pub(crate) fn stage(&self, arrival: ArrivalKind, burstiness: f64) -> Stage {
        let load = match self.rate {
            Some((rate, to)) => Load::Rate {
                rate,
                kind: self.arrival.unwrap_or(arrival),
                max_concurrency: self.concurrency,
                burstiness: self.burstiness.unwrap_or(burstiness),
                ramp: to.map(|end| Ramp {
                    end,
                    curve: self.curve.unwrap_or(Curve::Linear),
                }),
            },
            None => Load::Concurrency(self.concurrency.unwrap_or(1)),
        };
        Stage {
            load,
            requests: self.requests,
            duration: self.duration,
        }
    }
}

/// A request rate in requests per second: above 0, or `inf`.
///
/// ```
/// use tokenmeter_bench::parse::parse_rate;
///
/// assert_eq!(parse_rate("0.5"), Ok(0.5));
/// assert_eq!(parse_rate("inf"), Ok(f64::INFINITY));
/// assert!(parse_rate("0").is_err());
/// ```
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("inf") {
        return Ok(f64::INFINITY);
    }
    match text.parse::<f64>() {
        Ok(rate) if rate > 0.0 && rate.is_finite() => Ok(rate),
        _ => Err(format!(
            "`{text}` is not a request rate; give requests per second above 0 (e.g. 8 or 0.5), or `inf`"
        )),
    }
}

/// A gamma shape (`--burstiness`) or a speed factor (`--replay-speed`): above 0 and finite.
///
/// ```
/// use tokenmeter_bench::parse::parse_burstiness;
///
/// assert_eq!(parse_burstiness("0.5"), Ok(0.5));
/// assert!(parse_burstiness("-1").is_err());
/// ```
pub fn parse_burstiness(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(b) if b > 0.0 && b.is_finite() => Ok(b),
        _ => Err(format!(
            "`{text}` is not a burstiness; give a number above 0 (1: Poisson, below 1 burstier, \
             above 1 steadier)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_parse_with_defaults_from_the_run() {
        let spec: StageSpec = "rate=2..20,ramp=exponential,duration=60s".parse().unwrap();
        let stage = spec.stage(ArrivalKind::Poisson, 0.5);
        assert_eq!(
            stage.load,
            Load::Rate {
                rate: 2.0,
                kind: ArrivalKind::Poisson,
                max_concurrency: None,
                burstiness: 0.5,
                ramp: Some(Ramp {
                    end: 20.0,
                    curve: Curve::Exponential
                }),
            }
        );
        assert_eq!(stage.duration, Some(Duration::from_secs(60)));
        assert_eq!(stage.planned(), Some(660));

        let spec: StageSpec = "concurrency=16, requests=200".parse().unwrap();
        let stage = spec.stage(ArrivalKind::Poisson, 1.0);
        assert_eq!(stage.load, Load::Concurrency(16));
        assert_eq!(stage.planned(), Some(200));

        let spec: StageSpec = "rate=8,concurrency=4,arrival=constant,burstiness=3,requests=5"
            .parse()
            .unwrap();
        let Load::Rate {
            kind,
            max_concurrency,
            burstiness,
            ..
        } = spec.stage(ArrivalKind::Poisson, 1.0).load
        else {
            panic!("a rate stage")
        };
        assert_eq!(
            (kind, max_concurrency, burstiness),
            (ArrivalKind::Constant, Some(4), 3.0)
        );
    }

    #[test]
    fn bad_stages_say_what_is_wrong() {
        for (text, says) in [
            ("rate=2", "never ends"),
            ("duration=5s", "neither rate nor concurrency"),
            ("rate=fast,requests=1", "not a request rate"),
            ("rate=0..5,requests=1", "not a request rate"),
            ("rate=inf..5,requests=1", "finite"),
            ("rate=2,ramp=linear,requests=3", "FROM..TO"),
            ("rate=2,ramp=sideways,requests=3", "linear or exponential"),
            ("concurrency=0,requests=3", "above 0"),
            ("rate=2,requests=0", "above 0"),
            ("rate=2,duration=0s", "above 0"),
            ("rate=2,duration=10", "unit"),
            ("rate=2,burstiness=-1,requests=2", "burstiness"),
            ("rate=2,speed=9,requests=2", "unknown key `speed`"),
            ("rate 2", "no `=`"),
        ] {
            let err = text.parse::<StageSpec>().unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
