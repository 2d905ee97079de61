//! [`AcrossRuns`]: one figure of repeated runs — each run's value, their mean with its
//! Student-t interval (the variation between runs), and the pooled value (all runs' requests
//! as one sample) with its own interval.

use tokenmeter::report::{Bounds, Confidence, mean_bounds};

/// One figure of repeated runs, two ways.
///
/// - **Across runs**: each run's own value ([`AcrossRuns::runs`]), their mean and its
///   Student-t interval with n − 1 degrees of freedom ([`AcrossRuns::mean_bounds`]): how much
///   the figure moves from one run to the next (the server's and the machine's variation,
///   since every run sends the same prompts at the same times). Two runs give a wide interval
///   (t = 12.7 at 95% and one degree of freedom); that is what two runs can say.
/// - **Pooled**: every run's requests summarised as one sample ([`AcrossRuns::pooled`]), with
///   the interval of that sample ([`AcrossRuns::pooled_bounds`]): order statistics for a
///   percentile, Wilson for the attainment, none for a rate (its variation is the across-run
///   interval's).
///
/// ```
/// use tokenmeter::report::Confidence;
/// use tokenmeter_bench::AcrossRuns;
///
/// // Three runs' request throughputs.
/// let (mean, bounds) = AcrossRuns::mean_of(&[Some(10.0), Some(12.0), Some(14.0)], Confidence::P95);
/// assert_eq!(mean, Some(12.0));
/// let (lo, hi) = bounds.interval().unwrap();
/// assert!((hi - lo - 2.0 * 4.302_653 * 2.0 / 3f64.sqrt()).abs() < 1e-5);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AcrossRuns {
    /// The figure's key in `--json`, e.g. `ttft_p95`.
    pub name: &'static str,
    /// The figure as the table names it, e.g. `TTFT p95`.
    pub label: &'static str,
    /// Its unit: `s`, `req/s`, `tok/s` or `fraction`.
    pub unit: &'static str,
    /// Each run's value, in run order; `None` for a run that has none (no request succeeded).
    pub runs: Vec<Option<f64>>,
    /// The mean of the runs' values; `None` when no run has one.
    pub mean: Option<f64>,
    /// The interval of that mean (Student t), clipped to the values the figure can take (at
    /// least 0; at most 1 for a fraction); [`Bounds::TooFew`] below two values.
    pub mean_bounds: Bounds,
    /// The figure of all runs' requests as one sample (rates: all requests over the runs'
    /// summed durations); `None` when there is none.
    pub pooled: Option<f64>,
    /// The interval of the pooled figure; `None` for a rate, which has no interval of its own
    /// here (its variation is [`AcrossRuns::mean_bounds`]).
    pub pooled_bounds: Option<Bounds>,
}

impl AcrossRuns {
    /// The mean of the runs' values that exist and the Student-t interval of that mean at
    /// `level` ([`mean_bounds`]): the across-run columns. A run without a value (`None`) is
    /// left out; fewer than two values have no interval.
    ///
    /// ```
    /// use tokenmeter::report::{Bounds, Confidence};
    /// use tokenmeter_bench::AcrossRuns;
    ///
    /// let (mean, bounds) = AcrossRuns::mean_of(&[Some(1.0), None, Some(3.0)], Confidence::P95);
    /// assert_eq!(mean, Some(2.0));
    /// // Two runs: t = 12.706 at 95% and one degree of freedom, standard error 1.
    /// let (lo, hi) = bounds.interval().unwrap();
    /// assert!((hi - 2.0 - 12.706_2).abs() < 1e-4 && (2.0 - lo - 12.706_2).abs() < 1e-4);
    /// let (_, one) = AcrossRuns::mean_of(&[Some(1.0)], Confidence::P95);
    /// assert_eq!(one, Bounds::TooFew { have: 1, need: 2 });
    /// ```
    pub fn mean_of(runs: &[Option<f64>], level: Confidence) -> (Option<f64>, Bounds) {
        let values: Vec<f64> = runs.iter().flatten().copied().collect();
        let mean = (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
        (mean, mean_bounds(&values, level))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn three_runs_mean_and_t_interval_by_hand() {
        // mean 12; sample sd 2; se 2/√3 = 1.154 70; t(0.975, 2) = 4.302 65; half 4.968 36.
        let (mean, bounds) =
            AcrossRuns::mean_of(&[Some(10.0), Some(12.0), Some(14.0)], Confidence::P95);
        assert_eq!(mean, Some(12.0));
        let (lo, hi) = bounds.interval().unwrap();
        assert!(close(lo, 7.031_64) && close(hi, 16.968_36), "{lo} {hi}");
    }

    #[test]
    fn two_runs_give_the_wide_interval_of_one_degree_of_freedom() {
        // mean 2; sd √2; se 1; t(0.975, 1) = 12.706 2.
        let (mean, bounds) = AcrossRuns::mean_of(&[Some(1.0), Some(3.0)], Confidence::P95);
        assert_eq!(mean, Some(2.0));
        let (lo, hi) = bounds.interval().unwrap();
        assert!(close(lo, -10.706_2) && close(hi, 14.706_2), "{lo} {hi}");
        // At 90%: t(0.95, 1) = 6.313 75.
        let level = Confidence::new(0.9).unwrap();
        let (lo, hi) = AcrossRuns::mean_of(&[Some(1.0), Some(3.0)], level)
            .1
            .interval()
            .unwrap();
        assert!(close(lo, -4.313_75) && close(hi, 8.313_75), "{lo} {hi}");
    }

    #[test]
    fn runs_without_a_value_are_left_out_and_one_value_has_no_interval() {
        let (mean, bounds) = AcrossRuns::mean_of(&[None, Some(5.0), None], Confidence::P95);
        assert_eq!(mean, Some(5.0));
        assert_eq!(bounds, Bounds::TooFew { have: 1, need: 2 });
        let (mean, bounds) = AcrossRuns::mean_of(&[None, None], Confidence::P95);
        assert_eq!(mean, None);
        assert_eq!(bounds, Bounds::TooFew { have: 0, need: 2 });
    }
}
