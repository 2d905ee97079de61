//! Cancellation injection: a fraction of requests hang up after k tokens or t seconds, as users
//! who close the tab do. The bench counts them `cancelled` (with the tokens they read), and a
//! server that measures what its clients received counts them `cancelled` too: the two sides'
//! counts can be compared exactly.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use rand::Rng;
use tokenmeter_slo::spec::parse_duration;

/// When an injected cancellation hangs up.
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_bench::{CancelAt, WorkloadArgs};
///
/// assert_eq!("20tok".parse(), Ok(CancelAt::Tokens(20)));
/// assert_eq!("500ms".parse(), Ok(CancelAt::After(Duration::from_millis(500))));
/// let mut workload = WorkloadArgs::default();
/// workload.cancel_fraction = 0.1;
/// workload.cancel_after = Some(CancelAt::Tokens(20));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelAt {
    /// Once this many output tokens were read.
    Tokens(u64),
    /// This long after the request was sent.
    After(Duration),
}

impl FromStr for CancelAt {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let bad = || {
            format!(
                "`{text}` is not a cancellation point; give tokens (e.g. 20tok) or a time (e.g. \
                 500ms, 2s)"
            )
        };
        if let Some(n) = text.strip_suffix("tok") {
            return match n.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(CancelAt::Tokens(n)),
                _ => Err(bad()),
            };
        }
        match parse_duration(text) {
            Ok(d) if !d.is_zero() => Ok(CancelAt::After(d)),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for CancelAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CancelAt::Tokens(n) => write!(f, "{n} tokens"),
            CancelAt::After(d) => write!(f, "{d:?}"),
        }
    }
}

/// Which requests hang up, and when.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Injection {
    /// The fraction of requests that hang up, in [0, 1].
    pub(crate) fraction: f64,
    /// When they do.
    pub(crate) at: CancelAt,
}

impl Injection {
    /// Whether the next request hangs up, and when.
    pub(crate) fn pick(&self, rng: &mut impl Rng) -> Option<CancelAt> {
        (rng.random::<f64>() < self.fraction).then_some(self.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng as _;
    use rand::rngs::StdRng;

    #[test]
    fn points_parse_and_bad_ones_say_how() {
        assert_eq!("20tok".parse(), Ok(CancelAt::Tokens(20)));
        assert_eq!(
            "500ms".parse(),
            Ok(CancelAt::After(Duration::from_millis(500)))
        );
        for bad in ["0tok", "tok", "0s", "soon", "5"] {
            let err = bad.parse::<CancelAt>().unwrap_err();
            assert!(err.contains("20tok"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_fraction_is_kept() {
        let injection = Injection {
            fraction: 0.25,
            at: CancelAt::Tokens(3),
        };
        let mut rng = StdRng::seed_from_u64(4);
        let picked = (0..10_000)
            .filter(|_| injection.pick(&mut rng).is_some())
            .count();
        assert!((2_300..2_700).contains(&picked), "{picked}");
    }
}
