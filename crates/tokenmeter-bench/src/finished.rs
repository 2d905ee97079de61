//! [`Run`]: a finished single run, everything its reports are made of. The bench's outputs
//! (the table, `--json` in tokenmeter's or vLLM's format, `--html`) are functions of it
//! (`output::single`), and a Rust caller reads its statistics directly.

use std::time::Duration;

use tokenmeter::RequestRecord;
use tokenmeter::report::Summary;
use tokenmeter_slo::SloMonitor;
use tokenmeter_slo::batching::BatchAnalysis;

use crate::api::Api;
use crate::args::BenchArgs;
use crate::collect::Collected;
use crate::intervals::{Inputs, RunIntervals};
use crate::run_block::RunInfo;
use crate::saturation::StoppedEarly;
use crate::schedule::Stage;
use crate::slices::Slices;
use crate::summary::BenchSummary;

/// A finished run: its requests as the core recorded them, the statistics `vllm bench serve`
/// reports of them, and what the bench's outputs need besides.
///
/// Latencies are over successful requests, in seconds, as the core's
/// [`Summary`](tokenmeter::report::Summary) (numpy's mean and linearly interpolated
/// percentiles). TTFT and E2E are measured from each request's send; the client queue time
/// ([`Run::client_queue`]) is what requests waited in the client after they were due.
///
/// ```no_run
/// # async fn example() -> anyhow::Result<()> {
/// let run = tokenmeter_bench::Plan::builder().requests(20).build()?.run().await?;
/// assert_eq!(run.requests(), 20);
/// println!("TTFT p95 {:.3} s over {} requests", run.ttft().p95, run.ttft().count);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Run {
    pub(crate) args: BenchArgs,
    pub(crate) stages: Vec<Stage>,
    pub(crate) info: RunInfo,
    pub(crate) api: Api,
    pub(crate) collected: Collected,
    pub(crate) slices: Slices,
    pub(crate) monitor: Option<SloMonitor>,
    pub(crate) server_batching: Option<BatchAnalysis>,
    /// (sent, planned) when interrupted.
    pub(crate) interrupted: Option<(usize, usize)>,
    pub(crate) planned: usize,
    /// The process's CPU time over the run, and the run's wall time.
    pub(crate) client_cpu: Option<(Duration, Duration)>,
    pub(crate) stopped_early: Option<StoppedEarly>,
    pub(crate) summary: BenchSummary,
}

/// A finished run's counts and statistics, read after a tiny run against the built-in
/// simulated server.
///
/// ```
/// use tokenmeter_bench::Plan;
///
/// # #[tokio::main]
/// # async fn main() -> anyhow::Result<()> {
/// let run = Plan::builder()
///     .requests(4)
///     .rate(f64::INFINITY)
///     .output_tokens(4)
///     .slo("none")
///     .build()?
///     .run()
///     .await?;
/// assert_eq!((run.requests(), run.successful(), run.errors()), (4, 4, 0));
/// assert_eq!(run.errors_by_class().count(), 0);
/// assert_eq!(run.cancelled(), 0);
/// assert!(run.duration() > std::time::Duration::ZERO);
/// // Latencies in seconds, over the successful requests.
/// assert_eq!(run.ttft().count, 4);
/// assert!(run.ttft().p50 <= run.e2e().p50);
/// assert_eq!((run.ttst().count, run.tpot().count), (4, 4));
/// assert!(run.itl().count >= 4 && run.itl().max <= run.e2e().max);
/// assert_eq!(run.client_queue().count, 4);
/// assert_eq!(run.output_tokens().mean, 4.0);
/// // No objectives: every successful request is good.
/// assert_eq!(run.attainment(), 1.0);
/// assert!(run.goodput() > 0.0 && run.output_throughput() > 0.0);
/// assert_eq!(run.records().map(|r| r.output_tokens).sum::<u64>(), 16);
/// # Ok(())
/// # }
/// ```
impl Run {
    /// The requests and their gaps, for what follows the reports.
    pub(crate) fn into_collected(self) -> Collected {
        self.collected
    }

