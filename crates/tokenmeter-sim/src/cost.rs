//! [`CostModel`]: how long an engine step takes.

use std::time::Duration;

use crate::error::ConfigError;

/// The default decode table, fitted to an 8B model on one H100: batch → time per decode step.
pub const H100_8B_DECODE: [(u32, Duration); 4] = [
    (1, Duration::from_millis(7)),
    (8, Duration::from_millis(8)),
    (32, Duration::from_millis(12)),
    (64, Duration::from_millis(18)),
];

/// The default fixed cost of a step that runs a prefill.
pub const H100_8B_PREFILL_BASE: Duration = Duration::from_millis(3);

/// The default prefill cost per prompt token (20,000 prompt tokens per second).
pub const H100_8B_PREFILL_PER_TOKEN: Duration = Duration::from_micros(50);

/// The time an engine step takes: a prefill that grows with the prompt tokens it processes, plus
/// one decode step for the running batch, whose time is interpolated from a table.
///
/// The decode time is linear between the table's points, the first point's time below it, and
/// extended with the slope of the last two points above it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_sim::CostModel;
///
/// let cost = CostModel::default(); // 8B model on one H100
/// assert_eq!(cost.decode_step(1), Duration::from_millis(7));
/// assert_eq!(cost.decode_step(32), Duration::from_millis(12));
/// assert_eq!(cost.decode_step(48), Duration::from_millis(15)); // halfway from 12 to 18 ms
/// assert_eq!(cost.prefill(1_000), Duration::from_millis(53)); // 3 ms + 1,000 × 50 µs
///
/// let custom = CostModel::new(
///     [(1, Duration::from_millis(10)), (16, Duration::from_millis(25))],
///     Duration::ZERO,
///     Duration::from_micros(100),
/// )?;
/// assert_eq!(custom.decode_step(16), Duration::from_millis(25));
/// # Ok::<(), tokenmeter_sim::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostModel {
    decode: Vec<(u32, Duration)>,
    prefill_base: Duration,
    prefill_per_token: Duration,
}

impl CostModel {
    /// A cost model with a decode table (batch → step time, batches strictly increasing and
    /// greater than zero), and a prefill cost of `prefill_base` plus `prefill_per_token` per
    /// prompt token.
    pub fn new(
        decode: impl IntoIterator<Item = (u32, Duration)>,
        prefill_base: Duration,
        prefill_per_token: Duration,
    ) -> Result<Self, ConfigError> {
        let decode: Vec<_> = decode.into_iter().collect();
        if decode.is_empty() {
            return Err(ConfigError::EmptyDecodeTable);
        }
        let mut previous = 0;
        for &(batch, _) in &decode {
            if batch <= previous {
                return Err(ConfigError::DecodeTableOrder { batch, previous });
            }
            previous = batch;
        }
        Ok(Self {
            decode,
            prefill_base,
            prefill_per_token,
        })
    }

    /// The decode table.
    pub fn decode_table(&self) -> &[(u32, Duration)] {
        &self.decode
    }

    /// The fixed cost of a step that runs a prefill.
    pub fn prefill_base(&self) -> Duration {
        self.prefill_base
    }

    /// The prefill cost per prompt token.
    pub fn prefill_per_token(&self) -> Duration {
        self.prefill_per_token
    }

    /// The time of one decode step for a batch of `batch` requests (zero for an empty batch).
    pub fn decode_step(&self, batch: usize) -> Duration {
        if batch == 0 {
            return Duration::ZERO;
        }
        let x = batch as f64;
        let point = |i: usize| {
            let (b, t): (u32, Duration) = self.decode[i];
            (f64::from(b), t.as_secs_f64())
        };
        let n = self.decode.len();
        if n == 1 || x <= point(0).0 {
            return self.decode[0].1;
        }
        // The segment that contains x, or the last one, extended past the table.
        let i = (1..n).find(|&i| x <= point(i).0).unwrap_or(n - 1);
        let (xa, ya) = point(i - 1);
        let (xb, yb) = point(i);
        let y = ya + (yb - ya) * (x - xa) / (xb - xa);
        seconds(y)
    }

