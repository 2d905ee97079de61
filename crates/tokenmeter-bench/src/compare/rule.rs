//! A figure's [`Verdict`] from its difference and the difference's interval, and the level the
//! gating figures' intervals are taken at so the whole comparison's false alarm rate stays
//! within the level asked (Bonferroni).

use super::comparison::Verdict;

/// The verdict of a change whose point estimate is `point` and whose interval is `(lo, hi)`,
/// both relative to the base (or absolute when the base is 0, with `threshold` 0): regressed
/// when the interval lies wholly on the worse side of 0 and the point is worse by more than
/// `threshold`; improved likewise on the better side; otherwise no significant difference.
pub(crate) fn verdict(
    point: f64,
    (lo, hi): (f64, f64),
    higher_is_worse: bool,
    threshold: f64,
) -> Verdict {
    // Turn every figure into one where larger is worse.
    let sign = if higher_is_worse { 1.0 } else { -1.0 };
    let (point, lo, hi) = (point * sign, lo * sign, hi * sign);
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    if lo > 0.0 && point > threshold {
        Verdict::Regressed
    } else if hi < 0.0 && point < -threshold {
        Verdict::Improved
    } else {
        Verdict::NoSignificantDifference
    }
}

/// The two-sided level of each of `gating` figures' intervals so that the chance that any of
/// them excludes a true difference of 0 is at most 1 − `level` (Bonferroni: the error
/// (1 − `level`) shared equally).
pub(crate) fn gating_level(level: f64, gating: usize) -> f64 {
    1.0 - (1.0 - level) / gating.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::*;

    #[test]
    fn a_regression_needs_the_interval_beyond_zero_and_the_point_beyond_the_threshold() {
        let t = 0.05;
        // Latency 10% up, interval 4%..16%: regressed.
        assert_eq!(verdict(0.10, (0.04, 0.16), true, t), Regressed);
        // The interval reaches 0: not significant, however large the point.
        assert_eq!(
            verdict(0.10, (-0.01, 0.21), true, t),
            NoSignificantDifference
        );
        // Significant but within the threshold: it does not matter.
        assert_eq!(
            verdict(0.03, (0.01, 0.05), true, t),
            NoSignificantDifference
        );
        // Latency 10% down: improved.
        assert_eq!(verdict(-0.10, (-0.16, -0.04), true, t), Improved);
        // Throughput 10% down is a regression, up an improvement.
        assert_eq!(verdict(-0.10, (-0.16, -0.04), false, t), Regressed);
        assert_eq!(verdict(0.10, (0.04, 0.16), false, t), Improved);
        // The threshold itself is not beyond it.
        assert_eq!(
            verdict(0.05, (0.01, 0.09), true, t),
            NoSignificantDifference
        );
        // Threshold 0 (a base of 0): any interval clear of 0 decides.
        assert_eq!(verdict(0.5, (0.2, 0.8), false, 0.0), Improved);
        assert_eq!(
            verdict(0.0, (0.0, 0.0), false, 0.0),
            NoSignificantDifference
        );
    }

    #[test]
    fn bonferroni_shares_the_error_among_the_gating_figures() {
        assert!((gating_level(0.95, 5) - 0.99).abs() < 1e-12);
        assert!((gating_level(0.95, 1) - 0.95).abs() < 1e-12);
        assert!((gating_level(0.95, 0) - 0.95).abs() < 1e-12);
    }
}
