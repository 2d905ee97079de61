//! `tokenmeter bench compare BASE NEW`: is the difference between two runs (or two sets of
//! repeated runs) real? For each figure, the difference, its confidence interval from a
//! bootstrap over the raw per-request data, and a verdict.
//!
//! | Module | Concept |
//! |---|---|
//! | [`comparison`] | each figure's difference, its interval and verdict; the settings |
//! | [`side`] | what a side of a comparison is: each run's per-request figures and its shape |
//!
//! (Being built: the bootstrap and verdicts, the inputs read from traces and `--json`, the
//! outputs.)

pub mod comparison;
pub mod side;

pub use comparison::{CompareSettings, Comparison, FigureComparison, Verdict};
pub use side::{RequestFigures, RunRequests, Shape, Side};
