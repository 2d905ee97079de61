//! `--result-format vllm`: the JSON `vllm bench serve --save-result` writes, so that vLLM
//! result parsers and dashboards read tokenmeter's runs. Its keys and units are vLLM's:
//! statistics in milliseconds (`mean_ttft_ms`, `median_tpot_ms`, `std_e2el_ms`, `p99_itl_ms`,
//! one `pP_` key per `--metric-percentiles` value, for each of `--percentile-metrics`), over
//! the successful requests; the per-request lists of `--save-detailed` in seconds, one entry
//! per request sent (0 and empty for failures, as vLLM writes them). The statistics are the
//! same core records and formulas as tokenmeter's own summary (numpy's mean, population std
//! and linearly interpolated percentiles); an empty metric is 0, as numpy gives it there.
//! tokenmeter does not keep generated text: `generated_texts` holds empty strings.
//! `client_queue_time` and `e2el_including_client_queue` (vLLM 0.33, over every request sent)
//! are added by themselves when a request waited in the client more than 1 ms, named in
//! `--percentile-metrics` or not; `queue_times` is among the detailed lists.

use serde_json::{Map, Value, json};
use tokenmeter::report::{Summary, percentile};

use crate::gaps::{GapSpan, Gaps, sorted};
use crate::measured::Measured;
use crate::peer::{PeerArgs, PercentileMetric};
use crate::reqs::Reqs;
use crate::run_block::RunInfo;
use crate::summary::BenchSummary;
use crate::workload::ArrivalKind;

/// How the run was made, beyond its [`RunInfo`].
pub(crate) struct VllmRun<'a> {
    /// The run.
    pub(crate) info: &'a RunInfo,
    /// vLLM's backend name: `openai-chat` or `openai`.
    pub(crate) backend: &'static str,
    /// How open-loop arrivals were spaced.
    pub(crate) arrival: ArrivalKind,
    /// The percentile flags.
    pub(crate) peer: &'a PeerArgs,
}

/// The values of one metric over the successful requests: seconds, sorted, or the gaps of
/// the requests for the ITL (walked in order, not copied: [`sorted`]).
pub(crate) enum Values<'a> {
    /// Seconds, ascending.
    Seconds(Vec<f64>),
    /// The requests' gaps.
    Gaps(&'a Gaps, Vec<GapSpan>),
}

impl Values<'_> {
    /// Their statistics.
    pub(crate) fn summary(&self) -> Summary {
        match self {
            Values::Seconds(seconds) => Summary::of(seconds.clone()),
            Values::Gaps(gaps, spans) => sorted::summary(gaps, spans),
        }
    }

    /// Their percentiles `ps`, in seconds (`None`: no value).
    pub(crate) fn at(&self, ps: &[f64]) -> Vec<Option<f64>> {
        match self {
            Values::Seconds(seconds) => ps.iter().map(|&p| percentile(seconds, p)).collect(),
            Values::Gaps(gaps, spans) => sorted::percentiles(gaps, spans, ps),
        }
    }
}

/// The values of `metric` over the successful requests, in seconds (their gaps in `gaps`).
pub(crate) fn values<'r, 'a>(
    metric: PercentileMetric,
    measured: impl Into<Reqs<'r>>,
    gaps: &'a Gaps,
) -> Values<'a> {
    let measured: Reqs<'r> = measured.into();
    let ok = measured.iter().filter(|m| m.succeeded());
    let records = ok.clone().filter_map(|m| m.owned_record());
    let mut seconds: Vec<f64> = match metric {
        PercentileMetric::Ttft => records
            .filter_map(|r| r.ttft)
            .map(|d| d.as_secs_f64())
            .collect(),
        PercentileMetric::Tpot => ok.filter_map(|m| m.tpot_seconds()).collect(),
        PercentileMetric::Itl => {
            return Values::Gaps(gaps, ok.map(|m| m.gaps).collect());
        }
        PercentileMetric::E2el => ok
            .filter_map(|m| m.latency())
            .map(|d| d.as_secs_f64())
            .collect(),
        // vLLM's lists: one entry per request sent, a failed one's latency 0.
        PercentileMetric::ClientQueueTime => measured
            .iter()
            .filter_map(|m| m.client_queue())
            .map(|d| d.as_secs_f64())
            .collect(),
        PercentileMetric::E2elIncludingClientQueue => measured
            .iter()
            .filter_map(|m| {
                let latency = m.latency().filter(|_| m.succeeded()).unwrap_or_default();
                Some(latency + m.client_queue()?)
            })
            .map(|d| d.as_secs_f64())
            .collect(),
    };
    seconds.sort_by(f64::total_cmp);
    Values::Seconds(seconds)
}

/// vLLM's name of percentile `p`: `99`, `99.9`.
pub(crate) fn p_word(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{}", p as u64)
    } else {
        format!("{p}")
    }
}

