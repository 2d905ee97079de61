//! The bench summary, computed from the core's records ([`Measured`]) with the formulas of
//! `vllm bench serve` 0.33 (`calculate_metrics`, `docs/src/reference/metrics.md` §5), every statistic a core
//! [`Summary`] (numpy's mean, population std and linearly interpolated percentiles):
//!
//! - TTFT = first token-bearing chunk − send (`RequestRecord::ttft`);
//!   E2E = last token-bearing chunk − send (`RequestRecord::time_to_last_token`; the stream's
//!   end when no token came); TPOT = (E2E − TTFT) / (output tokens − 1) for more than one
//!   output token, in floating point (`RequestRecord::tpot_seconds`); ITL = gaps between
//!   consecutive token-bearing chunks (`RequestRecord::item_gaps`), pooled over requests,
//!   read from the run's [`Gaps`] (the same nanoseconds, the same statistics).
//! - The end of the stream (the finish and usage frames come after the last token), what a
//!   caller waits, is `e2e_stream` (`RequestRecord::e2e`).
//! - Latency and token statistics are over successful requests.
//! - duration = last end − first send; throughput = successful / duration;
//!   output tok/s = Σ output tokens of successful requests / duration.
//! - goodput = requests that succeeded and met every SLO (inclusive ≤, judged by
//!   `tokenmeter-slo`, [`Judge`]; TTFT and E2E from the schedule unless `--slo-from send`)
//!   / duration; attainment = good / all requests sent.
//! - Client queue time = send − due ([`Measured::due`]); TTFT and E2E from the schedule add
//!   it to TTFT and E2E (vLLM 0.33's `client_queue_time`, `e2el_including_client_queue`).
//! - Token sums saturate at `u64::MAX` (a server may send any count); requests whose `usage`
//!   was unusable or disagreed with the stream are counted and warned about
//!   ([`usage_warnings`]).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Serialize, Serializer};
use tokenmeter::Outcome;
use tokenmeter::report::Summary;

use crate::gaps::{Gaps, sorted};
use crate::measured::Measured;
use crate::oddities::Oddities;
use crate::reqs::Reqs;
use crate::slo::{Judge, Slo};

/// Serialises a [`Summary`] as `{count, mean, std, p50, p90, p95, p99, max}`.
pub(crate) fn stat<S: Serializer>(s: &Summary, out: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Json {
        count: u64,
        mean: f64,
        std: f64,
        p50: f64,
        p90: f64,
        p95: f64,
        p99: f64,
        max: f64,
    }
    Json {
        count: s.count,
        mean: s.mean,
        std: s.std,
        p50: s.p50,
        p90: s.p90,
        p95: s.p95,
        p99: s.p99,
        max: s.max,
    }
    .serialize(out)
}

