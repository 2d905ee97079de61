//! One series' handles: registered once when the series is resolved, then only indexed.

use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Label};
use tokenmeter::sink::{FirstToken, Gauge as LifecycleGauge, Items, SeriesSink};
use tokenmeter::{ErrorClass, FinishReason, Labels, Outcome, RequestRecord, Role};

use super::labels::{self, with, with_role};
use super::target::Target;
use crate::names::label::{self as label_names, finished_reason, token_type};
use crate::names::{semconv, vllm};
use crate::profile::Profile;

/// Outcome slots of `tokenmeter_requests_total`: success, cancelled, degraded, then one per
/// error class in [`ErrorClass::ALL`] order.
const OUTCOMES: usize = 3 + ErrorClass::ALL.len();

/// Every handle one series needs. Handles a profile or role does not publish are no-ops.
pub(crate) struct SeriesHandles {
    ttft: Histogram,
    itl: Histogram,
    tpot: Histogram,
    e2e: Histogram,
    e2e_errors: Option<ErrorVariants>,
    queue: Histogram,
    prefill: Histogram,
    decode: Histogram,
    inference: Histogram,
    input_per_request: Histogram,
    output_per_request: Histogram,
    input_total: Counter,
    output_total: Counter,
    outcomes: [Counter; OUTCOMES],
    finished: [Counter; 4],
    waiting: Gauge,
    running: Gauge,
}

/// The duration histogram of requests that ended in an error, one per `error_type` in
/// [`ErrorClass::ALL`] order. All are registered with the series, so each exists (at zero)
/// before its first error and `rate()` / `increase()` count that first error too.
type ErrorVariants = [Histogram; ErrorClass::ALL.len()];

fn error_variants(target: &Target, name: &'static str, base: &[Label]) -> ErrorVariants {
    ErrorClass::ALL.map(|class| {
        target.histogram(
            name,
            with(base, label_names::ERROR_TYPE.prometheus, class.as_str()),
        )
    })
}

fn error_index(class: ErrorClass) -> usize {
    ErrorClass::ALL
        .iter()
        .position(|c| *c == class)
        .unwrap_or(ErrorClass::ALL.len() - 1)
}

fn outcome_index(outcome: Outcome) -> usize {
    match outcome {
        Outcome::Success => 0,
        Outcome::Cancelled => 1,
        Outcome::Degraded(_) => 2,
        Outcome::Error(class) => 3 + error_index(class),
        _ => 3 + error_index(ErrorClass::Other),
    }
}

fn finished_index(record: &RequestRecord) -> usize {
    match record.outcome {
        Outcome::Success | Outcome::Degraded(_) => match record.finish_reason {
            Some(FinishReason::Length) => 1,
            _ => 0,
        },
        Outcome::Cancelled => 2,
        _ => 3,
    }
}

/// The `tokenmeter_requests_total` counters of a series with labels `base`.
fn outcome_counters(target: &Target, base: &[Label]) -> [Counter; OUTCOMES] {
    let name = semconv::REQUESTS.prometheus;
    let outcome = label_names::OUTCOME.prometheus;
    std::array::from_fn(|i| match i {
        0 => target.counter(name, with(base, outcome, Outcome::Success.as_str())),
        1 => target.counter(name, with(base, outcome, Outcome::Cancelled.as_str())),
        2 => target.counter(name, with(base, outcome, "degraded")),
        _ => {
            let mut labels = with(base, outcome, "error");
            labels.push(Label::from_static_parts(
                label_names::ERROR_TYPE.prometheus,
                ErrorClass::ALL[i - 3].as_str(),
            ));
            target.counter(name, labels)
        }
    })
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl SeriesHandles {
    pub(crate) fn new(profile: Profile, target: &Target, series: &Labels<'_>) -> Self {
        match profile {
            Profile::Semconv => Self::semconv(target, series),
            Profile::Vllm => Self::vllm(target, series),
        }
    }

    fn semconv(target: &Target, series: &Labels<'_>) -> Self {
        let role = series.role();
        let base = labels::base(Profile::Semconv, series);
        let extra = with_role(&base, Profile::Semconv, role);
        let h = |name: &'static str, labels: &[Label]| target.histogram(name, labels.to_vec());
        let c = |name: &'static str| target.counter(name, extra.clone());
        let server = role == Role::Server;
        let (ttft, itl, tpot, e2e_name) = if server {
            (
                h(semconv::SERVER_TIME_TO_FIRST_TOKEN.prometheus, &base),
                h(semconv::INTER_TOKEN_LATENCY.prometheus, &extra),
                h(semconv::SERVER_TIME_PER_OUTPUT_TOKEN.prometheus, &base),
                semconv::SERVER_REQUEST_DURATION.prometheus,
            )
        } else {
            (
                h(semconv::CLIENT_TIME_TO_FIRST_CHUNK.prometheus, &base),
                h(semconv::CLIENT_TIME_PER_OUTPUT_CHUNK.prometheus, &base),
                h(semconv::TIME_PER_OUTPUT_TOKEN.prometheus, &extra),
                semconv::CLIENT_OPERATION_DURATION.prometheus,
            )
        };
        let server_only = |name: &'static str| {
            if server {
                h(name, &extra)
            } else {
                Histogram::noop()
            }
        };
        let usage = |kind: &'static str| {
            if server {
                Histogram::noop()
            } else {
                let labels = with(&base, label_names::TOKEN_TYPE.prometheus, kind);
                target.histogram(semconv::CLIENT_TOKEN_USAGE.prometheus, labels)
            }
        };
        Self {
            ttft,
            itl,
            tpot,
            e2e: h(e2e_name, &base),
            e2e_errors: Some(error_variants(target, e2e_name, &base)),
            queue: server_only(semconv::QUEUE_TIME.prometheus),
            prefill: server_only(semconv::PREFILL_TIME.prometheus),
            decode: h(semconv::DECODE_TIME.prometheus, &extra),
            inference: server_only(semconv::INFERENCE_TIME.prometheus),
            input_per_request: usage(token_type::INPUT),
            output_per_request: usage(token_type::OUTPUT),
            input_total: c(semconv::INPUT_TOKENS.prometheus),
            output_total: c(semconv::OUTPUT_TOKENS.prometheus),
            outcomes: outcome_counters(target, &extra),
            finished: std::array::from_fn(|_| Counter::noop()),
            waiting: target.gauge(semconv::REQUESTS_WAITING.prometheus, extra.clone()),
            running: target.gauge(semconv::REQUESTS_RUNNING.prometheus, extra.clone()),
        }
    }

    fn vllm(target: &Target, series: &Labels<'_>) -> Self {
        let base = labels::base(Profile::Vllm, series);
        let h = |name: &'static str| target.histogram(name, base.clone());
        let reason = label_names::FINISHED_REASON.prometheus;
        Self {
            ttft: h(vllm::TIME_TO_FIRST_TOKEN.prometheus),
            itl: h(vllm::INTER_TOKEN_LATENCY.prometheus),
            tpot: h(vllm::TIME_PER_OUTPUT_TOKEN.prometheus),
            e2e: h(vllm::E2E_REQUEST_LATENCY.prometheus),
            e2e_errors: None,
            queue: h(vllm::QUEUE_TIME.prometheus),
            prefill: h(vllm::PREFILL_TIME.prometheus),
            decode: h(vllm::DECODE_TIME.prometheus),
            inference: h(vllm::INFERENCE_TIME.prometheus),
            input_per_request: h(vllm::REQUEST_PROMPT_TOKENS.prometheus),
            output_per_request: h(vllm::REQUEST_GENERATION_TOKENS.prometheus),
            input_total: target.counter(vllm::PROMPT_TOKENS.prometheus, base.clone()),
            output_total: target.counter(vllm::GENERATION_TOKENS.prometheus, base.clone()),
            outcomes: outcome_counters(target, &base),
            finished: finished_reason::ALL.map(|value| {
                target.counter(vllm::REQUEST_SUCCESS.prometheus, with(&base, reason, value))
            }),
            waiting: target.gauge(vllm::NUM_REQUESTS_WAITING.prometheus, base.clone()),
            running: target.gauge(vllm::NUM_REQUESTS_RUNNING.prometheus, base.clone()),
        }
    }
}

