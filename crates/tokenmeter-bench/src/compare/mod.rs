//! `tokenmeter bench compare BASE NEW`: is the difference between two runs (or two sets of
//! repeated runs) real? For each figure, the difference, its confidence interval from a
//! bootstrap over the raw per-request data, and a verdict.
//!
//! ```
//! use tokenmeter_bench::compare::{compare, table, to_json, CompareSettings, RequestFigures, RunRequests, Side};
//!
//! let mut run = RunRequests::default();
//! run.duration_s = 10.0;
//! let mut r = RequestFigures::default();
//! (r.ok, r.good, r.ttft) = (true, true, Some(0.25));
//! run.requests = vec![r; 100];
//! let mut side = Side::default();
//! side.runs.push(run);
//! let comparison = compare(&side, &side, &CompareSettings::default())?;
//! assert!(!comparison.regressed());
//! println!("{}", table(&comparison));
//! assert_eq!(to_json(&comparison)["regressed"], false);
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! | Module | Concept |
//! |---|---|
//! | [`comparison`] | each figure's difference, its interval and verdict; the settings |
//! | [`side`] | what a side of a comparison is: each run's per-request figures and its shape |
//! | `figures` | which figures are compared, which way is worse, which gate the exit code |
//! | `pooled` | a side's requests laid out for resampling; the figures of a resample |
//! | `bootstrap` | the two-level bootstrap of every figure's difference |
//! | `verdict` | a verdict from a difference's interval and the threshold; the gating level |
//! | `run` | [`compare`]: the figures, the bootstrap, the verdicts |
//! | `table` | [`table`]: the terminal table |
//! | `json` | [`to_json`]: the JSON |
//!
//! (Being built: the inputs read from traces and `--json`, the HTML.)

mod bootstrap;
pub mod comparison;
mod figures;
mod json;
mod pooled;
mod run;
pub mod side;
mod table;
mod verdict;

pub use comparison::{CompareSettings, Comparison, FigureComparison, Verdict};
pub use json::to_json;
pub use run::{MIN_RESAMPLES, compare};
pub use side::{RequestFigures, RunRequests, Shape, Side};
pub use table::table;