fn secs(values: impl Iterator<Item = Duration>) -> Summary {
    Summary::of_durations(values)
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
    /// Counts the outcomes of `measured`.
    pub(crate) fn of<'a>(measured: impl Into<Reqs<'a>>) -> Self {
        let mut counts = Self::default();
        for one in measured.into().iter() {
            match one.outcome() {
                Outcome::Success => counts.success += 1,
                Outcome::Degraded(_) => counts.degraded += 1,
                Outcome::Cancelled => counts.cancelled += 1,
                other => {
                    let class = other.error_class().map_or("_OTHER", |c| c.as_str());
                    *counts.errors.entry(class.to_owned()).or_default() += 1;
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
    /// Σ prompt tokens the server served from its prompt cache
    /// (`usage.prompt_tokens_details.cached_tokens`) over successful requests.
    pub(crate) total_cached_input_tokens: u64,
    /// Time to first token (s).
    #[serde(serialize_with = "stat")]
    pub(crate) ttft: Summary,
    /// Time to first *output* token (s): the first answer token after any reasoning
    /// (`reasoning_content`) chunks; the TTFT when the answer had no reasoning.
    #[serde(serialize_with = "stat")]
    pub(crate) ttfot: Summary,
    /// Time to second token (s).
    #[serde(serialize_with = "stat")]
    pub(crate) ttst: Summary,
    /// Time per output token (s).
    #[serde(serialize_with = "stat")]
    pub(crate) tpot: Summary,
    /// Normalised time per output token (s): end to end (to the end of the stream) ÷ output
    /// tokens, as inference-perf and llm-d report it.
    #[serde(serialize_with = "stat")]
    pub(crate) ntpot: Summary,
    /// Inter-token latency (s), one sample per token-bearing chunk after the first.
    #[serde(serialize_with = "stat")]
    pub(crate) itl: Summary,
    /// End-to-end latency (s) as `vllm bench serve` measures it: to the last token.
    #[serde(serialize_with = "stat")]
    pub(crate) e2e: Summary,
    /// End-to-end latency (s) to the end of the stream: what a caller waits.
    #[serde(serialize_with = "stat")]
    pub(crate) e2e_stream: Summary,
    /// Client queue time (s): send − due, what each request waited in the client (for a
    /// slot of the concurrency cap, or for the client itself) after the load model said it
    /// was due; over every request sent (vLLM 0.33's `client_queue_time`).
    #[serde(serialize_with = "stat")]
    pub(crate) client_queue: Summary,
    /// The client's own dispatch lag (s): send − the moment the request was due and had a
    /// slot; over every request sent. Large when the client cannot keep up with its schedule.
    #[serde(serialize_with = "stat")]
    pub(crate) dispatch_lag: Summary,
    /// TTFT from the schedule (s): client queue time + TTFT, successful requests.
    #[serde(serialize_with = "stat")]
    pub(crate) ttft_from_schedule: Summary,
    /// E2E from the schedule (s): client queue time + E2E, successful requests (vLLM 0.33's
    /// `e2el_including_client_queue`, there over every request).
    #[serde(serialize_with = "stat")]
    pub(crate) e2e_from_schedule: Summary,
    /// Input tokens per successful request.
    #[serde(serialize_with = "stat")]
    pub(crate) input_tokens: Summary,
    /// Output tokens per successful request.
    #[serde(serialize_with = "stat")]
    pub(crate) output_tokens: Summary,
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
    /// Requests whose `usage.prompt_tokens` or cached tokens were far above the tokens sent
    /// (ignored: see `Measured::check_input_usage`).
    pub(crate) usage_implausible_input: u64,
    /// What the streams held that was skipped or read leniently, summed over the requests
    /// (events of another type or with empty data, comments, chunks that gave a field twice;
    /// each count omitted when 0): [`Oddities`].
    pub(crate) oddities: Oddities,
    /// Client − server TTFT per request (s): each successful request's TTFT minus the
    /// server's own TTFT of it from the `metrics` object it sent (vLLM's
    /// `--enable-per-request-metrics`; `queue_time_ms` + `time_to_first_token_ms`), over the
    /// requests that carried one. Absent when none did.
    #[serde(serialize_with = "opt_stat", skip_serializing_if = "Option::is_none")]
    pub(crate) client_minus_server_ttft_per_request: Option<Summary>,
}

/// Serialises an optional [`Summary`] as [`stat`] does.
fn opt_stat<S: Serializer>(s: &Option<Summary>, out: S) -> Result<S::Ok, S::Error> {
    match s {
        Some(s) => stat(s, out),
        None => out.serialize_none(),
    }
}

/// Σ of `values`, saturating.
fn total(values: impl Iterator<Item = u64>) -> u64 {
    values.fold(0, u64::saturating_add)
}

/// (usage discrepancies, unusable usages) over `measured`.
fn usage_counts(measured: Reqs<'_>) -> (u64, u64, u64) {
    let all = || measured.iter();
    let discrepancies = all().filter(|m| m.rare.usage_discrepancy.is_some());
    let unusable = all().filter(|m| m.usage().is_some_and(|u| u.unusable));
    let input = all().filter(|m| m.usage().is_some_and(|u| u.implausible_input));
    (
        discrepancies.count() as u64,
        unusable.count() as u64,
        input.count() as u64,
    )
}

/// One warning line per kind of `usage` trouble in `measured` (none when there was none).
pub(crate) fn usage_warnings<'a>(measured: impl Into<Reqs<'a>>) -> Vec<String> {
    let measured = measured.into();
    let (discrepancies, unusable, implausible_input) = usage_counts(measured);
    let mut warnings = Vec::new();
    if implausible_input > 0 {
        warnings.push(format!(
            "{implausible_input} of {} requests reported usage.prompt_tokens or cached tokens far above the tokens sent (more than 16 times them plus 65536, or beyond 2^53); it was ignored and their input tokens are those sent (usage.implausible_input in --trace)",
            measured.len()
        ));
    }
    if discrepancies > 0 {
        warnings.push(format!(
            "{discrepancies} of {} requests reported usage.completion_tokens below their token-bearing chunks or above max_tokens; their output tokens are the server's usage, as vLLM's bench counts them (see usage_discrepancy in --trace)",
            measured.len()
        ));
    }
    if unusable > 0 {
        warnings.push(format!(
            "{unusable} of {} requests sent a usage count that is not a non-negative integer; it was ignored and their tokens counted from the stream (usage.unusable in --trace)",
            measured.len()
        ));
    }
    warnings
}

/// Last end − first send, over the requests the core recorded.
pub(crate) fn duration<'a>(measured: impl Into<Reqs<'a>>) -> Duration {
    let measured = measured.into();
    let records = || {
        measured
            .iter()
            .filter_map(|m| m.record().map(Cow::into_owned))
    };
    let start = records().map(|r| r.arrival).min().unwrap_or_default();
    let end = records().map(|r| r.end()).max().unwrap_or_default();
    end.saturating_sub(start)
}

/// Summarises a run (whose gaps are in `gaps`): its requests, or a part of them (summarised
/// without a copy of its requests).
pub(crate) fn summarize<'a>(measured: impl Into<Reqs<'a>>, gaps: &Gaps, slo: &Slo) -> BenchSummary {
    let measured = measured.into();
    summarize_over(measured, gaps, slo, duration(measured).as_secs_f64())
}

