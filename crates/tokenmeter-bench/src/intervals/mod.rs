//! How sure is each figure: the confidence interval of every figure of a run's summary
//! ([`RunIntervals`]), at the level of `--confidence` (95% by default).
//!
//! | Module | Concept |
//! |---|---|
//! | `level` | `--confidence PERCENT` as users write it |
//! | `rows` | the per-request rows, selected as the summary selects them: order statistics |
//! | `itl` | the ITL by resampling requests (its gaps are not independent) |
//! | `rates` | success rate and attainment (Wilson), throughputs (from the time slices) |
//! | `json` | the intervals written beside the figures of `--json`'s `summary` |

pub(crate) mod itl;
pub(crate) mod json;
mod level;
pub(crate) mod rates;
mod rows;

use tokenmeter::report::{Bounds, Confidence, SummaryBounds};

use crate::gaps::{GapSpan, Gaps};
use crate::reqs::Reqs;
use crate::slices::Slices;
use crate::summary::BenchSummary;

pub use level::parse_confidence;

/// The confidence interval of every figure of a run's summary, in the figure's units
/// (seconds for latencies, tokens, requests or tokens per second, fractions in [0, 1]):
///
/// - each percentile of a per-request row (TTFT, TTST, TPOT, NTPOT, E2E, to the stream's
///   end, client queue, TTFT and E2E from the schedule, input and output tokens): the
///   distribution-free interval from the order statistics of the same requests the summary
///   used; [`Bounds::TooFew`] (with the samples there are and those needed) when there are
///   too few (p99 needs 368 at 95%); each mean a Student-t interval;
/// - the ITL: by resampling requests (a request's gaps are not independent), pooling the
///   gaps of those drawn; seeded from the run's seed, so the same every time;
/// - the success rate and the attainment: Wilson score intervals;
/// - the throughputs and goodputs: the run's rate ± a Student-t half-width from the rate's
///   variation between the run's time slices (too few below 3 slices).
///
/// The maximum has no interval: no sample bounds the largest value a distribution can take.
///
/// ```
/// use tokenmeter_bench::Plan;
///
/// # #[tokio::main]
/// # async fn main() -> anyhow::Result<()> {
/// let run = Plan::builder().requests(40).rate(f64::INFINITY).output_tokens(8).build()?;
/// let run = run.run().await?;
/// let intervals = run.intervals();
/// assert_eq!(intervals.level.level(), 0.95);
/// let (lo, hi) = intervals.ttft.p50.interval().expect("40 requests bound the median");
/// assert!(lo <= run.ttft().p50 && run.ttft().p50 <= hi);
/// // 40 requests cannot bound p95 or p99 at 95%: the bounds say how many would.
/// assert_eq!(intervals.ttft.too_few(), vec![("p95", 40, 72), ("p99", 40, 368)]);
/// let (lo, hi) = intervals.attainment.interval().unwrap();
/// assert!(lo <= run.attainment() && run.attainment() <= hi);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RunIntervals {
    /// The level of every interval.
    pub level: Confidence,
    /// Time to first token (s).
    pub ttft: SummaryBounds,
    /// Time to first output token, after any reasoning (s).
    pub ttfot: SummaryBounds,
    /// Time to second token (s).
    pub ttst: SummaryBounds,
    /// Time per output token (s).
    pub tpot: SummaryBounds,
    /// Normalised time per output token (s).
    pub ntpot: SummaryBounds,
    /// Inter-token latency (s), by resampling requests; `None` beyond 2,000,000 gaps (too
    /// long to resample).
    pub itl: Option<SummaryBounds>,
    /// Resamples behind [`RunIntervals::itl`]: 1,000, fewer (down to 200) beyond 50,000 gaps.
    pub itl_resamples: usize,
    /// End-to-end latency to the last token (s).
    pub e2e: SummaryBounds,
    /// End-to-end latency to the stream's end (s).
    pub e2e_stream: SummaryBounds,
    /// Client queue time (s), over every request sent.
    pub client_queue: SummaryBounds,
    /// TTFT from the schedule (s).
    pub ttft_from_schedule: SummaryBounds,
    /// E2E from the schedule (s).
    pub e2e_from_schedule: SummaryBounds,
    /// Input tokens per successful request.
    pub input_tokens: SummaryBounds,
    /// Output tokens per successful request.
    pub output_tokens: SummaryBounds,
    /// Successful / sent (Wilson).
    pub success_rate: Bounds,
    /// Good / sent (Wilson).
    pub attainment: Bounds,
    /// Successful requests per second (from the slices).
    pub request_throughput: Bounds,
    /// Output tokens per second (from the slices).
    pub output_throughput: Bounds,
    /// Input and output tokens per second (from the slices).
    pub total_token_throughput: Bounds,
    /// Good requests per second (from the slices).
    pub goodput: Bounds,
    /// Output tokens of good requests per second (from the slices).
    pub goodput_output_tokens: Bounds,
    /// Time slices the throughputs' intervals came from.
    pub throughput_slices: u64,
}

