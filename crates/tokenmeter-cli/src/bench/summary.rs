//! The bench summary, computed from the traces alone with the formulas of `vllm bench serve`
//! (`docs/metrics.md` §5):
//!
//! - TTFT = first token-bearing event − send; E2EL = last data event − send;
//!   TPOT = (E2EL − TTFT) / (output tokens − 1) for more than one output token;
//!   ITL = gaps between consecutive token-bearing events, pooled over requests.
//! - Latency and token percentiles are over successful requests, like `numpy.percentile`.
//! - duration = last end − first send; throughput = successful / duration;
//!   output tok/s = Σ output tokens of successful requests / duration.
//! - goodput = requests that succeeded and met every SLO (inclusive ≤) / duration;
//!   attainment = good / all requests sent.
//! - Token sums saturate at `u64::MAX` (a server may send any count); requests whose `usage`
//!   was unusable or disagreed with the stream are counted and warned about
//!   ([`usage_warnings`]).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use tokenmeter::report::Summary;

use crate::bench::slo::Slo;
use crate::bench::trace::Trace;

/// Count, mean, percentiles and max of one quantity (seconds, or tokens).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Stat {
    /// Samples.
    pub(crate) count: u64,
    /// Mean.
    pub(crate) mean: f64,
    /// Median.
    pub(crate) p50: f64,
    /// 90th percentile.
    pub(crate) p90: f64,
    /// 95th percentile.
    pub(crate) p95: f64,
    /// 99th percentile.
    pub(crate) p99: f64,
    /// Largest.
    pub(crate) max: f64,
}

impl From<Summary> for Stat {
    fn from(s: Summary) -> Self {
        Self {
            count: s.count,
            mean: s.mean,
            p50: s.p50,
            p90: s.p90,
            p95: s.p95,
            p99: s.p99,
            max: s.max,
        }
    }
}

fn stat(values: impl Iterator<Item = f64>) -> Stat {
    Summary::of(values.collect()).into()
}

fn secs(values: impl Iterator<Item = Duration>) -> Stat {
    stat(values.map(|d| d.as_secs_f64()))
}

/// Requests by outcome; errors by class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Outcomes {
    /// Full successes.
    pub(crate) success: u64,
    /// Answered by a fallback.
    pub(crate) degraded: u64,
    /// Given up by the client.
    pub(crate) cancelled: u64,
    /// Errors by class label.
    pub(crate) errors: BTreeMap<String, u64>,
}

impl Outcomes {
    /// Counts the outcomes of `traces`.
    pub(crate) fn of(traces: &[Trace]) -> Self {
        let mut counts = Self::default();
        for trace in traces {
            match trace.outcome.as_str() {
                "success" => counts.success += 1,
                "degraded" => counts.degraded += 1,
                "cancelled" => counts.cancelled += 1,
                _ => {
                    let class = trace.error_class.clone().unwrap_or_else(|| "_OTHER".into());
                    *counts.errors.entry(class).or_default() += 1;
                }
            }
        }
        counts
    }

