//! [`Comparison`]: each figure of two sides, their difference with its confidence interval,
//! and a [`Verdict`]; [`CompareSettings`], what a comparison is asked for.
//!
//! ```
//! use tokenmeter_bench::compare::comparison::{CompareSettings, Verdict};
//! assert_eq!(CompareSettings::default().confidence.level(), 0.95);
//! assert_eq!(Verdict::Regressed.as_str(), "regressed");
//! ```

use tokenmeter::report::{Bounds, Confidence};

/// How a comparison is made.
///
/// ```
/// use tokenmeter_bench::compare::CompareSettings;
///
/// let mut settings = CompareSettings::default();
/// assert_eq!((settings.threshold, settings.resamples), (0.05, 2_000));
/// settings.threshold = 0.10; // changes under 10% do not matter
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CompareSettings {
    /// The confidence level of the intervals (default 95%).
    pub confidence: Confidence,
    /// A relative difference below which a change does not matter, as a fraction of the
    /// base's value (default 0.05: 5%).
    pub threshold: f64,
    /// Bootstrap resamples (default 2,000).
    pub resamples: u32,
    /// The bootstrap's seed: the same inputs and seed give the same intervals (default 0).
    pub seed: u64,
    /// Compare runs of different shapes (model, lengths, load) anyway (default false).
    pub allow_different_shapes: bool,
}

impl Verdict {
    /// The verdict as the table and the JSON write it: `regressed`, `improved`,
    /// `no significant difference`, `too few samples`.
    ///
    /// ```
    /// use tokenmeter_bench::compare::Verdict;
    /// assert_eq!(Verdict::NoSignificantDifference.as_str(), "no significant difference");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Regressed => "regressed",
            Self::Improved => "improved",
            Self::NoSignificantDifference => "no significant difference",
            Self::TooFew => "too few samples",
        }
    }
}

impl Default for CompareSettings {
    fn default() -> Self {
        Self {
            confidence: Confidence::P95,
            threshold: 0.05,
            resamples: 2_000,
            seed: 0,
            allow_different_shapes: false,
        }
    }
}

/// What a figure's difference means.
///
/// ```
/// use tokenmeter_bench::compare::Verdict;
/// assert_ne!(Verdict::Regressed, Verdict::TooFew);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Worse beyond the threshold, and the interval says it is real.
    Regressed,
    /// Better beyond the threshold, and the interval says it is real.
    Improved,
    /// The interval cannot tell a difference beyond the threshold from none.
    NoSignificantDifference,
    /// A side has too few samples for this figure at this level.
    TooFew,
}

/// One figure of both sides.
///
/// ```
/// use tokenmeter_bench::compare::{compare, CompareSettings, RequestFigures, RunRequests, Side};
///
/// let mut run = RunRequests::default();
/// run.duration_s = 10.0;
/// let mut r = RequestFigures::default();
/// (r.ok, r.good) = (true, true);
/// run.requests = vec![r; 20];
/// let mut side = Side::default();
/// side.runs.push(run);
/// let comparison = compare(&side, &side, &CompareSettings::default())?;
/// let rate = comparison.figures.iter().find(|f| f.name == "request_throughput").unwrap();
/// assert_eq!((rate.base, rate.new, rate.difference), (2.0, 2.0, 0.0));
/// assert!(!rate.gates && rate.level == 0.95);
/// # Ok::<(), anyhow::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct FigureComparison {
    /// The figure's name as the JSON writes it, e.g. `ttft_p95_ms`.
    pub name: String,
    /// The figure as the table labels it, e.g. `TTFT p95 (ms)`.
    pub label: String,
    /// Larger is worse (latencies), or better (throughput, goodput, attainment).
    pub higher_is_worse: bool,
    /// The base's value.
    pub base: f64,
    /// The new side's value.
    pub new: f64,
    /// new − base, with its interval.
    pub difference: f64,
    /// The interval of new − base.
    pub difference_bounds: Bounds,
    /// (new − base) / base, with its interval; `None` when the base is 0.
    pub relative: Option<f64>,
    /// The interval of the relative difference.
    pub relative_bounds: Option<Bounds>,
    /// What it means.
    pub verdict: Verdict,
    /// It decides the exit code (a regression of it fails the comparison).
    pub gates: bool,
    /// The two-sided level of this figure's intervals: the level asked, or for a gating
    /// figure the stricter level that keeps the whole comparison's false alarm rate within it
    /// (Bonferroni over the gating figures).
    pub level: f64,
}

/// Two sides compared figure by figure: [`compare`](super::compare) makes it,
/// [`table`](super::table) and [`to_json`](super::to_json) render it.
///
/// ```
/// use tokenmeter_bench::compare::{compare, CompareSettings, RequestFigures, RunRequests, Side};
///
/// let mut run = RunRequests::default();
/// run.duration_s = 10.0;
/// let mut r = RequestFigures::default();
/// (r.ok, r.good) = (true, true);
/// run.requests = vec![r; 20];
/// let mut side = Side::default();
/// side.runs.push(run);
/// let comparison = compare(&side, &side, &CompareSettings::default())?;
/// assert!(!comparison.regressed());
/// # Ok::<(), anyhow::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Comparison {
    /// How it was made.
    pub settings: CompareSettings,
    /// The base side's source and run count.
    pub base: (String, usize),
    /// The new side's source and run count.
    pub new: (String, usize),
    /// Each figure.
    pub figures: Vec<FigureComparison>,
    /// How the two sides' shapes differ (empty when they do not); non-empty only when
    /// [`CompareSettings::allow_different_shapes`] let the comparison go on.
    pub shape_differences: Vec<String>,
    /// What the reader should know (a figure left out and why, the bootstrap used, …).
    pub notes: Vec<String>,
}

impl Comparison {
    /// A gating figure regressed: the comparison fails (exit code 1).
    ///
    /// ```
    /// use tokenmeter_bench::compare::{compare, CompareSettings, RequestFigures, RunRequests, Side};
    ///
    /// let side = |good: usize| {
    ///     let mut run = RunRequests::default();
    ///     run.duration_s = 100.0;
    ///     let mut r = RequestFigures::default();
    ///     r.ok = true;
    ///     run.requests = vec![r; 1000];
    ///     run.requests[..good].iter_mut().for_each(|r| r.good = true);
    ///     let mut side = Side::default();
    ///     side.runs = vec![run.clone(), run]; // a rate is judged over 2 runs or more
    ///     side
    /// };
    /// let settings = CompareSettings::default();
    /// // Goodput 9 → 6 requests/s: a regression of a gating figure.
    /// assert!(compare(&side(900), &side(600), &settings)?.regressed());
    /// assert!(!compare(&side(900), &side(900), &settings)?.regressed());
    /// # Ok::<(), anyhow::Error>(())
    /// ```
    pub fn regressed(&self) -> bool {
        self.figures
            .iter()
            .any(|f| f.gates && f.verdict == Verdict::Regressed)
    }
}