    /// Requests sent (the warm-up's are not counted).
    pub fn requests(&self) -> u64 {
        self.summary.requests
    }

    /// Requests that succeeded.
    pub fn successful(&self) -> u64 {
        self.summary.successful
    }

    /// Requests that ended in an error, of any class.
    pub fn errors(&self) -> u64 {
        self.summary.outcomes.errors_total()
    }

    /// Errors by class (`timeout`, `rate_limited`, `server_error`, `empty_response`, …), each
    /// with its count; classes with no error are absent.
    pub fn errors_by_class(&self) -> impl Iterator<Item = (&str, u64)> {
        self.summary
            .outcomes
            .errors
            .iter()
            .map(|(class, n)| (class.as_str(), *n))
    }

    /// Requests the client gave up (cancellation injected with `--cancel-rate` or a
    /// conversation's cut).
    pub fn cancelled(&self) -> u64 {
        self.summary.outcomes.cancelled
    }

    /// First send to last end, over the requests recorded.
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.summary.duration_s.max(0.0))
    }

    /// Time to first token (s) from the request's send, over successful requests.
    pub fn ttft(&self) -> &Summary {
        &self.summary.ttft
    }

    /// Time to second token (s).
    pub fn ttst(&self) -> &Summary {
        &self.summary.ttst
    }

    /// Time per output token (s): (E2E − TTFT) / (output tokens − 1), as vLLM computes it.
    pub fn tpot(&self) -> &Summary {
        &self.summary.tpot
    }

    /// Inter-token latency (s): every gap between token-bearing chunks, pooled.
    pub fn itl(&self) -> &Summary {
        &self.summary.itl
    }

    /// End-to-end latency (s) from the send to the last token, as `vllm bench serve`
    /// measures it.
    pub fn e2e(&self) -> &Summary {
        &self.summary.e2e
    }

    /// What each request waited in the client after it was due (s), over every request
    /// sent.
    pub fn client_queue(&self) -> &Summary {
        &self.summary.client_queue
    }

    /// Output tokens per successful request.
    pub fn output_tokens(&self) -> &Summary {
        &self.summary.output_tokens
    }

    /// Requests per second that succeeded and met every objective of the plan's SLO
    /// ([`PlanBuilder::slo`](crate::PlanBuilder::slo)); with no objectives, every successful
    /// request counts.
    pub fn goodput(&self) -> f64 {
        self.summary.goodput
    }

    /// Good requests over requests sent, in [0, 1].
    pub fn attainment(&self) -> f64 {
        self.summary.attainment
    }

    /// Output tokens per second over the run's duration, successful requests.
    pub fn output_throughput(&self) -> f64 {
        self.summary.output_throughput
    }

    /// The confidence interval of every figure of the summary, at the plan's level
    /// ([`BenchArgs::confidence`], 95% by default): see [`RunIntervals`]. Computed on each
    /// call (the ITL's resampling takes a moment on a long run); the same every time.
    pub fn intervals(&self) -> RunIntervals {
        RunIntervals::of(&Inputs {
            measured: (&self.collected.measured).into(),
            gaps: &self.collected.gaps,
            summary: &self.summary,
            slices: &self.slices,
            level: self.args.confidence,
            seed: self.args.seed,
        })
    }

    /// Each request's record as the core made it (phases, first and last token, tokens,
    /// outcome), for the requests the core recorded, in the order of their ids. The time of
    /// every chunk is not kept in the record (`item_times` is `None`): the run keeps its gaps
    /// in one buffer of its own, and [`Run::itl`] is their statistics. The run keeps each
    /// record in a compact form: each is built again as it is read, equal to the core's field
    /// for field.
    pub fn records(&self) -> impl Iterator<Item = RequestRecord> + '_ {
        self.collected
            .measured
            .iter()
            .filter_map(|m| m.record().map(std::borrow::Cow::into_owned))
    }
}
