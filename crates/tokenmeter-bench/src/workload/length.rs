//! Token-length distributions: `--input-tokens 256`, `--output-tokens 64..512`,
//! `normal:256:64`, `exp:200`.

use std::fmt;
use std::str::FromStr;

use rand::Rng;

/// The largest length a distribution may produce.
pub(crate) const MAX_TOKENS: u64 = 1_000_000;

/// How many tokens a request asks for (input) or generates (output).
///
/// ```
/// # fn main() -> anyhow::Result<()> {
/// use tokenmeter_bench::LengthDist;
///
/// assert_eq!("256".parse::<LengthDist>()?, LengthDist::Fixed(256));
/// assert_eq!("128..512".parse::<LengthDist>()?, LengthDist::Uniform(128, 512));
/// assert_eq!("normal:256:64".parse::<LengthDist>()?, LengthDist::Normal(256.0, 64.0));
/// assert_eq!(LengthDist::Exponential(200.0).to_string(), "exp:200");
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum LengthDist {
    /// Always `n`.
    Fixed(u64),
    /// Uniform over `lo..=hi`.
    Uniform(u64, u64),
    /// Normal with this mean and standard deviation, rounded and clamped to `1..=MAX_TOKENS`.
    Normal(f64, f64),
    /// Exponential with this mean, rounded and clamped to `1..=MAX_TOKENS`.
    Exponential(f64),
}

/// Why a length distribution was rejected.
///
/// ```
/// use tokenmeter_bench::LengthDist;
///
/// let error = "0".parse::<LengthDist>().unwrap_err();
/// assert!(error.to_string().contains("from 1 to 1000000"), "{error}");
/// ```
#[derive(Debug, thiserror::Error, PartialEq)]
#[error(
    "`{0}` is not a token length; use `N` (fixed), `LO..HI` (uniform), `normal:MEAN:SD` or \
     `exp:MEAN`, with lengths from 1 to 1000000"
)]
pub struct LengthError(String);

impl FromStr for LengthDist {
    type Err = LengthError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || LengthError(text.to_owned());
        let int = |s: &str| -> Result<u64, LengthError> {
            let n: u64 = s.trim().parse().map_err(|_| bad())?;
            (1..=MAX_TOKENS).contains(&n).then_some(n).ok_or_else(bad)
        };
        let float = |s: &str| -> Result<f64, LengthError> {
            let x: f64 = s.trim().parse().map_err(|_| bad())?;
            (x.is_finite() && x >= 0.0 && x <= MAX_TOKENS as f64)
                .then_some(x)
                .ok_or_else(bad)
        };
        let text_t = text.trim();
        if let Some(rest) = text_t.strip_prefix("normal:") {
            let (mean, sd) = rest.split_once(':').ok_or_else(bad)?;
            let mean = float(mean)?;
            if mean < 1.0 {
                return Err(bad());
            }
            return Ok(LengthDist::Normal(mean, float(sd)?));
        }
        if let Some(rest) = text_t.strip_prefix("exp:") {
            let mean = float(rest)?;
            if mean < 1.0 {
                return Err(bad());
            }
            return Ok(LengthDist::Exponential(mean));
        }
        if let Some((lo, hi)) = text_t.split_once("..") {
            let (lo, hi) = (int(lo)?, int(hi)?);
            if lo > hi {
                return Err(bad());
            }
            return Ok(LengthDist::Uniform(lo, hi));
        }
        Ok(LengthDist::Fixed(int(text_t)?))
    }
}

impl fmt::Display for LengthDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LengthDist::Fixed(n) => write!(f, "{n}"),
            LengthDist::Uniform(lo, hi) => write!(f, "{lo}..{hi}"),
            LengthDist::Normal(mean, sd) => write!(f, "normal:{mean}:{sd}"),
            LengthDist::Exponential(mean) => write!(f, "exp:{mean}"),
        }
    }
}

impl LengthDist {
    /// One length, in `1..=MAX_TOKENS`.
    pub(crate) fn sample(&self, rng: &mut impl Rng) -> u64 {
        let x = match *self {
            LengthDist::Fixed(n) => return n,
            LengthDist::Uniform(lo, hi) => return rng.random_range(lo..=hi),
            LengthDist::Normal(mean, sd) => {
                // Box–Muller: two uniforms in (0, 1] give one standard normal.
                let u1: f64 = 1.0 - rng.random::<f64>();
                let u2: f64 = rng.random::<f64>();
                mean + sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            }
            LengthDist::Exponential(mean) => -mean * (1.0 - rng.random::<f64>()).ln(),
        };
        (x.round() as u64).clamp(1, MAX_TOKENS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn parses_every_form() {
        assert_eq!("256".parse(), Ok(LengthDist::Fixed(256)));
        assert_eq!("64..512".parse(), Ok(LengthDist::Uniform(64, 512)));
        assert_eq!("normal:256:64".parse(), Ok(LengthDist::Normal(256.0, 64.0)));
        assert_eq!("exp:200".parse(), Ok(LengthDist::Exponential(200.0)));
        for bad in [
            "0", "-3", "ten", "9..3", "normal:5", "exp:-1", "2000000", "1..x",
        ] {
            let err = bad.parse::<LengthDist>().unwrap_err().to_string();
            assert!(err.contains("LO..HI"), "{bad}: {err}");
        }
    }

    #[test]
    fn samples_stay_in_range_and_follow_the_mean() {
        let mut rng = StdRng::seed_from_u64(1);
        let n = 20_000;
        for (dist, mean) in [
            (LengthDist::Uniform(10, 30), 20.0),
            (LengthDist::Normal(200.0, 20.0), 200.0),
            (LengthDist::Exponential(100.0), 100.0),
        ] {
            let samples: Vec<u64> = (0..n).map(|_| dist.sample(&mut rng)).collect();
            assert!(samples.iter().all(|&s| (1..=MAX_TOKENS).contains(&s)));
            let avg = samples.iter().sum::<u64>() as f64 / n as f64;
            assert!((avg - mean).abs() < mean * 0.05, "{dist}: mean {avg}");
        }
        assert_eq!(LengthDist::Fixed(7).sample(&mut rng), 7);
    }
}
