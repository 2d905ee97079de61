//! The instruments, created once per sink from an OpenTelemetry [`Meter`].

use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter, UpDownCounter};

use crate::Buckets;
use crate::names::{self, MetricName};

/// Every instrument of one sink. Cloning an instrument is one reference count.
#[derive(Debug)]
pub(crate) struct Instruments {
    pub(crate) server_ttft: Histogram<f64>,
    pub(crate) server_tpot: Histogram<f64>,
    pub(crate) server_duration: Histogram<f64>,
    pub(crate) client_duration: Histogram<f64>,
    pub(crate) client_ttfc: Histogram<f64>,
    pub(crate) client_tpoc: Histogram<f64>,
    pub(crate) token_usage: Histogram<u64>,
    pub(crate) itl: Histogram<f64>,
    pub(crate) client_tpot: Histogram<f64>,
    pub(crate) queue: Histogram<f64>,
    pub(crate) prefill: Histogram<f64>,
    pub(crate) decode: Histogram<f64>,
    pub(crate) inference: Histogram<f64>,
    pub(crate) requests: Counter<u64>,
    pub(crate) input_tokens: Counter<u64>,
    pub(crate) output_tokens: Counter<u64>,
    pub(crate) waiting: UpDownCounter<i64>,
    pub(crate) running: UpDownCounter<i64>,
    pub(crate) folded: Counter<u64>,
    pub(crate) kv_cache_usage: Gauge<f64>,
    pub(crate) preemptions: Counter<u64>,
    pub(crate) step_duration: Histogram<f64>,
    pub(crate) batch_size: Histogram<u64>,
    pub(crate) step_tokens: Counter<u64>,
}

impl Instruments {
    pub(crate) fn new(meter: &Meter, buckets: &Buckets) -> Self {
        let seconds = |m: MetricName| {
            let builder = meter
                .f64_histogram(m.name)
                .with_unit(m.unit)
                .with_description(m.description);
            match buckets.edges(m.name) {
                Some(edges) => builder.with_boundaries(edges).build(),
                None => builder.build(),
            }
        };
        let counter = |m: MetricName| {
            meter
                .u64_counter(m.name)
                .with_unit(m.unit)
                .with_description(m.description)
                .build()
        };
        let up_down = |m: MetricName| {
            meter
                .i64_up_down_counter(m.name)
                .with_unit(m.unit)
                .with_description(m.description)
                .build()
        };
        let counts = |m: MetricName| {
            let builder = meter
                .u64_histogram(m.name)
                .with_unit(m.unit)
                .with_description(m.description);
            match buckets.edges(m.name) {
                Some(edges) => builder.with_boundaries(edges).build(),
                None => builder.build(),
            }
        };
        let kv = names::KV_CACHE_USAGE;
        Self {
            server_ttft: seconds(names::SERVER_TIME_TO_FIRST_TOKEN),
            server_tpot: seconds(names::SERVER_TIME_PER_OUTPUT_TOKEN),
            server_duration: seconds(names::SERVER_REQUEST_DURATION),
            client_duration: seconds(names::CLIENT_OPERATION_DURATION),
            client_ttfc: seconds(names::CLIENT_TIME_TO_FIRST_CHUNK),
            client_tpoc: seconds(names::CLIENT_TIME_PER_OUTPUT_CHUNK),
            token_usage: counts(names::CLIENT_TOKEN_USAGE),
            itl: seconds(names::INTER_TOKEN_LATENCY),
            client_tpot: seconds(names::TIME_PER_OUTPUT_TOKEN),
            queue: seconds(names::QUEUE_TIME),
            prefill: seconds(names::PREFILL_TIME),
            decode: seconds(names::DECODE_TIME),
            inference: seconds(names::INFERENCE_TIME),
            requests: counter(names::REQUESTS),
            input_tokens: counter(names::INPUT_TOKENS),
            output_tokens: counter(names::OUTPUT_TOKENS),
            waiting: up_down(names::REQUESTS_WAITING),
            running: up_down(names::REQUESTS_RUNNING),
            folded: counter(names::SERIES_FOLDED),
            kv_cache_usage: meter
                .f64_gauge(kv.name)
                .with_unit(kv.unit)
                .with_description(kv.description)
                .build(),
            preemptions: counter(names::PREEMPTIONS),
            step_duration: seconds(names::ENGINE_STEP_DURATION),
            batch_size: counts(names::ENGINE_BATCH_SIZE),
            step_tokens: counter(names::ENGINE_STEP_TOKENS),
        }
    }
}
