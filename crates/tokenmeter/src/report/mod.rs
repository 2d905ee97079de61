//! [`Report`]: percentiles of every interval next to the token counts they were measured at.
//!
//! Percentiles are computed like `numpy.percentile` (see [`percentile`]). ITL is reported two
//! ways: one sample per token-bearing item after the first (vLLM, `vllm bench serve`, OTel
//! `time_per_output_chunk`), and token-weighted (SGLang: an item with k tokens after a gap g
//! counts as k samples of g/k).

mod bounds;
mod classes;
mod confidence;
#[cfg(test)]
mod coverage;
mod interval;
mod outcomes;
mod percentile;
mod render;

pub use bounds::{Bounds, SummaryBounds, mean_bounds, quantile_bounds, quantile_sample_needed};
pub use classes::{ClassError, ClassSummary, LengthClasses, LengthKey, by_class, by_two_classes};
pub use confidence::{Confidence, normal_quantile, t_quantile};
pub use interval::{Z95, wilson};
pub use outcomes::OutcomeCounts;
pub use percentile::{percentile, percentile_weighted};

use std::time::Duration;

use crate::record::RequestRecord;

/// Count, mean, p50/p90/p95/p99 and max of one quantity. Latencies are in seconds, token counts
/// in tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Summary {
    /// Samples.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Population standard deviation (`numpy.std`'s default).
    pub std: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest sample.
    pub max: f64,
}

impl Summary {
    /// Summarises `values` (any order). All zero for no values.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::report::Summary;
    /// let s = Summary::of(vec![3.0, 1.0, 2.0]);
    /// assert_eq!((s.count, s.p50, s.max, s.mean), (3, 2.0, 3.0, 2.0));
    /// assert!((s.std - (2.0f64 / 3.0).sqrt()).abs() < 1e-15); // population std
    /// ```
    pub fn of(mut values: Vec<f64>) -> Self {
        values.retain(|v| v.is_finite());
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let at = |p| percentile(&values, p).unwrap_or(0.0);
        let mean = if n == 0 {
            0.0
        } else {
            values.iter().sum::<f64>() / n as f64
        };
        let variance = if n == 0 {
            0.0
        } else {
            values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64
        };
        Self {
            count: n as u64,
            mean,
            std: variance.sqrt(),
            p50: at(50.0),
            p90: at(90.0),
            p95: at(95.0),
            p99: at(99.0),
            max: values.last().copied().unwrap_or(0.0),
        }
    }

    /// Summarises a weighted multiset: each value counts `weight` times.
    pub fn of_weighted(mut pairs: Vec<(f64, u64)>) -> Self {
        pairs.retain(|(v, w)| v.is_finite() && *w > 0);
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n = pairs.iter().map(|p| p.1).fold(0u64, u64::saturating_add);
        let at = |p| percentile_weighted(&pairs, p).unwrap_or(0.0);
        let total: f64 = pairs.iter().map(|&(v, w)| v * w as f64).sum();
        let mean = if n == 0 { 0.0 } else { total / n as f64 };
        let squares: f64 = pairs
            .iter()
            .map(|&(v, w)| (v - mean) * (v - mean) * w as f64)
            .sum();
        Self {
            count: n,
            mean,
            std: if n == 0 {
                0.0
            } else {
                (squares / n as f64).sqrt()
            },
            p50: at(50.0),
            p90: at(90.0),
            p95: at(95.0),
            p99: at(99.0),
            max: pairs.last().map_or(0.0, |p| p.0),
        }
    }

    /// Summarises durations, in seconds.
    pub fn of_durations(values: impl IntoIterator<Item = Duration>) -> Self {
        Self::of(values.into_iter().map(|d| d.as_secs_f64()).collect())
    }
}

/// Everything an [`InMemorySink`](crate::sink::InMemorySink) measured, summarised.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::{Clock, Labels, ManualClock, Meter, sink::InMemorySink};
///
/// let time = ManualClock::new();
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().clock(Clock::manual(&time)).sink(memory.clone()).build();
/// let series = meter.series(&Labels::server("chat"));
/// for ttft_ms in [100, 200, 300] {
///     let mut request = series.start();
///     request.set_input_tokens(50);
///     time.advance(Duration::from_millis(ttft_ms));
///     request.record_tokens(1);
///     request.succeed();
/// }
/// let report = memory.report();
/// assert_eq!(report.ttft.p50, 0.2);
/// assert_eq!(report.input_tokens.p95, 50.0);
/// println!("{report}");
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Report {
    /// Requests ended.
    pub requests: u64,
    /// Requests by outcome.
    pub outcomes: OutcomeCounts,
    /// From the first arrival to the last end.
    pub duration: Duration,
    /// Requests ended / duration.
    pub requests_per_second: f64,
    /// Output tokens / duration.
    pub output_tokens_per_second: f64,
    /// Time to first token (s).
    pub ttft: Summary,
    /// Time per output token (s), one sample per request with more than one output token.
    pub tpot: Summary,
    /// Inter-token latency (s), one sample per token-bearing item after the first.
    pub itl: Summary,
    /// Inter-token latency (s), token-weighted.
    pub itl_token_weighted: Summary,
    /// End-to-end latency (s).
    pub e2e: Summary,
    /// Queue time (s), for requests marked scheduled.
    pub queue: Summary,
    /// Prefill time (s), for requests marked scheduled that produced a token.
    pub prefill: Summary,
    /// Decode time (s).
    pub decode: Summary,
    /// Inference time (s).
    pub inference: Summary,
    /// Input tokens per request, where known.
    pub input_tokens: Summary,
    /// Output tokens per request.
    pub output_tokens: Summary,
}

impl Report {
    /// Builds the report from records and the inter-token gaps `(gap, tokens in the item)`.
    pub fn new(records: &[RequestRecord], gaps: &[(Duration, u32)]) -> Self {
        let durations = |f: fn(&RequestRecord) -> Option<Duration>| {
            Summary::of_durations(records.iter().filter_map(f))
        };
        let start = records.iter().map(|r| r.arrival).min().unwrap_or_default();
        let end = records
            .iter()
            .map(RequestRecord::end)
            .max()
            .unwrap_or_default();
        let duration = end.saturating_sub(start);
        let output_total = records
            .iter()
            .map(|r| r.output_tokens)
            .fold(0u64, u64::saturating_add);
        let per_second = |x: f64| {
            let s = duration.as_secs_f64();
            if s > 0.0 { x / s } else { 0.0 }
        };
        Self {
            requests: records.len() as u64,
            outcomes: OutcomeCounts::of(records),
            duration,
            requests_per_second: per_second(records.len() as f64),
            output_tokens_per_second: per_second(output_total as f64),
            ttft: durations(|r| r.ttft),
            tpot: durations(RequestRecord::tpot),
            itl: Summary::of_durations(gaps.iter().map(|g| g.0)),
            itl_token_weighted: Summary::of_weighted(
                gaps.iter()
                    .map(|&(g, k)| (g.as_secs_f64() / f64::from(k.max(1)), u64::from(k)))
                    .collect(),
            ),
            e2e: durations(|r| Some(r.e2e)),
            queue: durations(|r| r.queue),
            prefill: durations(|r| r.prefill),
            decode: durations(|r| r.decode),
            inference: durations(|r| r.inference),
            input_tokens: Summary::of(
                records
                    .iter()
                    .filter_map(|r| r.input_tokens)
                    .map(|t| t as f64)
                    .collect(),
            ),
            output_tokens: Summary::of(records.iter().map(|r| r.output_tokens as f64).collect()),
        }
    }
}