/// Summarises requests with the rates taken over `duration` seconds (a time slice's length)
/// instead of their own last end − first send.
pub(crate) fn summarize_over<'a>(
    measured: impl Into<Reqs<'a>>,
    gaps: &Gaps,
    slo: &Slo,
    duration: f64,
) -> BenchSummary {
    let measured = measured.into();
    // No list of the successful or good requests is kept: each figure filters them again, so
    // that at most one column of values (8 bytes a request) is held at a time.
    let all = || measured.iter();
    let ok = || all().filter(|m| m.succeeded());
    let records = || ok().filter_map(|m| m.record().map(Cow::into_owned));
    let per_second = |x: f64| if duration > 0.0 { x / duration } else { 0.0 };
    let successful = ok().count();
    let total_input = total(ok().map(|m| m.prompt_tokens()));
    let total_output = total(ok().map(|m| m.output_tokens()));
    let judge = Judge::new(slo);
    let (good, good_output) = all()
        .filter(|m| judge.is_good(m))
        .fold((0_usize, 0_u64), |(n, sum), m| {
            (n + 1, sum.saturating_add(m.output_tokens()))
        });
    let (usage_discrepancies, usage_unusable, usage_implausible_input) = usage_counts(measured);
    BenchSummary {
        requests: measured.len() as u64,
        successful: successful as u64,
        duration_s: duration,
        request_throughput: per_second(successful as f64),
        output_throughput: per_second(total_output as f64),
        total_token_throughput: per_second(total_input.saturating_add(total_output) as f64),
        total_input_tokens: total_input,
        total_output_tokens: total_output,
        total_cached_input_tokens: total(records().filter_map(|r| r.cached_input_tokens)),
        ttft: secs(records().filter_map(|r| r.ttft)),
        ttfot: secs(records().filter_map(|r| r.first_output)),
        ttst: secs(records().filter_map(|r| r.second_token)),
        tpot: Summary::of(ok().filter_map(|m| m.tpot_seconds()).collect()),
        ntpot: secs(records().filter_map(|r| r.normalized_tpot())),
        itl: {
            // Freed here, before the next column (a temporary would live to the statement's end).
            let spans: Vec<_> = ok().map(|m| m.gaps).collect();
            sorted::summary(gaps, &spans)
        },
        e2e: secs(ok().filter_map(|m| m.latency())),
        e2e_stream: secs(records().map(|r| r.e2e)),
        client_queue: secs(all().filter_map(|m| m.client_queue())),
        dispatch_lag: secs(all().filter_map(|m| m.dispatch_lag())),
        ttft_from_schedule: secs(ok().filter_map(|m| m.ttft_from_schedule())),
        e2e_from_schedule: secs(ok().filter_map(|m| m.latency_from_schedule())),
        input_tokens: Summary::of(ok().map(|m| m.prompt_tokens() as f64).collect()),
        output_tokens: Summary::of(ok().map(|m| m.output_tokens() as f64).collect()),
        slo: *slo,
        good_requests: good as u64,
        goodput: per_second(good as f64),
        goodput_output_tokens: per_second(good_output as f64),
        attainment: if measured.is_empty() {
            0.0
        } else {
            good as f64 / measured.len() as f64
        },
        outcomes: Outcomes::of(measured),
        usage_discrepancies,
        usage_unusable,
        usage_implausible_input,
        oddities: Oddities::total(measured.iter().map(|m| m.rare.oddities)),
        client_minus_server_ttft_per_request: per_request_gap(ok()),
    }
}