/// What a run's intervals are computed from.
pub(crate) struct Inputs<'a> {
    pub(crate) measured: Reqs<'a>,
    pub(crate) gaps: &'a Gaps,
    pub(crate) summary: &'a BenchSummary,
    pub(crate) slices: &'a Slices,
    pub(crate) level: Confidence,
    pub(crate) seed: u64,
}

impl RunIntervals {
    /// The intervals of a run (or a merge) summarised as `inputs.summary`.
    pub(crate) fn of(inputs: &Inputs<'_>) -> Self {
        let level = inputs.level;
        let r = rows::Rows::of(inputs.measured, level);
        let spans: Vec<GapSpan> = inputs
            .measured
            .iter()
            .filter(|m| m.succeeded())
            .map(|m| m.gaps)
            .collect();
        let itl = itl::bounds(&itl::Clusters::of(inputs.gaps, &spans), level, inputs.seed);
        let mut rates = rates::Rates::of(inputs.summary, inputs.slices, level);
        let span = crate::summary::duration(inputs.measured);
        if rates.slices < rates::MIN_SLICES && span > std::time::Duration::ZERO {
            // A short run: its report's slices (1 s at least) are too few; cut it in ten.
            let width = span.div_f64(f64::from(rates::FALLBACK_SLICES))
                + std::time::Duration::from_nanos(1);
            let slo = &inputs.summary.slo;
            let finer = Slices::of(inputs.measured, inputs.gaps, slo, Some(width), None);
            rates = rates::Rates::of(inputs.summary, &finer, level);
        }
        Self {
            level,
            ttft: r.ttft,
            ttfot: r.ttfot,
            ttst: r.ttst,
            tpot: r.tpot,
            ntpot: r.ntpot,
            itl: itl.bounds,
            itl_resamples: itl.resamples,
            e2e: r.e2e,
            e2e_stream: r.e2e_stream,
            client_queue: r.client_queue,
            ttft_from_schedule: r.ttft_from_schedule,
            e2e_from_schedule: r.e2e_from_schedule,
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            success_rate: rates.success_rate,
            attainment: rates.attainment,
            request_throughput: rates.request_throughput,
            output_throughput: rates.output_throughput,
            total_token_throughput: rates.total_token_throughput,
            goodput: rates.goodput,
            goodput_output_tokens: rates.goodput_output_tokens,
            throughput_slices: rates.slices,
        }
    }

    /// The per-request rows by their key in `--json`'s `summary` (ITL included when it has
    /// intervals).
    pub(crate) fn rows(&self) -> Vec<(&'static str, SummaryBounds)> {
        let mut rows = vec![
            ("ttft", self.ttft),
            ("ttfot", self.ttfot),
            ("ttst", self.ttst),
            ("tpot", self.tpot),
            ("ntpot", self.ntpot),
            ("e2e", self.e2e),
            ("e2e_stream", self.e2e_stream),
            ("client_queue", self.client_queue),
            ("ttft_from_schedule", self.ttft_from_schedule),
            ("e2e_from_schedule", self.e2e_from_schedule),
            ("input_tokens", self.input_tokens),
            ("output_tokens", self.output_tokens),
        ];
        if let Some(itl) = self.itl {
            rows.push(("itl", itl));
        }
        rows
    }

    /// The proportions and rates by their key in `--json`'s `summary`.
    pub(crate) fn rates(&self) -> [(&'static str, Bounds); 7] {
        [
            ("success_rate", self.success_rate),
            ("attainment", self.attainment),
            ("request_throughput", self.request_throughput),
            ("output_throughput", self.output_throughput),
            ("total_token_throughput", self.total_token_throughput),
            ("goodput", self.goodput),
            ("goodput_output_tokens", self.goodput_output_tokens),
        ]
    }
}

#[cfg(test)]
mod tests;