impl SeriesSink for SeriesHandles {
    fn first_token(&self, event: &FirstToken) {
        self.ttft.record(secs(event.ttft));
    }

    fn item(&self, gap: Duration, _tokens: u32) {
        self.itl.record(secs(gap));
    }

    /// One epoch pin for the whole batch: `metrics-exporter-prometheus` keeps a histogram's
    /// samples in a `metrics-util` `AtomicBucket`, which pins crossbeam's default epoch
    /// collector on every push. Pinned already, each push's pin is a counter increment instead
    /// of a full fence (measured: `cargo bench -p tokenmeter-benches --bench prometheus`,
    /// `record_batch` against `record_batch_pinned`). With another recorder the pin is a few
    /// nanoseconds per batch spent for nothing.
    #[inline]
    fn items(&self, items: Items<'_>) {
        let _pinned = crossbeam_epoch::pin();
        for gap in items.gaps() {
            self.itl.record(secs(gap));
        }
    }

    fn end(&self, record: &RequestRecord) {
        let e2e = match (record.outcome.error_class(), &self.e2e_errors) {
            (Some(class), Some(variants)) => &variants[error_index(class)],
            _ => &self.e2e,
        };
        e2e.record(secs(record.e2e));
        let phases = [
            (&self.tpot, record.tpot()),
            (&self.queue, record.queue),
            (&self.prefill, record.prefill),
            (&self.decode, record.decode),
            (&self.inference, record.inference),
        ];
        for (histogram, value) in phases {
            if let Some(value) = value {
                histogram.record(secs(value));
            }
        }
        if let Some(input) = record.input_tokens {
            self.input_per_request.record(input as f64);
            self.input_total.increment(input);
        }
        if record.output_tokens > 0 {
            self.output_per_request.record(record.output_tokens as f64);
            self.output_total.increment(record.output_tokens);
        }
        self.outcomes[outcome_index(record.outcome)].increment(1);
        self.finished[finished_index(record)].increment(1);
    }

    fn gauge(&self, gauge: LifecycleGauge, delta: i64) {
        let handle = match gauge {
            LifecycleGauge::Waiting => &self.waiting,
            LifecycleGauge::Running => &self.running,
            _ => return,
        };
        handle.increment(delta as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_its_own_slot() {
        let mut seen = std::collections::HashSet::new();
        seen.insert(outcome_index(Outcome::Success));
        seen.insert(outcome_index(Outcome::Cancelled));
        seen.insert(outcome_index(Outcome::Degraded(
            tokenmeter::Degradation::Cached,
        )));
        for class in ErrorClass::ALL {
            seen.insert(outcome_index(Outcome::Error(class)));
        }
        assert_eq!(seen.len(), OUTCOMES);
        assert!(seen.iter().all(|&i| i < OUTCOMES));
    }
}
