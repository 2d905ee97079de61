//! `tokenmeter bench compare BASE NEW`: is the difference between two runs (or two sets of
//! repeated runs) real? For each figure, the difference, its confidence interval from a
//! bootstrap over the raw per-request data, and a verdict.
//!
//! | Module | Concept |
//! |---|---|
//! | [`comparison`] | each figure's difference, its interval and verdict; the settings |
//! | [`side`] | what a side of a comparison is: each run's per-request figures and its shape |
//! | `input` | a side read from a run's `--json`, a `--repeat` JSON or a `--trace` |
//! | `shape` | the facets of a run that make two runs incomparable |
//! | `html` | the `--html` page: both sides' CDFs, the differences with their intervals |
//! | `command` | the command as a library call ([`run`], [`CompareArgs`]) and its verdict |
//!
//! (Being built: the bootstrap and verdicts.)

mod command;
pub mod comparison;
mod html;
mod input;
// TEMPORARY: stand-ins for the statistics being merged; deleted with the merge.
mod pending;
mod shape;
pub mod side;

pub use command::{CompareArgs, run, verdict};
pub use comparison::{CompareSettings, Comparison, FigureComparison, Verdict};
pub use pending::{compare, table, to_json};
pub use side::{RequestFigures, RunRequests, Shape, Side};
