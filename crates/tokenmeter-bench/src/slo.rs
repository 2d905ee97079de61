//! `--slo ttft=1s,tpot=50ms,e2e=20s`: the shorthand for per-request latency objectives. It
//! compiles into a class of a `tokenmeter-slo` spec ([`Slo::class`]) whose [`Verdict`] decides which
//! requests are good; durations are read by `tokenmeter-slo`'s parser.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;
use tokenmeter::RequestRecord;
use tokenmeter_slo::spec::parse_duration;
use tokenmeter_slo::{LatencyMetric, Objective, SloClass, Verdict};

use crate::format::format_duration;
use crate::measured::Measured;

/// A request is *good* when it succeeded and met every objective given (inclusive `≤`).
/// An objective left out is not checked.
/// Read from `ttft=1s,tpot=50ms,e2e=20s` (or `none`) by [`FromStr`].
///
/// ```
/// # fn main() -> anyhow::Result<()> {
/// use tokenmeter_bench::Slo;
///
/// let slo: Slo = "ttft=500ms,tpot=40ms".parse()?;
/// assert_eq!(slo.to_string(), "ttft=500ms,tpot=40ms");
/// assert_eq!("none".parse::<Slo>()?, Slo::default());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Slo {
    /// Time to first token, at most.
    #[serde(rename = "ttft_s", serialize_with = "secs")]
    pub(crate) ttft: Option<Duration>,
    /// Time per output token, at most.
    #[serde(rename = "tpot_s", serialize_with = "secs")]
    pub(crate) tpot: Option<Duration>,
    /// End-to-end latency, at most.
    #[serde(rename = "e2e_s", serialize_with = "secs")]
    pub(crate) e2e: Option<Duration>,
    /// Every inter-token gap of the request, at most (its worst ITL; `docs/src/reference/metrics.md` §6).
    #[serde(rename = "itl_s", serialize_with = "secs")]
    pub(crate) itl: Option<Duration>,
    /// From when TTFT and E2E are judged (`--slo-from`): the schedule by default.
    pub(crate) judged_from: JudgedFrom,
}

/// From when a request's TTFT and E2E are judged against the objectives (`--slo-from`).
///
/// ```
/// use tokenmeter_bench::{BenchArgs, JudgedFrom};
///
/// let mut args = BenchArgs::default();
/// assert_eq!(args.slo_from, JudgedFrom::Schedule);
/// // Judge goodput as `vllm bench serve` does.
/// args.slo_from = JudgedFrom::Send;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum JudgedFrom {
    /// From when the request was due (its arrival in an open loop): what its user felt,
    /// the time it waited in the client for a slot included.
    #[default]
    Schedule,
    /// From when it was sent, as `vllm bench serve` judges goodput.
    Send,
}

fn secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// Why an `--slo` value was rejected.
///
/// ```
/// use tokenmeter_bench::{Slo, SloError};
///
/// let error = "ttft=1s,speed=fast".parse::<Slo>().unwrap_err();
/// assert_eq!(error, SloError::UnknownName("speed".to_owned()));
/// assert!(error.to_string().contains("use ttft, tpot, itl or e2e"));
/// ```
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum SloError {
    /// A part had no `=`.
    #[error("`{0}` is not `name=duration`; write e.g. `--slo ttft=1s,tpot=50ms,e2e=20s`")]
    NotAPair(String),
    /// The name is not an objective we know.
    #[error(
        "unknown objective `{0}`; use ttft, tpot, itl or e2e (e.g. `--slo ttft=1s,tpot=50ms,e2e=20s`)"
    )]
    UnknownName(String),
    /// The same objective twice.
    #[error("objective `{0}` is given twice; keep one")]
    Repeated(String),
    /// The value is not a duration.
    #[error("objective `{name}`: {reason}")]
    Duration {
        /// The objective.
        name: String,
        /// Why the value is not a duration.
        reason: String,
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
                "itl" => &mut slo.itl,
                _ => return Err(SloError::UnknownName(name)),
            };
            if slot.is_some() {
                return Err(SloError::Repeated(name));
            }
            let duration = parse_duration(value).map_err(|reason| SloError::Duration {
                name: name.clone(),
                reason,
            })?;
            *slot = Some(duration);
        }
        Ok(slo)
    }
}

