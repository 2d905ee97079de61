//! [`SloTargets`] (in [`request`](crate::request)): the latency objectives one request carries for itself (from the
//! `x-slo-ttft-ms` and `x-slo-tpot-ms` request headers a gateway or client sends), parsed
//! strictly.
//!
//! The core only carries them: [`Request::set_slo_targets`](crate::Request::set_slo_targets)
//! puts them on the request and its [`RequestRecord::slo_targets`](crate::RequestRecord); an
//! SLO monitor (`tokenmeter-slo`) folds them into the declared classes of its spec and judges
//! the request against them. They never become a label.

use std::fmt;
use std::time::Duration;

/// The request header with the request's own TTFT objective, in whole milliseconds (the name
/// llm-d's endpoint picker reads).
pub const TTFT_HEADER: &str = "x-slo-ttft-ms";
/// The request header with the request's own TPOT objective, in whole milliseconds.
pub const TPOT_HEADER: &str = "x-slo-tpot-ms";
/// The largest objective a header may carry: one hour, in milliseconds.
pub const MAX_TARGET_MS: u64 = 3_600_000;

/// A request's own objectives: TTFT and TPOT, each at most this long (inclusive), or a note
/// that its headers were malformed.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::request::{SloTargets, TTFT_HEADER};
///
/// let targets = SloTargets::from_header_values([b"200".as_slice()], []).unwrap();
/// assert_eq!(targets.ttft, Some(Duration::from_millis(200)));
/// assert_eq!(targets.tpot, None);
///
/// let error = SloTargets::from_header_values([b"12ms".as_slice()], []).unwrap_err();
/// assert_eq!(error.header, TTFT_HEADER);
/// assert!(error.to_string().contains("whole number of milliseconds"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SloTargets {
    /// The most time to first token this request accepts.
    pub ttft: Option<Duration>,
    /// The most time per output token this request accepts.
    pub tpot: Option<Duration>,
    /// Its headers were present but malformed ([`SloTargets::malformed`]): counted apart,
    /// judged against no class.
    pub malformed: bool,
}

impl SloTargets {
    /// Targets with a TTFT and a TPOT objective (either may be `None`).
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = tokenmeter::request::SloTargets::new(Some(Duration::from_millis(200)), None);
    /// assert!(!t.is_empty() && !t.malformed);
    /// ```
    pub const fn new(ttft: Option<Duration>, tpot: Option<Duration>) -> Self {
        Self {
            ttft,
            tpot,
            malformed: false,
        }
    }

    /// The targets of a request whose headers could not be read (what a metering layer that
    /// does not refuse requests records).
    ///
    /// ```
    /// assert!(tokenmeter::request::SloTargets::malformed().malformed);
    /// ```
    pub const fn malformed() -> Self {
        Self {
            ttft: None,
            tpot: None,
            malformed: true,
        }
    }

    /// True when the request carried no objective and no malformed header.
    ///
    /// ```
    /// assert!(tokenmeter::request::SloTargets::default().is_empty());
    /// ```
    pub const fn is_empty(&self) -> bool {
        self.ttft.is_none() && self.tpot.is_none() && !self.malformed
    }

    /// Reads the two headers from their values (every value of each name, in order, so a
    /// repeated header is seen): `Ok` with no objective when neither was sent.
    ///
    /// Each header, when present, must be sent once, as a whole number of milliseconds from 1
    /// to [`MAX_TARGET_MS`] written in ASCII digits only: no unit (`12ms`), sign (`-1`,
    /// `+5`), exponent (`1e3`), fraction, space or empty value.
    ///
    /// ```
    /// use tokenmeter::request::{SloTargets, TargetProblem};
    /// let twice = SloTargets::from_header_values([], [b"5".as_slice(), b"5".as_slice()]);
    /// assert_eq!(twice.unwrap_err().problem, TargetProblem::Repeated);
    /// ```
    pub fn from_header_values<'a>(
        ttft: impl IntoIterator<Item = &'a [u8]>,
        tpot: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Self, TargetError> {
        Ok(Self::new(one(TTFT_HEADER, ttft)?, one(TPOT_HEADER, tpot)?))
    }
}

fn one<'a>(
    header: &'static str,
    values: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Option<Duration>, TargetError> {
    let mut values = values.into_iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let error = |problem| TargetError { header, problem };
    if values.next().is_some() {
        return Err(error(TargetProblem::Repeated));
    }
    if value.is_empty() {
        return Err(error(TargetProblem::Empty));
    }
    if !value.iter().all(u8::is_ascii_digit) {
        return Err(error(TargetProblem::NotDigits));
    }
    // Digits only, so the text is ASCII; more than 19 digits does not fit a u64.
    let ms = std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|ms| (1..=MAX_TARGET_MS).contains(ms))
        .ok_or_else(|| error(TargetProblem::OutOfRange))?;
    Ok(Some(Duration::from_millis(ms)))
}

/// A malformed objective header: which one and what is wrong. Never holds the value sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TargetError {
    /// [`TTFT_HEADER`] or [`TPOT_HEADER`].
    pub header: &'static str,
    /// What is wrong.
    pub problem: TargetProblem,
}

/// What is wrong with an objective header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetProblem {
    /// The header was sent more than once.
    Repeated,
    /// The value was empty.
    Empty,
    /// The value held something other than ASCII digits (a unit, a sign, an exponent, a dot).
    NotDigits,
    /// The number was 0 or above [`MAX_TARGET_MS`].
    OutOfRange,
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.problem {
            TargetProblem::Repeated => "was sent more than once: send it once",
            TargetProblem::Empty => "is empty",
            TargetProblem::NotDigits => "is not digits only (no unit, sign, exponent or fraction)",
            TargetProblem::OutOfRange => "is out of range",
        };
        write!(
            f,
            "the `{}` header {what}; it takes a whole number of milliseconds from 1 to {MAX_TARGET_MS}, like 500",
            self.header
        )
    }
}

impl std::error::Error for TargetError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn ttft(values: &[&[u8]]) -> Result<Option<Duration>, TargetProblem> {
        SloTargets::from_header_values(values.iter().copied(), [])
            .map(|t| t.ttft)
            .map_err(|e| e.problem)
    }

    #[test]
    fn only_whole_milliseconds_in_range_are_read() {
        use TargetProblem::*;
        assert_eq!(ttft(&[]), Ok(None));
        assert_eq!(ttft(&[b"1"]), Ok(Some(Duration::from_millis(1))));
        assert_eq!(ttft(&[b"3600000"]), Ok(Some(Duration::from_secs(3_600))));
        for (value, problem) in [
            (&b"12ms"[..], NotDigits),
            (b"-1", NotDigits),
            (b"+5", NotDigits),
            (b"1e3", NotDigits),
            (b"1.5", NotDigits),
            (b" 5", NotDigits),
            (b"", Empty),
            (b"0", OutOfRange),
            (b"3600001", OutOfRange),
            (b"99999999999999999999999999", OutOfRange),
        ] {
            assert_eq!(ttft(&[value]), Err(problem), "{value:?}");
        }
        assert_eq!(ttft(&[b"5", b"5"]), Err(Repeated));
    }

    #[test]
    fn the_error_names_the_header_and_the_rule_never_the_value() {
        let e = SloTargets::from_header_values([], [b"sk-secret".as_slice()]).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains(TPOT_HEADER) && text.contains("milliseconds"),
            "{text}"
        );
        assert!(!text.contains("sk-secret"), "{text}");
    }
}
