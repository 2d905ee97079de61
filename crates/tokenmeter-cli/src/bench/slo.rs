//! `--slo ttft=1s,tpot=50ms,e2e=20s`: per-request latency objectives, and the goodput predicate.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

/// A request is *good* when it succeeded and met every objective given (inclusive `≤`).
/// An objective left out is not checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Slo {
    /// Time to first token, at most.
    #[serde(rename = "ttft_s", serialize_with = "secs")]
    pub(crate) ttft: Option<Duration>,
    /// Time per output token, at most.
    #[serde(rename = "tpot_s", serialize_with = "secs")]
    pub(crate) tpot: Option<Duration>,
    /// End-to-end latency, at most.
    #[serde(rename = "e2e_s", serialize_with = "secs")]
    pub(crate) e2e: Option<Duration>,
}

fn secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// Why an `--slo` value was rejected.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub(crate) enum SloError {
    /// A part had no `=`.
    #[error("`{0}` is not `name=duration`; write e.g. `--slo ttft=1s,tpot=50ms,e2e=20s`")]
    NotAPair(String),
    /// The name is not an objective we know.
    #[error(
        "unknown objective `{0}`; use ttft, tpot or e2e (e.g. `--slo ttft=1s,tpot=50ms,e2e=20s`)"
    )]
    UnknownName(String),
    /// The same objective twice.
    #[error("objective `{0}` is given twice; keep one")]
    Repeated(String),
    /// The value is not a duration.
    #[error("objective `{name}`: {source}")]
    Duration {
        /// The objective.
        name: String,
        /// Why the value is not a duration.
        source: DurationError,
    },
}

impl FromStr for Slo {
    type Err = SloError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut slo = Slo::default();
        let text = text.trim();
        if text.is_empty() || text.eq_ignore_ascii_case("none") {
            return Ok(slo);
        }
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| SloError::NotAPair(part.to_owned()))?;
            let name = name.trim().to_ascii_lowercase();
            let slot = match name.as_str() {
                "ttft" => &mut slo.ttft,
                "tpot" => &mut slo.tpot,
                "e2e" | "e2el" => &mut slo.e2e,
                _ => return Err(SloError::UnknownName(name)),
            };
            if slot.is_some() {
                return Err(SloError::Repeated(name));
            }
            let duration = parse_duration(value).map_err(|source| SloError::Duration {
                name: name.clone(),
                source,
            })?;
            *slot = Some(duration);
        }
        Ok(slo)
    }
}

impl Slo {
    /// True when no objective is set: every successful request is good.
    pub(crate) fn is_empty(&self) -> bool {
        self.ttft.is_none() && self.tpot.is_none() && self.e2e.is_none()
    }

    /// Whether a successful request with these measurements meets every objective. A missing
    /// TTFT (no token arrived) fails a TTFT objective; a missing TPOT (one output token or
    /// fewer) passes a TPOT objective, as in `vllm bench serve`.
    pub(crate) fn met(
        &self,
        ttft: Option<Duration>,
        tpot: Option<Duration>,
        e2e: Duration,
    ) -> bool {
        let ttft_ok = match (self.ttft, ttft) {
            (None, _) => true,
            (Some(limit), Some(value)) => value <= limit,
            (Some(_), None) => false,
        };
        let tpot_ok = match (self.tpot, tpot) {
            (Some(limit), Some(value)) => value <= limit,
            _ => true,
        };
        let e2e_ok = self.e2e.is_none_or(|limit| e2e <= limit);
        ttft_ok && tpot_ok && e2e_ok
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none (good = succeeded)");
        }
        let parts = [("ttft", self.ttft), ("tpot", self.tpot), ("e2e", self.e2e)];
        let mut first = true;
        for (name, value) in parts {
            if let Some(value) = value {
                if !first {
                    f.write_str(",")?;
                }
                first = false;
                write!(f, "{name}={}", format_duration(value))?;
            }
        }
        Ok(())
    }
}

/// Why a duration was rejected.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub(crate) enum DurationError {
    /// No unit after the number.
    #[error("`{0}` has no unit; add one of us, ms, s, m (e.g. `250ms`)")]
    NoUnit(String),
    /// An unknown unit.
    #[error("`{0}` has an unknown unit; use us, ms, s or m (e.g. `250ms`)")]
    BadUnit(String),
    /// Not a finite, non-negative number.
    #[error("`{0}` is not a non-negative number followed by a unit (e.g. `1.5s`)")]
    BadNumber(String),
}

/// Parses `250ms`, `1.5s`, `2m`, `800us`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return Err(DurationError::BadNumber(text.to_owned()));
    }
    if unit.is_empty() {
        return Err(DurationError::NoUnit(text.to_owned()));
    }
    let value: f64 = number
        .parse()
        .map_err(|_| DurationError::BadNumber(text.to_owned()))?;
    let scale = match unit.trim() {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        _ => return Err(DurationError::BadUnit(text.to_owned())),
    };
    Duration::try_from_secs_f64(value * scale)
        .map_err(|_| DurationError::BadNumber(text.to_owned()))
}

/// `1.5s`, `250ms`, `800us`: the shortest exact-looking form.
pub(crate) fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 1.0 {
        format!("{}s", trim(secs))
    } else if secs >= 1e-3 {
        format!("{}ms", trim(secs * 1e3))
    } else {
        format!("{}us", trim(secs * 1e6))
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn parses_the_documented_form() {
        let slo: Slo = "ttft=1s,tpot=50ms,e2e=20s".parse().unwrap();
        assert_eq!(slo.ttft, Some(ms(1000)));
        assert_eq!(slo.tpot, Some(ms(50)));
        assert_eq!(slo.e2e, Some(ms(20_000)));
        assert_eq!(slo.to_string(), "ttft=1s,tpot=50ms,e2e=20s");
        assert!("none".parse::<Slo>().unwrap().is_empty());
        assert_eq!(
            " tpot = 1.5ms ".parse::<Slo>().unwrap().tpot,
            Some(Duration::from_micros(1500))
        );
    }

    #[test]
    fn rejects_bad_input_with_a_fix() {
        let err = |s: &str| s.parse::<Slo>().unwrap_err().to_string();
        assert!(err("ttft").contains("name=duration"));
        assert!(err("latency=1s").contains("use ttft, tpot or e2e"));
        assert!(err("ttft=1s,ttft=2s").contains("twice"));
        assert!(err("ttft=1").contains("no unit"));
        assert!(err("ttft=1h").contains("unknown unit"));
        assert!(err("ttft=-1s").contains("non-negative"));
        assert!(err("ttft=1.2.3s").contains("non-negative"));
    }

    #[test]
    fn the_predicate_is_inclusive_and_joint() {
        let slo: Slo = "ttft=100ms,tpot=10ms,e2e=1s".parse().unwrap();
        assert!(slo.met(Some(ms(100)), Some(ms(10)), ms(1000)));
        assert!(!slo.met(Some(ms(101)), Some(ms(10)), ms(1000)));
        assert!(!slo.met(Some(ms(100)), Some(ms(11)), ms(1000)));
        assert!(!slo.met(Some(ms(100)), Some(ms(10)), ms(1001)));
        assert!(
            !slo.met(None, None, ms(1)),
            "no token fails a TTFT objective"
        );
        assert!(slo.met(Some(ms(1)), None, ms(1)), "no TPOT passes");
        assert!(Slo::default().met(None, None, ms(99_999)));
    }
}
