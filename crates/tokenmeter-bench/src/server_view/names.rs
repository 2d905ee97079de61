//! The metric names the bench recognizes on a server's `/metrics`, and one scrape reduced to
//! what the reports show ([`Snapshot`]).
//!
//! | Signal | vLLM (current, then older) | tokenmeter (`serve`, semconv profile) |
//! |---|---|---|
//! | waiting requests | `vllm:num_requests_waiting` | `tokenmeter_requests_waiting` |
//! | running requests | `vllm:num_requests_running` | `tokenmeter_requests_running` |
//! | KV-cache usage (0..1) | `vllm:kv_cache_usage_perc`, `vllm:gpu_cache_usage_perc` | `tokenmeter_kv_cache_usage_ratio` |
//! | TTFT histogram | `vllm:time_to_first_token_seconds` | `gen_ai_server_time_to_first_token_seconds` |
//! | ITL histogram | `vllm:inter_token_latency_seconds`, `vllm:time_per_output_token_seconds` | `tokenmeter_inter_token_latency_seconds` |
//! | E2E histogram (`_sum`, `_count`) | `vllm:e2e_request_latency_seconds` | `gen_ai_server_request_duration_seconds` |
//! | queue-time histogram (`_sum`, `_count`) | `vllm:request_queue_time_seconds` | `tokenmeter_request_queue_time_seconds` |
//!
//! Of the TTFT and ITL histograms the buckets are read and the `_sum` and `_count`; of E2E
//! and queue time, the `_sum` and `_count` only ([`Sums`]: exact means).
//!
//! `tokenmeter serve --profile vllm` prints vLLM's names. Series of one signal are summed over
//! their labels (models, engines), except KV-cache usage, a ratio, whose largest series is
//! kept; series labelled `role` other than `server` (a client's view in the same process) are
//! left out. The first name of a row that the scrape holds wins.

use serde::Serialize;

use super::exposition::Sample;
use super::histogram::Buckets;
use super::slo_counts::{self, SloCounts};
use super::totals::{Sums, Totals};

/// Gauges: waiting, running, KV usage; each row lists names in order of preference.
const WAITING: &[&str] = &["vllm:num_requests_waiting", "tokenmeter_requests_waiting"];
const RUNNING: &[&str] = &["vllm:num_requests_running", "tokenmeter_requests_running"];
const KV_USAGE: &[&str] = &[
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "tokenmeter_kv_cache_usage_ratio",
];
/// Histogram families.
const TTFT: &[&str] = &[
    "vllm:time_to_first_token_seconds",
    "gen_ai_server_time_to_first_token_seconds",
];
const ITL: &[&str] = &[
    "vllm:inter_token_latency_seconds",
    "vllm:time_per_output_token_seconds",
    "tokenmeter_inter_token_latency_seconds",
];
const E2E: &[&str] = &[
    "vllm:e2e_request_latency_seconds",
    "gen_ai_server_request_duration_seconds",
];
const QUEUE: &[&str] = &[
    "vllm:request_queue_time_seconds",
    "tokenmeter_request_queue_time_seconds",
];

/// Whether the parser should keep a sample of this name.
pub(crate) fn wanted(name: &str) -> bool {
    let family = ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name);
    [
        WAITING,
        RUNNING,
        KV_USAGE,
        &[slo_counts::REQUESTS, slo_counts::GOOD],
    ]
    .iter()
    .any(|row| row.contains(&name))
        || [TTFT, ITL, E2E, QUEUE]
            .iter()
            .any(|row| row.contains(&family))
}

/// One scrape, reduced: what each recognized signal read.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Snapshot {
    /// Requests waiting (queued).
    pub(crate) waiting: Option<f64>,
    /// Requests running (in the batch).
    pub(crate) running: Option<f64>,
    /// KV-cache usage, 0..1.
    pub(crate) kv_usage: Option<f64>,
    /// The server's TTFT histogram.
    #[serde(skip)]
    pub(crate) ttft: Option<Buckets>,
    /// The server's inter-token latency histogram.
    #[serde(skip)]
    pub(crate) itl: Option<Buckets>,
    /// `_sum` and `_count` of TTFT, ITL, E2E and queue time.
    #[serde(skip)]
    pub(crate) sums: Sums,
    /// The SLO verdict counters by class.
    #[serde(skip)]
    pub(crate) slo: SloCounts,
    /// The names that were found, e.g. `vllm:num_requests_waiting`.
    pub(crate) names: Vec<&'static str>,
}