/// The vLLM result of a single run.
pub(crate) fn result<'r>(
    run: &VllmRun<'_>,
    summary: &BenchSummary,
    measured: impl Into<Reqs<'r>>,
    gaps: &Gaps,
) -> Value {
    let measured: Reqs<'r> = measured.into();
    let numbers = &run.info.numbers;
    let started = numbers.started_at.as_str();
    let date = format!(
        "{}-{}",
        started.get(..10).unwrap_or_default().replace('-', ""),
        started.get(11..19).unwrap_or_default().replace(':', "")
    );
    let goodput = (!summary.slo.is_empty()).then_some(summary.goodput);
    let mut out = Map::new();
    let mut put = |key: &str, value: Value| {
        out.insert(key.to_owned(), value);
    };
    put("date", date.into());
    put("backend", run.backend.into());
    put("endpoint_type", run.backend.into());
    put("label", json!(numbers.label));
    put("model_id", run.info.model.as_str().into());
    put("tokenizer_id", run.info.model.as_str().into());
    put("num_prompts", summary.requests.into());
    put("request_rate", numbers.rate.clone());
    let burstiness = match (&numbers.rate, run.arrival) {
        (Value::Null, _) => Value::Null,
        (_, ArrivalKind::Poisson) => 1.0.into(),
        (_, ArrivalKind::Constant) => Value::Null,
    };
    put("burstiness", burstiness);
    put("max_concurrency", json!(numbers.concurrency));
    put("duration", summary.duration_s.into());
    put("completed", summary.successful.into());
    put("failed", (summary.requests - summary.successful).into());
    put("total_input_tokens", summary.total_input_tokens.into());
    put("total_output_tokens", summary.total_output_tokens.into());
    put("request_throughput", summary.request_throughput.into());
    put("request_goodput", json!(goodput));
    put("output_throughput", summary.output_throughput.into());
    put(
        "total_token_throughput",
        summary.total_token_throughput.into(),
    );
    let mut metrics = run.peer.metrics().to_vec();
    if crate::output::table::shows_schedule(summary) {
        // Requests waited in the client: vLLM 0.33's keys for it, named or not.
        for extra in [
            PercentileMetric::ClientQueueTime,
            PercentileMetric::E2elIncludingClientQueue,
        ] {
            if !metrics.contains(&extra) {
                metrics.push(extra);
            }
        }
    }
    for metric in metrics {
        let values = values(metric, measured, gaps);
        let stats = values.summary();
        let name = metric.name();
        let ms = |s: f64| if s.is_finite() { s * 1e3 } else { 0.0 };
        put(&format!("mean_{name}_ms"), ms(stats.mean).into());
        put(&format!("median_{name}_ms"), ms(stats.p50).into());
        put(&format!("std_{name}_ms"), ms(stats.std).into());
        let at = values.at(run.peer.percentiles());
        for (&p, value) in run.peer.percentiles().iter().zip(at) {
            put(
                &format!("p{}_{name}_ms", p_word(p)),
                ms(value.unwrap_or(0.0)).into(),
            );
        }
    }
    if run.peer.save_detailed {
        detailed(&mut out, measured, gaps);
    }
    for (key, value) in &numbers.metadata {
        out.entry(key.clone())
            .or_insert_with(|| value.clone().into());
    }
    Value::Object(out)
}

/// The record of a successful request.
fn record(m: &Measured) -> Option<std::borrow::Cow<'_, tokenmeter::RequestRecord>> {
    m.record().filter(|_| m.succeeded())
}

/// The per-request lists, one entry per request sent, in seconds.
fn detailed(out: &mut Map<String, Value>, measured: Reqs<'_>, gaps: &Gaps) {
    let secs = |d: std::time::Duration| d.as_secs_f64();
    let lists: [(&str, Vec<Value>); 8] = [
        (
            "input_lens",
            measured.iter().map(|m| m.prompt_tokens().into()).collect(),
        ),
        (
            "output_lens",
            measured
                .iter()
                .map(|m| if m.succeeded() { m.output_tokens() } else { 0 }.into())
                .collect(),
        ),
        (
            "ttfts",
            measured
                .iter()
                .map(|m| record(&m).and_then(|r| r.ttft).map_or(0.0, secs).into())
                .collect(),
        ),
        (
            "itls",
            measured
                .iter()
                .map(|m| {
                    let mine = record(&m).map(|_| m.gaps).unwrap_or_default();
                    Value::Array(gaps.of(mine).map(|g| secs(g).into()).collect())
                })
                .collect(),
        ),
        (
            "start_times",
            measured
                .iter()
                .map(|m| m.record().map_or(0.0, |r| secs(r.arrival)).into())
                .collect(),
        ),
        (
            "queue_times",
            measured
                .iter()
                .map(|m| m.client_queue().map_or(0.0, secs).into())
                .collect(),
        ),
        (
            "generated_texts",
            measured.iter().map(|_| "".into()).collect(),
        ),
        (
            "errors",
            measured
                .iter()
                .map(|m| m.rare.error.as_ref().map_or("", |e| e.as_str()).into())
                .collect(),
        ),
    ];
    for (key, list) in lists {
        out.insert(key.to_owned(), Value::Array(list));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_words_are_vllms() {
        assert_eq!(p_word(99.0), "99");
        assert_eq!(p_word(99.9), "99.9");
        assert_eq!(p_word(50.0), "50");
    }
}