/// The per-request client − server TTFT of the requests that carried the server's metrics.
fn per_request_gap<'a>(ok: impl Iterator<Item = Cow<'a, Measured>>) -> Option<Summary> {
    let gaps: Vec<f64> = ok.filter_map(|m| m.client_minus_server_ttft()).collect();
    (!gaps.is_empty()).then(|| Summary::of(gaps))
}

#[cfg(test)]
mod tests {
    use tokenmeter::ErrorClass;

    use super::*;
    use crate::tests::manual_run::{MS, Run};

    #[test]
    fn the_numbers_are_the_records_read_the_vllm_way() {
        let mut run = Run::new();
        run.ok(Duration::ZERO, 100 * MS, 10 * MS, 11); // last token at 200 ms
        run.ok(500 * MS, 300 * MS, 20 * MS, 6); // last token at 900 ms
        run.error(900 * MS, 950 * MS, ErrorClass::RateLimited);
        run.measured.push(Measured::default()); // a lost task: an error, no record
        // The first request meets E2E 202 ms at its last token (200 ms), not at its end (205).
        let slo: Slo = "ttft=200ms,e2e=202ms".parse().unwrap();
        let s = summarize(&run.measured, &run.gaps, &slo);
        assert_eq!((s.requests, s.successful, s.good_requests), (4, 2, 1));
        // duration: first send 0, last end: the error's at 950 ms
        assert!((s.duration_s - 0.95).abs() < 1e-12, "{}", s.duration_s);
        assert!((s.ttft.p50 - 0.2).abs() < 1e-12);
        assert!((s.tpot.mean - 0.015).abs() < 1e-12, "{:?}", s.tpot);
        assert!((s.tpot.std - 0.005).abs() < 1e-12, "{:?}", s.tpot);
        assert_eq!(s.itl.count, 10 + 5);
        assert!((s.e2e.max - 0.4).abs() < 1e-12, "to the last token");
        assert!(
            (s.e2e_stream.max - 0.405).abs() < 1e-12,
            "to the stream's end"
        );
        assert_eq!(s.total_output_tokens, 17);
        assert!((s.attainment - 0.25).abs() < 1e-12);
        assert!((s.goodput - 1.0 / 0.95).abs() < 1e-9);
        assert_eq!(s.outcomes.errors.get("rate_limited"), Some(&1));
        assert_eq!(s.outcomes.errors.get("_OTHER"), Some(&1));
        assert_eq!(s.outcomes.success, 2);
        assert_eq!(
            s.client_minus_server_ttft_per_request, None,
            "no metrics came"
        );
    }

    #[test]
    fn per_request_client_minus_server_ttft_from_the_servers_metrics() {
        let mut run = Run::new();
        run.ok(Duration::ZERO, 100 * MS, 10 * MS, 3); // client TTFT 100 ms
        run.ok(500 * MS, 300 * MS, 20 * MS, 3); // client TTFT 300 ms
        run.ok(900 * MS, 50 * MS, 20 * MS, 3); // no metrics
        run.measured[0].rare.server_ttft = Some(99 * MS);
        run.measured[1].rare.server_ttft = Some(297 * MS);
        let s = summarize(&run.measured, &run.gaps, &Slo::default());
        let gap = s.client_minus_server_ttft_per_request.unwrap();
        assert_eq!(gap.count, 2);
        assert!((gap.mean - 0.002).abs() < 1e-12, "{gap:?}");
        assert!((gap.max - 0.003).abs() < 1e-12, "{gap:?}");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["client_minus_server_ttft_per_request"]["count"], 2);
    }
}