    /// Errors of every class.
    pub(crate) fn errors_total(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// The summary of one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct BenchSummary {
    /// Requests sent.
    pub(crate) requests: u64,
    /// Requests that succeeded.
    pub(crate) successful: u64,
    /// Last end − first send, in seconds.
    pub(crate) duration_s: f64,
    /// Successful requests per second.
    pub(crate) request_throughput: f64,
    /// Output tokens of successful requests per second.
    pub(crate) output_throughput: f64,
    /// Input and output tokens of successful requests per second.
    pub(crate) total_token_throughput: f64,
    /// Σ input tokens of successful requests.
    pub(crate) total_input_tokens: u64,
    /// Σ output tokens of successful requests.
    pub(crate) total_output_tokens: u64,
    /// Time to first token (s).
    pub(crate) ttft: Stat,
    /// Time per output token (s).
    pub(crate) tpot: Stat,
    /// Inter-token latency (s), one sample per token-bearing event after the first.
    pub(crate) itl: Stat,
    /// End-to-end latency (s).
    pub(crate) e2e: Stat,
    /// Input tokens per successful request.
    pub(crate) input_tokens: Stat,
    /// Output tokens per successful request.
    pub(crate) output_tokens: Stat,
    /// The objectives.
    pub(crate) slo: Slo,
    /// Requests that succeeded and met every objective.
    pub(crate) good_requests: u64,
    /// Good requests per second.
    pub(crate) goodput: f64,
    /// Output tokens of good requests per second.
    pub(crate) goodput_output_tokens: f64,
    /// Good / sent.
    pub(crate) attainment: f64,
    /// Outcomes.
    pub(crate) outcomes: Outcomes,
    /// Requests whose `usage.completion_tokens` disagreed with the stream (kept, as vLLM does).
    pub(crate) usage_discrepancies: u64,
    /// Requests whose `usage` held a count that is not a non-negative integer (ignored).
    pub(crate) usage_unusable: u64,
}

/// Σ of `values`, saturating.
fn total(values: impl Iterator<Item = u64>) -> u64 {
    values.fold(0, u64::saturating_add)
}

/// (usage discrepancies, unusable usages) over `traces`.
fn usage_counts(traces: &[Trace]) -> (u64, u64) {
    let discrepancies = traces.iter().filter(|t| t.usage_discrepancy.is_some());
    let unusable = traces
        .iter()
        .filter(|t| t.usage.is_some_and(|u| u.unusable));
    (discrepancies.count() as u64, unusable.count() as u64)
}

/// One warning line per kind of `usage` trouble in `traces` (none when there was none).
pub(crate) fn usage_warnings(traces: &[Trace]) -> Vec<String> {
    let (discrepancies, unusable) = usage_counts(traces);
    let mut warnings = Vec::new();
    if discrepancies > 0 {
        warnings.push(format!(
            "{discrepancies} of {} requests reported usage.completion_tokens below their token-bearing chunks or above max_tokens; their output tokens are the server's usage, as vLLM's bench counts them (see usage_discrepancy in --trace)",
            traces.len()
        ));
    }
    if unusable > 0 {
        warnings.push(format!(
            "{unusable} of {} requests sent a usage count that is not a non-negative integer; it was ignored and their tokens counted from the stream (usage.unusable in --trace)",
            traces.len()
        ));
    }
    warnings
}

/// Last end − first send.
pub(crate) fn duration(traces: &[Trace]) -> Duration {
    let start = traces.iter().map(|t| t.send_ns).min().unwrap_or(0);
    let end = traces.iter().map(|t| t.end_ns).max().unwrap_or(0);
    Duration::from_nanos(end.saturating_sub(start))
}

/// True when `trace` succeeded and met every objective of `slo`.
pub(crate) fn is_good(trace: &Trace, slo: &Slo) -> bool {
    trace.succeeded() && slo.met(trace.ttft(), trace.tpot(), trace.e2e())
}

/// Summarises a run.
pub(crate) fn summarize(traces: &[Trace], slo: &Slo) -> BenchSummary {
    let ok: Vec<&Trace> = traces.iter().filter(|t| t.succeeded()).collect();
    let duration = duration(traces).as_secs_f64();
    let per_second = |x: f64| if duration > 0.0 { x / duration } else { 0.0 };
    let total_input = total(ok.iter().map(|t| t.prompt_tokens()));
    let total_output = total(ok.iter().map(|t| t.output_tokens));
    let good: Vec<&Trace> = traces.iter().filter(|t| is_good(t, slo)).collect();
    let good_output = total(good.iter().map(|t| t.output_tokens));
    let (usage_discrepancies, usage_unusable) = usage_counts(traces);
    BenchSummary {
        requests: traces.len() as u64,
        successful: ok.len() as u64,
        duration_s: duration,
        request_throughput: per_second(ok.len() as f64),
        output_throughput: per_second(total_output as f64),
        total_token_throughput: per_second(total_input.saturating_add(total_output) as f64),
        total_input_tokens: total_input,
        total_output_tokens: total_output,
        ttft: secs(ok.iter().filter_map(|t| t.ttft())),
        tpot: secs(ok.iter().filter_map(|t| t.tpot())),
        itl: secs(ok.iter().flat_map(|t| t.itls())),
        e2e: secs(ok.iter().map(|t| t.e2e())),
        input_tokens: stat(ok.iter().map(|t| t.prompt_tokens() as f64)),
        output_tokens: stat(ok.iter().map(|t| t.output_tokens as f64)),
        slo: *slo,
        good_requests: good.len() as u64,
        goodput: per_second(good.len() as f64),
        goodput_output_tokens: per_second(good_output as f64),
        attainment: if traces.is_empty() {
            0.0
        } else {
            good.len() as f64 / traces.len() as f64
        },
        outcomes: Outcomes::of(traces),
        usage_discrepancies,
        usage_unusable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(id: u64, send: u64, ttft: u64, gap: u64, tokens: u32) -> Trace {
        let first = send + ttft;
        let chunks: Vec<(u64, u32)> = (0..tokens)
            .map(|i| (first + u64::from(i) * gap, 1))
            .collect();
        Trace {
            id,
            send_ns: send,
            first_token_ns: Some(first),
            end_ns: chunks.last().map_or(first, |c| c.0) + 1_000,
            chunks,
            input_tokens: 10,
            output_tokens: u64::from(tokens),
            outcome: "success".into(),
            ..Trace::default()
        }
    }

    #[test]
    fn numbers_follow_the_formulas() {
        const MS: u64 = 1_000_000;
        let mut traces = vec![
            ok(0, 0, 100 * MS, 10 * MS, 11),
            ok(1, 500 * MS, 300 * MS, 20 * MS, 6),
        ];
        traces.push(Trace {
            id: 2,
            send_ns: 900 * MS,
            end_ns: 950 * MS,
            outcome: "error".into(),
            error_class: Some("rate_limited".into()),
            ..Trace::default()
        });
        let slo: Slo = "ttft=200ms".parse().unwrap();
        let s = summarize(&traces, &slo);
        assert_eq!((s.requests, s.successful, s.good_requests), (3, 2, 1));
        // duration: first send 0, last end: the error's at 950 ms
        assert!((s.duration_s - 0.95).abs() < 1e-12, "{}", s.duration_s);
        assert!((s.ttft.p50 - 0.2).abs() < 1e-12);
        assert!((s.tpot.mean - 0.015).abs() < 1e-12, "{:?}", s.tpot);
        assert_eq!(s.itl.count, 10 + 5);
        assert!((s.e2e.max - 0.4).abs() < 1e-12);
        assert_eq!(s.total_output_tokens, 17);
        assert!((s.attainment - 1.0 / 3.0).abs() < 1e-12);
        assert!((s.goodput - 1.0 / 0.95).abs() < 1e-9);
        assert_eq!(s.outcomes.errors.get("rate_limited"), Some(&1));
        assert_eq!(s.outcomes.success, 2);
    }
}
