//! [`Comparison`]: each figure of two sides, their difference with its confidence interval,
//! and a [`Verdict`]; [`CompareSettings`], what a comparison is asked for.

use tokenmeter::report::{Bounds, Confidence};

/// How a comparison is made.
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
}

/// Two sides compared figure by figure.
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
    pub fn regressed(&self) -> bool {
        self.figures
            .iter()
            .any(|f| f.gates && f.verdict == Verdict::Regressed)
    }
}