impl Snapshot {
    /// Reduces parsed samples.
    pub(crate) fn of(samples: &[Sample]) -> Self {
        let mut names = Vec::new();
        let mut gauge = |row: &[&'static str], fold: fn(f64, f64) -> f64| {
            let name = *row
                .iter()
                .find(|n| samples.iter().any(|s| s.name == **n && server_side(s)))?;
            names.push(name);
            samples
                .iter()
                .filter(|s| s.name == name && server_side(s) && s.value.is_finite())
                .map(|s| s.value)
                .reduce(fold)
        };
        let waiting = gauge(WAITING, |a, b| a + b);
        let running = gauge(RUNNING, |a, b| a + b);
        let kv_usage = gauge(KV_USAGE, f64::max);
        let ttft = histogram(samples, TTFT, &mut names);
        let itl = histogram(samples, ITL, &mut names);
        let sums = Sums {
            ttft: totals(samples, TTFT, &mut names),
            itl: totals(samples, ITL, &mut names),
            e2e: totals(samples, E2E, &mut names),
            queue: totals(samples, QUEUE, &mut names),
        };
        Self {
            waiting,
            running,
            kv_usage,
            ttft,
            itl,
            sums,
            slo: SloCounts::of(samples),
            names,
        }
    }
}

/// Not a series of another role than the server's.
fn server_side(sample: &Sample) -> bool {
    sample.label("role").is_none_or(|r| r == "server")
}

