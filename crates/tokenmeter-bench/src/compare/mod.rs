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
//! | `input` | a side read from a run's `--json`, a `--repeat` JSON or a `--trace` |
//! | `of_run` | a side made of finished runs ([`Side::of_runs`]) |
//! | `shape` | the facets of a run that make two runs incomparable |
//! | `html` | the `--html` page: both sides' CDFs, the differences with their intervals |
//! | `command` | the command as a library call ([`run`], [`CompareArgs`]) and its verdict |
//! | `figures` | which figures are compared, which way is worse, which gate the exit code |
//! | `pooled` | a side's requests laid out for resampling; the figures of a resample |
//! | `bootstrap` | the two-level bootstrap of every figure's difference |
//! | `rule` | a verdict from a difference's interval and the threshold; the gating level |
//! | `compute` | [`compare`]: the figures, the bootstrap, the verdicts |
//! | `table` | [`table`]: the terminal table |
//! | `threshold` | `--threshold`'s text form |
//! | `json` | [`to_json`]: the JSON |

mod bootstrap;
mod command;
pub mod comparison;
mod compute;
mod figures;
mod html;
mod input;
mod json;
mod of_run;
mod pooled;
mod rule;
mod shape;
pub mod side;
mod table;
mod threshold;

pub use command::{CompareArgs, run, verdict};
pub use comparison::{CompareSettings, Comparison, FigureComparison, Verdict};
pub use compute::{MIN_RESAMPLES, compare};
pub use json::to_json;
pub use side::{RequestFigures, RunRequests, Shape, Side};
pub use table::table;
pub use threshold::parse_threshold;
