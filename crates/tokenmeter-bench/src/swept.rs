//! [`Sweep`]: a finished sweep as a library caller reads it — each rate run with what it was
//! served at and the attainment it reached, and the capacity at the target. Made by
//! [`Plan::sweep`](crate::Plan::sweep); `tokenmeter bench --sweep` prints and writes the same
//! steps.

use crate::sweep::{SweepResult, SweepStep as Judged};

/// The rates a sweep runs ([`PlanBuilder::sweep`](crate::PlanBuilder::sweep)).
///
/// ```
/// use tokenmeter_bench::{Plan, SweepRates};
///
/// let plan = Plan::builder()
///     .sweep(SweepRates::Given(vec![5.0, 10.0, 20.0]))
///     .build()?;
/// # Ok::<(), anyhow::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SweepRates {
    /// A search for the capacity: from the plan's rate ([`PlanBuilder::rate`](crate::PlanBuilder::rate),
    /// else 2 req/s), doubling while rates pass, halving while they fail, then bisecting
    /// until the failing rate is within the resolution of the passing one (at most 12 steps).
    Auto,
    /// These rates (requests per second, each finite and above 0), in increasing order.
    Given(Vec<f64>),
}

/// A finished sweep: every rate run, and the capacity at the target attainment.
///
/// A step *passed* when the server kept up (it served at least 90% of the rate its schedule
/// asked for, and was not stopped early) and the step's attainment reached the target (its
/// Wilson 95% interval at or above it; its point estimate when the interval straddles it).
/// The capacity is the highest offered rate that passed below the lowest that failed, never
/// above the best rate any step was served at.
///
/// ```no_run
/// # async fn example() -> anyhow::Result<()> {
/// use tokenmeter_bench::{Plan, SweepRates};
///
/// let sweep = Plan::builder()
///     .url("http://127.0.0.1:8000/v1")
///     .sweep(SweepRates::Auto)
///     .build()?
///     .sweep()
///     .await?;
/// for step in &sweep.steps {
///     println!(
///         "{} req/s offered, served at {:?}, attainment {:.2}: passed {}",
///         step.offered_rate, step.served_rate, step.attainment, step.passed
///     );
/// }
/// assert!(sweep.capacity <= sweep.best_served_rate());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Sweep {
    /// The attainment a rate had to reach, in (0, 1].
    pub target: f64,
    /// Every rate run, in the order they ran.
    pub steps: Vec<SweepStep>,
    /// The capacity at the target (requests per second); `None` when no rate passed.
    pub capacity: Option<f64>,
    /// The lowest offered rate that failed; `None` when every rate run passed (the capacity
    /// is then a lower bound: the highest rate run).
    pub failed_at: Option<f64>,
    /// What makes the result less certain: steps too short for a steady state, steps whose
    /// attainment stayed undecided.
    pub warnings: Vec<String>,
}

/// One rate of a sweep. Its first tenth of requests (at least one) is its warm-up: the
/// numbers are of the rest.
///
/// ```no_run
/// # async fn example() -> anyhow::Result<()> {
/// use tokenmeter_bench::{Plan, SweepRates};
///
/// let sweep = Plan::builder()
///     .url("http://127.0.0.1:8000/v1")
///     .sweep(SweepRates::Auto)
///     .build()?
///     .sweep()
///     .await?;
/// for step in &sweep.steps {
///     println!(
///         "{} req/s offered, served at {:?}, attainment {:.2}: passed {}",
///         step.offered_rate, step.served_rate, step.attainment, step.passed
///     );
/// }
/// assert!(sweep.capacity <= sweep.best_served_rate());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SweepStep {
    /// The rate offered (requests per second).
    pub offered_rate: f64,
    /// The rate the server answered at: (n − 1) ÷ the span of the successes' ends; `None`
    /// with fewer than two.
    pub served_rate: Option<f64>,
    /// Requests judged (after the step's warm-up).
    pub requests: u64,
    /// Requests that succeeded and met every objective, over requests judged, in [0, 1].
    pub attainment: f64,
    /// The Wilson 95% interval of the attainment; `None` with no request judged.
    pub attainment_interval: Option<(f64, f64)>,
    /// Good requests per second.
    pub goodput: f64,
    /// The server served at least 90% of the scheduled rate and was not stopped early.
    pub kept_up: bool,
    /// The step reached the target.
    pub passed: bool,
}

impl Sweep {
    /// The public view of a sweep's result.
    pub(crate) fn of(result: &SweepResult) -> Self {
        let target = result.target;
        let at = crate::sweep::capacity_at(&result.steps, target, None);
        Self {
            target,
            steps: result
                .steps
                .iter()
                .map(|s| SweepStep::of(s, target))
                .collect(),
            capacity: result.capacity,
            failed_at: at.failed_at,
            warnings: result.warnings.clone(),
        }
    }

    /// The highest rate any step was served at (requests per second).
    ///
    /// ```no_run
    /// # async fn example() -> anyhow::Result<()> {
    /// use tokenmeter_bench::{Plan, SweepRates};
    ///
    /// let sweep = Plan::builder()
    ///     .url("http://127.0.0.1:8000/v1")
    ///     .sweep(SweepRates::Auto)
    ///     .build()?
    ///     .sweep()
    ///     .await?;
    /// for step in &sweep.steps {
    ///     println!(
    ///         "{} req/s offered, served at {:?}, attainment {:.2}: passed {}",
    ///         step.offered_rate, step.served_rate, step.attainment, step.passed
    ///     );
    /// }
    /// assert!(sweep.capacity <= sweep.best_served_rate());
    /// # Ok(())
    /// # }
    /// ```
    pub fn best_served_rate(&self) -> Option<f64> {
        self.steps
            .iter()
            .filter_map(|s| s.served_rate)
            .max_by(f64::total_cmp)
    }
}

impl SweepStep {
    fn of(step: &Judged, target: f64) -> Self {
        Self {
            offered_rate: step.rate,
            served_rate: step.served_rate,
            requests: step.summary.requests,
            attainment: step.summary.attainment,
            attainment_interval: step.attainment_interval,
            goodput: step.summary.goodput,
            kept_up: step.kept_up,
            passed: step.passes(target),
        }
    }
}
