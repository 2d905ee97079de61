//! `--repeat N`: the same plan run N times, and each figure across the runs ([`Repeated`]).
//!
//! | Module | Concept |
//! |---|---|
//! | `across` | one figure across runs: each run's value, their mean and Student-t interval, the pooled value and its interval |
//! | `figures` | the figures reported, read from one run and from all runs pooled |
//! | `tests` | the figures of runs measured on a manual clock |

mod across;
mod figures;
#[cfg(test)]
mod tests;

use std::time::Duration;

use tokenmeter::report::Confidence;

pub use across::AcrossRuns;

use crate::finished::Run;

/// The same plan run several times ([`Plan::run_repeated`](crate::Plan::run_repeated),
/// `tokenmeter bench --repeat N`): each finished [`Run`], and each key figure across them
/// ([`AcrossRuns`]): every run's value, their mean with its interval (the variation between
/// runs), and the pooled value of all runs' requests with its own interval.
///
/// Every run sends the same requests at the same times (the same seed: the same prompts,
/// lengths and arrival times), so the variation between runs is the server's and the
/// machine's, not the workload's.
///
/// ```
/// use tokenmeter_bench::Plan;
///
/// # #[tokio::main]
/// # async fn main() -> anyhow::Result<()> {
/// let repeated = Plan::builder()
///     .requests(4)
///     .rate(f64::INFINITY)
///     .output_tokens(4)
///     .repeat(2)
///     .build()?
///     .run_repeated()
///     .await?;
/// assert_eq!(repeated.runs().len(), 2);
/// let ttft = repeated.figure("ttft_p50").unwrap();
/// assert_eq!(ttft.runs.len(), 2);
/// assert!(ttft.mean.unwrap() > 0.0 && ttft.pooled.unwrap() > 0.0);
/// assert_eq!(repeated.to_json()["repeat"]["n"], 2);
/// assert!(repeated.table().contains("across 2 runs"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Repeated {
    pub(crate) runs: Vec<Run>,
    pub(crate) cooldown: Duration,
    pub(crate) level: Confidence,
    pub(crate) figures: Vec<AcrossRuns>,
}

/// Reading repeated runs: the runs, each figure across them, the pause and the level.
///
/// ```
/// use std::time::Duration;
///
/// use tokenmeter::report::Confidence;
/// use tokenmeter_bench::Plan;
///
/// # #[tokio::main]
/// # async fn main() -> anyhow::Result<()> {
/// let repeated = Plan::builder()
///     .requests(3)
///     .rate(f64::INFINITY)
///     .output_tokens(3)
///     .slo("none")
///     .repeat(3)
///     .cooldown(Duration::from_millis(10))
///     .build()?
///     .run_repeated()
///     .await?;
/// assert!(repeated.runs().iter().all(|run| run.successful() == 3));
/// assert_eq!(repeated.figures()[0].name, "ttft_p50");
/// let attainment = repeated.figure("attainment").unwrap();
/// assert_eq!((attainment.mean, attainment.pooled), (Some(1.0), Some(1.0)));
/// assert_eq!(repeated.cooldown(), Duration::from_millis(10));
/// assert_eq!(repeated.confidence(), Confidence::P95);
/// assert_eq!(repeated.cached_prompt_shares().len(), 3);
/// # Ok(())
/// # }
/// ```
impl Repeated {
    /// The runs' figures at `level`.
    pub(crate) fn of(runs: Vec<Run>, cooldown: Duration, level: Confidence) -> Self {
        let figures = figures::of(&runs, level);
        Self {
            runs,
            cooldown,
            level,
            figures,
        }
    }

    /// Each run, in the order they ran.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// Each key figure across the runs, in the table's order: TTFT p50/p95/p99, TPOT
    /// p50/p95, ITL p50/p95, E2E p50/p95, request and output throughput, goodput,
    /// attainment.
    pub fn figures(&self) -> &[AcrossRuns] {
        &self.figures
    }

    /// The figure named `name` (its `--json` key, e.g. `ttft_p95`).
    pub fn figure(&self, name: &str) -> Option<&AcrossRuns> {
        self.figures.iter().find(|f| f.name == name)
    }

    /// The pause between runs.
    pub fn cooldown(&self) -> Duration {
        self.cooldown
    }

    /// The level of every interval.
    pub fn confidence(&self) -> Confidence {
        self.level
    }

    /// Each run's share of its prompt tokens that the server said it served from its prompt
    /// cache (`usage.prompt_tokens_details.cached_tokens` over the prompt tokens of successful
    /// requests); `None` for a run with none. Every run sends the same prompts, so a server
    /// with a prefix cache finds later runs' prompts cached: unequal shares mean the runs
    /// were not served alike.
    pub fn cached_prompt_shares(&self) -> Vec<Option<f64>> {
        self.runs
            .iter()
            .map(|run| {
                let s = &run.summary;
                (s.total_input_tokens > 0)
                    .then(|| s.total_cached_input_tokens as f64 / s.total_input_tokens as f64)
            })
            .collect()
    }
}
