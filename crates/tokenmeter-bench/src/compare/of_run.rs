//! A [`Side`] made of finished [`Run`]s, for a comparison in code: the same per-request figures
//! a run's `--json` and `--trace` hold, with every request's inter-token gaps.

use anyhow::Context as _;
use serde_json::json;

use super::input::samples;
use super::shape;
use super::side::Side;
use crate::finished::Run;
use crate::output::samples_json;

impl Side {
    /// One side of a comparison made of `runs` (one run, or the repeated runs of one plan),
    /// named `source` in the outputs; its shape is the first run's, its requests judged good
    /// by each run's own objectives, with their inter-token gaps (so ITL is compared too). An
    /// error only if a run's requests could not be read back (a defect worth reporting).
    ///
    /// ```
    /// use tokenmeter_bench::compare::{CompareSettings, Side, compare};
    /// use tokenmeter_bench::Plan;
    ///
    /// # #[tokio::main]
    /// # async fn main() -> anyhow::Result<()> {
    /// let plan = Plan::builder().requests(8).rate(f64::INFINITY).output_tokens(4).build()?;
    /// let (a, b) = (plan.run().await?, plan.run().await?);
    /// let (base, new) = (Side::of_runs("a", [&a])?, Side::of_runs("b", [&b])?);
    /// assert_eq!(base.runs[0].requests.len(), 8);
    /// assert!(base.itl_known);
    /// let comparison = compare(&base, &new, &CompareSettings::default())?;
    /// assert_eq!(comparison.base.0, "a");
    /// # Ok(())
    /// # }
    /// ```
    pub fn of_runs<'a>(
        source: &str,
        runs: impl IntoIterator<Item = &'a Run>,
    ) -> anyhow::Result<Side> {
        let mut side = Side {
            source: source.to_owned(),
            itl_known: true,
            ..Side::default()
        };
        for (i, run) in runs.into_iter().enumerate() {
            let measured = &run.collected.measured;
            let columns = samples_json::of(measured, &run.summary.slo);
            let mut requests =
                samples::parse(&columns).with_context(|| format!("{source}: run {}", i + 1))?;
            for (figures, m) in requests.requests.iter_mut().zip(measured.iter()) {
                if figures.ok {
                    figures.itl = run
                        .collected
                        .gaps
                        .of(m.gaps)
                        .map(|g| g.as_secs_f64())
                        .collect();
                }
            }
            if i == 0 {
                side.shape =
                    shape::of_json(&json!({"run": run.info, "summary": {"slo": run.summary.slo}}));
            }
            side.runs.push(requests);
        }
        Ok(side)
    }
}