impl Slo {
    /// True when no objective is set: every successful request is good.
    pub(crate) fn is_empty(&self) -> bool {
        self.ttft.is_none() && self.tpot.is_none() && self.e2e.is_none() && self.itl.is_none()
    }

    /// The objectives as a class of a `tokenmeter-slo` spec (named `bench`, matching every
    /// request): a latency objective per metric given, named `ttft`, `tpot`, `e2e` (the
    /// percentile, 99, only matters to a monitor). `None` when no objective but ITL is given:
    /// `tokenmeter-slo` has no ITL metric, so the [`Judge`] checks that one itself.
    pub(crate) fn class(&self) -> Option<SloClass> {
        let mut class = SloClass::new("bench");
        for (metric, limit) in [
            (LatencyMetric::Ttft, self.ttft),
            (LatencyMetric::Tpot, self.tpot),
            (LatencyMetric::E2e, self.e2e),
        ] {
            if let Some(limit) = limit {
                class =
                    class.objective(Objective::latency(metric, 99.0, limit).named(metric.as_str()));
            }
        }
        (!class.objectives.is_empty()).then_some(class)
    }
}

/// Decides which requests are good: [`Verdict`] against the compiled spec's class, on the
/// latencies `vllm bench serve` uses (E2E ends at the last token, [`Measured::latency`]).
#[derive(Clone, Debug)]
pub(crate) struct Judge {
    class: Option<SloClass>,
    itl: Option<Duration>,
    from: JudgedFrom,
}

impl Judge {
    /// A judge for `slo`.
    pub(crate) fn new(slo: &Slo) -> Self {
        Self {
            class: slo.class(),
            itl: slo.itl,
            from: slo.judged_from,
        }
    }

    /// True when `measured` succeeded (not degraded) and met every objective (inclusive `≤`).
    /// An objective whose value was not observed does not count, as in `vllm bench serve`
    /// (no TPOT for a one-token answer; no TTFT when no token came). TTFT and E2E are timed
    /// from the schedule unless the objectives say from the send ([`JudgedFrom`]).
    pub(crate) fn is_good(&self, measured: &Measured) -> bool {
        let Some(record) = measured.record() else {
            return false;
        };
        let longest = measured.max_gap().or_else(|| record.item_gaps().max());
        let itl_met = self
            .itl
            .is_none_or(|limit| longest.is_none_or(|gap| gap <= limit));
        itl_met
            && match &self.class {
                None => record.outcome.is_success(),
                Some(class) => Verdict::of(class, &vllm_view(&record, measured, self.from)).good,
            }
    }
}

/// The record as `vllm bench serve` times it: its E2E ends at the last token-bearing chunk,
/// not at the end of the stream (the finish and usage frames come after it); from the
/// schedule, TTFT and E2E start when the request was due (the client queue time added).
fn vllm_view(record: &RequestRecord, measured: &Measured, from: JudgedFrom) -> RequestRecord {
    let mut view = record.clone();
    view.item_times = None;
    view.e2e = measured.latency().unwrap_or(record.e2e);
    if measured.not_streamed {
        // A whole answer has no TPOT (its tokens came at one instant): not judged on it.
        view.output_tokens = view.output_tokens.min(1);
    }
    if from == JudgedFrom::Schedule
        && let Some(queue) = measured.client_queue()
    {
        view.ttft = view.ttft.map(|t| t + queue);
        view.e2e += queue;
    }
    view
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none (good = succeeded)");
        }
        let parts = [
            ("ttft", self.ttft),
            ("tpot", self.tpot),
            ("itl", self.itl),
            ("e2e", self.e2e),
        ];
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