/// The first family of `row` with buckets, its series summed by `le`.
fn histogram(
    samples: &[Sample],
    row: &[&'static str],
    names: &mut Vec<&'static str>,
) -> Option<Buckets> {
    for family in row {
        let bucket = format!("{family}_bucket");
        let mut sum = Buckets::default();
        let mut found = false;
        for s in samples
            .iter()
            .filter(|s| s.name == bucket && server_side(s))
        {
            let Some(le) = s.label("le").and_then(super::exposition::number) else {
                continue;
            };
            if s.value.is_finite() && !le.is_nan() {
                sum.add(le, s.value);
                found = true;
            }
        }
        if found {
            names.push(family);
            return Some(sum);
        }
    }
    None
}

/// The first family of `row` with a `_sum` and a `_count`, each summed over its series.
fn totals(
    samples: &[Sample],
    row: &[&'static str],
    names: &mut Vec<&'static str>,
) -> Option<Totals> {
    row.iter().find_map(|family| {
        let sum_of = |suffix: &str| {
            let name = format!("{family}{suffix}");
            samples
                .iter()
                .filter(|s| s.name == name && server_side(s) && s.value.is_finite())
                .map(|s| s.value)
                .reduce(|a, b| a + b)
        };
        let totals = Totals {
            sum: sum_of("_sum")?,
            count: sum_of("_count")?,
        };
        if !names.contains(family) {
            names.push(family);
        }
        Some(totals)
    })
}

#[cfg(test)]
mod tests {
    use super::super::exposition::parse;
    use super::*;

    fn snapshot(text: &str) -> Snapshot {
        Snapshot::of(&parse(text, wanted).unwrap())
    }

    #[test]
    fn vllm_names_current_and_old() {
        let current = snapshot(
            "# TYPE vllm:num_requests_waiting gauge\n\
             vllm:num_requests_waiting{engine=\"0\",model_name=\"a\"} 3\n\
             vllm:num_requests_waiting{engine=\"0\",model_name=\"b\"} 2\n\
             vllm:num_requests_running{engine=\"0\",model_name=\"a\"} 8\n\
             vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"a\"} 0.25\n\
             vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"a\"} 0.5\n\
             vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"a\"} 1\n\
             vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"a\"} 2\n\
             vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"b\"} 3\n\
             vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"b\"} 3\n\
             vllm:time_to_first_token_seconds_count{model_name=\"a\"} 2\n\
             vllm:time_to_first_token_seconds_sum{model_name=\"a\"} 0.125\n\
             vllm:time_to_first_token_seconds_count{model_name=\"b\"} 3\n\
             vllm:time_to_first_token_seconds_sum{model_name=\"b\"} 0.125\n\
             vllm:e2e_request_latency_seconds_sum{model_name=\"a\"} 1.5\n\
             vllm:e2e_request_latency_seconds_count{model_name=\"a\"} 2\n\
             vllm:inter_token_latency_seconds_bucket{le=\"0.01\",model_name=\"a\"} 7\n\
             vllm:inter_token_latency_seconds_bucket{le=\"+Inf\",model_name=\"a\"} 9\n\
             vllm:request_success_total{model_name=\"a\"} 4\n",
        );
        assert_eq!(current.waiting, Some(5.0));
        assert_eq!(current.running, Some(8.0));
        assert_eq!(current.kv_usage, Some(0.5));
        let ttft = current.ttft.as_ref().unwrap();
        assert_eq!(ttft.0, [(0.1, 4.0), (f64::INFINITY, 5.0)]);
        assert_eq!(current.itl.as_ref().unwrap().total(), 9.0);
        let ttft_sums = current.sums.ttft.unwrap();
        assert_eq!(
            (ttft_sums.sum, ttft_sums.count),
            (0.25, 5.0),
            "summed over models"
        );
        assert_eq!(current.sums.e2e.unwrap().count, 2.0);
        assert_eq!(current.sums.queue, None);
        assert!(current.names.contains(&"vllm:e2e_request_latency_seconds"));
        assert!(current.names.contains(&"vllm:inter_token_latency_seconds"));

        let old = snapshot(
            "vllm:gpu_cache_usage_perc{model_name=\"a\"} 0.75\n\
             vllm:time_per_output_token_seconds_bucket{le=\"0.05\",model_name=\"a\"} 1\n\
             vllm:time_per_output_token_seconds_bucket{le=\"+Inf\",model_name=\"a\"} 1\n",
        );
        assert_eq!(old.kv_usage, Some(0.75));
        assert_eq!(old.waiting, None);
        assert_eq!(old.itl.unwrap().total(), 1.0);
        assert_eq!(
            old.names,
            [
                "vllm:gpu_cache_usage_perc",
                "vllm:time_per_output_token_seconds"
            ]
        );
    }

    #[test]
    fn tokenmeter_names_keep_the_server_role() {
        let ours = snapshot(
            "tokenmeter_requests_waiting{gen_ai_request_model=\"m\"} 4\n\
             tokenmeter_requests_running{gen_ai_request_model=\"m\"} 2\n\
             tokenmeter_kv_cache_usage_ratio 0.125\n\
             gen_ai_server_time_to_first_token_seconds_bucket{gen_ai_operation_name=\"chat\",le=\"0.5\"} 6\n\
             gen_ai_server_time_to_first_token_seconds_bucket{gen_ai_operation_name=\"chat\",le=\"+Inf\"} 6\n\
             tokenmeter_inter_token_latency_seconds_bucket{role=\"server\",le=\"0.01\"} 10\n\
             tokenmeter_inter_token_latency_seconds_bucket{role=\"server\",le=\"+Inf\"} 10\n\
             tokenmeter_inter_token_latency_seconds_bucket{role=\"client\",le=\"0.01\"} 99\n\
             tokenmeter_inter_token_latency_seconds_bucket{role=\"client\",le=\"+Inf\"} 99\n",
        );
        assert_eq!(
            (ours.waiting, ours.running, ours.kv_usage),
            (Some(4.0), Some(2.0), Some(0.125))
        );
        assert_eq!(ours.ttft.unwrap().total(), 6.0);
        assert_eq!(
            ours.itl.unwrap().total(),
            10.0,
            "the client's series left out"
        );
        assert!(snapshot("other_metric 1\n").names.is_empty());
    }
}