    /// The time to prefill `tokens` prompt tokens in one step (zero for none).
    pub fn prefill(&self, tokens: u64) -> Duration {
        if tokens == 0 {
            return Duration::ZERO;
        }
        let per = self
            .prefill_per_token
            .as_nanos()
            .saturating_mul(u128::from(tokens));
        self.prefill_base + Duration::from_nanos(u64::try_from(per).unwrap_or(u64::MAX))
    }

    /// The time of a step that prefills `prefill_tokens` and decodes a batch of `decode_batch`.
    pub fn step(&self, prefill_tokens: u64, decode_batch: usize) -> Duration {
        self.prefill(prefill_tokens) + self.decode_step(decode_batch)
    }
}

impl Default for CostModel {
    fn default() -> Self {
        Self {
            decode: H100_8B_DECODE.to_vec(),
            prefill_base: H100_8B_PREFILL_BASE,
            prefill_per_token: H100_8B_PREFILL_PER_TOKEN,
        }
    }
}

/// Seconds as a duration, rounded to the nanosecond; negative or not finite gives zero.
fn seconds(y: f64) -> Duration {
    if y.is_finite() && y > 0.0 {
        Duration::from_nanos((y * 1e9).round() as u64)
    } else {
        Duration::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn table_points_are_exact() {
        let cost = CostModel::default();
        for (batch, time) in H100_8B_DECODE {
            assert_eq!(cost.decode_step(batch as usize), time, "batch {batch}");
        }
    }

    #[test]
    fn between_points_is_linear() {
        let cost = CostModel::default();
        // 8 → 8 ms, 32 → 12 ms: 20 is halfway.
        assert_eq!(cost.decode_step(20), ms(10));
        // 1 → 7 ms, 8 → 8 ms: 1/7 ms per request.
        let four = cost.decode_step(4).as_secs_f64() * 1e3;
        assert!((four - (7.0 + 3.0 / 7.0)).abs() < 1e-6, "{four}");
    }

    #[test]
    fn past_the_table_extends_the_last_slope() {
        let cost = CostModel::default();
        // 32 → 12, 64 → 18: 6 ms per 32 requests.
        assert_eq!(cost.decode_step(96), ms(24));
        assert_eq!(cost.decode_step(128), ms(30));
        assert_eq!(cost.decode_step(0), Duration::ZERO);
    }

    #[test]
    fn below_the_first_point_is_the_first_time() {
        let cost = CostModel::new([(4, ms(5)), (8, ms(9))], ms(0), ms(0)).expect("valid");
        assert_eq!(cost.decode_step(1), ms(5));
        assert_eq!(cost.decode_step(6), ms(7));
        let flat = CostModel::new([(1, ms(5))], ms(0), ms(0)).expect("valid");
        assert_eq!(flat.decode_step(100), ms(5));
    }

    #[test]
    fn prefill_grows_with_the_prompt() {
        let cost = CostModel::default();
        assert_eq!(cost.prefill(0), Duration::ZERO);
        assert_eq!(cost.prefill(100), ms(8));
        assert!(cost.prefill(2_000) > cost.prefill(1_000));
        assert_eq!(cost.step(100, 8), ms(16));
    }

    #[test]
    fn bad_tables_are_refused() {
        assert_eq!(
            CostModel::new([], ms(0), ms(0)),
            Err(ConfigError::EmptyDecodeTable)
        );
        assert_eq!(
            CostModel::new([(8, ms(1)), (8, ms(2))], ms(0), ms(0)),
            Err(ConfigError::DecodeTableOrder {
                batch: 8,
                previous: 8
            })
        );
        assert!(CostModel::new([(0, ms(1))], ms(0), ms(0)).is_err());
    }
}