/// Reads and validates the SLO spec at `path` (`--slo-spec`).
pub(crate) fn read_spec(path: &std::path::Path) -> anyhow::Result<tokenmeter_slo::SloSpec> {
    use anyhow::Context as _;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the SLO spec {}", path.display()))?;
    tokenmeter_slo::SloSpec::from_toml(&text).with_context(|| format!("in {}", path.display()))
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
        assert!(err("latency=1s").contains("use ttft, tpot, itl or e2e"));
        assert!(err("ttft=1s,ttft=2s").contains("twice"));
        assert!(err("ttft=1").contains("no unit"));
        assert!(err("ttft=1y").contains("unknown unit"));
        assert!(err("ttft=-1s").contains("does not start with a number"));
        assert!(err("ttft=1.2.3s").contains("does not start with a number"));
    }

    /// A record through the bench's own sink: tokens at the given ms after the send, the end
    /// `tail_ms` after the last one.
    fn measured(tokens_at_ms: &[u64], output_tokens: u64, tail_ms: u64) -> Measured {
        use tokenmeter::{Clock, Labels, ManualClock, Meter};
        let time = ManualClock::new();
        let records = crate::records::Records::default();
        let meter = Meter::builder()
            .clock(Clock::manual(&time))
            .sink(records.clone())
            .build();
        let mut request = meter.series(&Labels::client("chat")).start();
        let id = request.id();
        for &at in tokens_at_ms {
            request.record_tokens_at(1, ms(at));
        }
        request.set_output_tokens(output_tokens);
        time.advance(ms(tokens_at_ms.last().copied().unwrap_or(0) + tail_ms));
        request.succeed();
        Measured {
            record: records.take(id).map(crate::kept_record::KeptRecord::from),
            ..Measured::default()
        }
    }

    #[test]
    fn the_verdict_is_inclusive_joint_and_ends_e2e_at_the_last_token() {
        let judge = Judge::new(&"ttft=100ms,tpot=10ms,e2e=1s".parse().unwrap());
        // TTFT 100 ms, TPOT (1000 − 100) / 90 = 10 ms, last token at 1 s, stream end 5 ms later.
        assert!(
            judge.is_good(&measured(&[100, 1000], 91, 5)),
            "all at their limits"
        );
        assert!(!judge.is_good(&measured(&[101, 1000], 91, 5)));
        assert!(!judge.is_good(&measured(&[100, 1000], 90, 5)), "TPOT above");
        assert!(
            !judge.is_good(&measured(&[100, 1001], 1000, 0)),
            "E2E above"
        );
        assert!(judge.is_good(&measured(&[100], 1, 0)), "no TPOT passes");
        assert!(
            judge.is_good(&measured(&[], 0, 1)),
            "no token: no TTFT to judge, as in vLLM (its TTFT is then 0)"
        );
        let lost = Measured::default();
        assert!(!judge.is_good(&lost), "a lost request is not good");
        assert!(Judge::new(&Slo::default()).is_good(&measured(&[5_000], 1, 0)));
        assert!(Slo::default().class().is_none());
    }

    #[test]
    fn the_itl_objective_bounds_every_gap() {
        let judge = Judge::new(&"itl=50ms".parse().unwrap());
        assert!(
            judge.is_good(&measured(&[10, 60, 110], 3, 0)),
            "gaps at the limit"
        );
        assert!(
            !judge.is_good(&measured(&[10, 60, 111], 3, 0)),
            "one gap above"
        );
        assert!(
            judge.is_good(&measured(&[900], 1, 0)),
            "no gap: nothing to judge"
        );
        let both = Judge::new(&"ttft=5ms,itl=50ms".parse().unwrap());
        assert!(!both.is_good(&measured(&[10, 60], 2, 0)), "joint with TTFT");
        assert_eq!(
            "itl=50ms,ttft=1s".parse::<Slo>().unwrap().to_string(),
            "ttft=1s,itl=50ms"
        );
    }
}
