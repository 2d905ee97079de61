//! Confidence intervals of a proportion.

/// The normal quantile of a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval of a proportion: `successes` of `n` trials, at the two-sided
/// level whose normal quantile is `z` ([`Z95`] for 95%). `None` for no trial, more successes
/// than trials, or a `z` that is not positive and finite.
///
/// Unlike the normal approximation it stays within 0..=1 and is not empty at 0 or `n`
/// successes: 30 good requests of 30 give about 0.886..=1 at 95%, so an attainment target of
/// 0.9 is not yet shown to be met.
///
/// # Examples
///
/// ```
/// use tokenmeter::report::{Z95, wilson};
///
/// let (lo, hi) = wilson(30, 30, Z95).unwrap();
/// assert!((lo - 0.8865).abs() < 1e-4 && (hi - 1.0).abs() < 1e-12);
/// let (lo, hi) = wilson(45, 50, Z95).unwrap();
/// assert!(lo < 0.9 && 0.9 < hi);
/// assert_eq!(wilson(1, 0, Z95), None);
/// ```
pub fn wilson(successes: u64, n: u64, z: f64) -> Option<(f64, f64)> {
    if n == 0 || successes > n || !(z.is_finite() && z > 0.0) {
        return None;
    }
    let n = n as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // 8 of 10 at 95%: 0.4902..0.9433 (the textbook value).
        let (lo, hi) = wilson(8, 10, Z95).unwrap();
        assert!(
            (lo - 0.4902).abs() < 1e-4 && (hi - 0.9433).abs() < 1e-4,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(0, 20, Z95).unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - 0.1611).abs() < 1e-4, "{hi}");
        assert_eq!(wilson(3, 2, Z95), None);
        assert_eq!(wilson(1, 2, f64::NAN), None);
    }
}
