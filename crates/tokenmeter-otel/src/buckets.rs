//! Bucket layouts: the semconv bucket advice of `../shared/METRICS.md` §3.1, per-metric
//! replacement, and extra edges (SLO thresholds) — the same API as the Prometheus exporter's.

use std::collections::BTreeMap;
use std::fmt;

use crate::names::{self, MetricName};

/// What a histogram measures, independent of role. Bucket settings are given per `Metric` and
/// apply to every histogram of that meaning: [`Metric::Ttft`] is
/// `gen_ai.server.time_to_first_token` and `gen_ai.client.operation.time_to_first_chunk`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Metric {
    /// Time to first token (server) or first chunk (client), seconds.
    Ttft,
    /// Inter-token latency, one sample per item after the first, seconds.
    Itl,
    /// Time per output token, per request, seconds.
    Tpot,
    /// End-to-end request duration, seconds.
    E2e,
    /// Queue time, seconds.
    Queue,
    /// Prefill time, seconds.
    Prefill,
    /// Decode time, seconds.
    Decode,
    /// Inference time, seconds.
    Inference,
    /// Input tokens per request.
    InputTokens,
    /// Output tokens per request.
    OutputTokens,
    /// Duration of one engine step, seconds.
    StepDuration,
    /// Sequences in one engine step (the batch size).
    BatchSize,
}

impl Metric {
    /// Every metric, in a fixed order.
    pub const ALL: [Metric; 12] = [
        Metric::Ttft,
        Metric::Itl,
        Metric::Tpot,
        Metric::E2e,
        Metric::Queue,
        Metric::Prefill,
        Metric::Decode,
        Metric::Inference,
        Metric::InputTokens,
        Metric::OutputTokens,
        Metric::StepDuration,
        Metric::BatchSize,
    ];

    /// `ttft`, `itl`, `tpot`, `e2e`, `queue`, `prefill`, `decode`, `inference`,
    /// `input_tokens`, `output_tokens`, `step_duration` or `batch_size`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Itl => "itl",
            Metric::Tpot => "tpot",
            Metric::E2e => "e2e",
            Metric::Queue => "queue",
            Metric::Prefill => "prefill",
            Metric::Decode => "decode",
            Metric::Inference => "inference",
            Metric::InputTokens => "input_tokens",
            Metric::OutputTokens => "output_tokens",
            Metric::StepDuration => "step_duration",
            Metric::BatchSize => "batch_size",
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Semconv advice for `gen_ai.server.time_to_first_token`.
pub const TTFT_EDGES: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// Semconv advice for `gen_ai.server.time_per_output_token` (also used for inter-token latency).
pub const TPOT_EDGES: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
];
/// Semconv advice for durations: 0.01 doubling to 81.92.
pub const DURATION_EDGES: &[f64] = &[
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// Semconv advice for `gen_ai.client.token.usage`: 1, ×4, … 67108864.
pub const TOKEN_EDGES: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
/// Engine step durations: 1 ms doubling to 8.192 s (a decode step takes milliseconds, a long
/// prefill seconds), as the Prometheus exporter's.
pub const STEP_DURATION_EDGES: &[f64] = &[
    0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096,
    8.192,
];
/// Sequences per engine step: powers of two from 1 to 1024.
pub const BATCH_SIZE_EDGES: &[f64] = &[
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

/// Every histogram, the concepts whose bucket settings it takes, and its default layout.
const HISTOGRAMS: &[(MetricName, &[Metric], &[f64])] = &[
    (
        names::SERVER_TIME_TO_FIRST_TOKEN,
        &[Metric::Ttft],
        TTFT_EDGES,
    ),
    (
        names::SERVER_TIME_PER_OUTPUT_TOKEN,
        &[Metric::Tpot],
        TPOT_EDGES,
    ),
    (
        names::SERVER_REQUEST_DURATION,
        &[Metric::E2e],
        DURATION_EDGES,
    ),
    (
        names::CLIENT_OPERATION_DURATION,
        &[Metric::E2e],
        DURATION_EDGES,
    ),
    (
        names::CLIENT_TIME_TO_FIRST_CHUNK,
        &[Metric::Ttft],
        DURATION_EDGES,
    ),
    (
        names::CLIENT_TIME_PER_OUTPUT_CHUNK,
        &[Metric::Itl],
        DURATION_EDGES,
    ),
    (
        names::CLIENT_TOKEN_USAGE,
        &[Metric::InputTokens, Metric::OutputTokens],
        TOKEN_EDGES,
    ),
    (names::INTER_TOKEN_LATENCY, &[Metric::Itl], TPOT_EDGES),
    (names::TIME_PER_OUTPUT_TOKEN, &[Metric::Tpot], TPOT_EDGES),
    (names::QUEUE_TIME, &[Metric::Queue], DURATION_EDGES),
    (names::PREFILL_TIME, &[Metric::Prefill], DURATION_EDGES),
    (names::DECODE_TIME, &[Metric::Decode], DURATION_EDGES),
    (names::INFERENCE_TIME, &[Metric::Inference], DURATION_EDGES),
    (
        names::ENGINE_STEP_DURATION,
        &[Metric::StepDuration],
        STEP_DURATION_EDGES,
    ),
    (
        names::ENGINE_BATCH_SIZE,
        &[Metric::BatchSize],
        BATCH_SIZE_EDGES,
    ),
];

/// A bucket setting that was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BucketError {
    /// An edge is NaN, infinite or negative.
    #[error(
        "bucket edge {value} for `{metric}` is not valid: edges must be finite numbers >= 0 \
         (seconds for durations, a count for tokens)"
    )]
    InvalidEdge {
        /// The metric.
        metric: Metric,
        /// The edge.
        value: f64,
    },
    /// A replacement layout has no edge.
    #[error(
        "the bucket layout for `{metric}` is empty: give at least one edge, or keep the default"
    )]
    EmptyBuckets {
        /// The metric.
        metric: Metric,
    },
}

/// Bucket settings for every histogram: the semconv advice, replaced or extended per
/// [`Metric`].
///
/// Add an SLO threshold as an edge with [`Buckets::add_edges`], so that the fraction of requests
/// at or under the threshold is exact in the backend (buckets count `value <= edge`).
///
/// # Examples
///
/// ```
/// use tokenmeter_otel::{Buckets, Metric};
///
/// let mut buckets = Buckets::new();
/// buckets.add_edges(Metric::Ttft, &[0.35])?; // "TTFT <= 350 ms" is an SLO
/// let edges = buckets.edges("gen_ai.server.time_to_first_token").unwrap();
/// assert!(edges.contains(&0.35) && edges.contains(&0.25) && edges.contains(&0.5));
///
/// buckets.set(Metric::Itl, &[0.05, 0.01])?; // replace a layout (sorted for you)
/// assert_eq!(buckets.edges("tokenmeter.inter_token_latency").unwrap(), [0.01, 0.05]);
/// # Ok::<(), tokenmeter_otel::BucketError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Buckets {
    replaced: BTreeMap<Metric, Vec<f64>>,
    extra: BTreeMap<Metric, Vec<f64>>,
}

impl Buckets {
    /// The semconv defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the default layout of `metric` with `edges` (any order; duplicates removed).
    /// Edges added with [`Buckets::add_edges`] are kept.
    ///
    /// # Errors
    ///
    /// An edge that is NaN, infinite or negative, or no edge at all. A refused call changes
    /// nothing.
    pub fn set(&mut self, metric: Metric, edges: &[f64]) -> Result<&mut Self, BucketError> {
        let edges = validate(metric, edges)?;
        if edges.is_empty() {
            return Err(BucketError::EmptyBuckets { metric });
        }
        self.replaced.insert(metric, edges);
        Ok(self)
    }

    /// Adds `edges` to the layout of `metric` (default or replaced): the SLO thresholds.
    ///
    /// # Errors
    ///
    /// An edge that is NaN, infinite or negative. A refused call changes nothing.
    pub fn add_edges(&mut self, metric: Metric, edges: &[f64]) -> Result<&mut Self, BucketError> {
        let edges = validate(metric, edges)?;
        self.extra.entry(metric).or_default().extend(edges);
        Ok(self)
    }

    /// The sorted edges of the histogram instrument `name`, or `None` if no histogram has
    /// that name.
    pub fn edges(&self, name: &str) -> Option<Vec<f64>> {
        let (_, concepts, default) = HISTOGRAMS.iter().find(|(n, ..)| n.name == name)?;
        let mut edges = Vec::new();
        for concept in *concepts {
            match self.replaced.get(concept) {
                Some(replaced) => edges.extend_from_slice(replaced),
                None => edges.extend_from_slice(default),
            }
            if let Some(extra) = self.extra.get(concept) {
                edges.extend_from_slice(extra);
            }
        }
        edges.sort_by(f64::total_cmp);
        edges.dedup();
        Some(edges)
    }
}

fn validate(metric: Metric, edges: &[f64]) -> Result<Vec<f64>, BucketError> {
    if let Some(&value) = edges.iter().find(|v| !v.is_finite() || **v < 0.0) {
        return Err(BucketError::InvalidEdge { metric, value });
    }
    let mut edges = edges.to_vec();
    edges.sort_by(f64::total_cmp);
    edges.dedup();
    Ok(edges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_histogram_has_a_layout() {
        for metric in names::ALL {
            let has = Buckets::new().edges(metric.name).is_some();
            assert_eq!(has, metric.kind == names::Kind::Histogram, "{metric}");
        }
    }

    #[test]
    fn defaults_match_the_metrics_reference() {
        let b = Buckets::new();
        let duration = b.edges("gen_ai.server.request.duration").unwrap();
        assert_eq!(
            (duration[0], duration[13], duration.len()),
            (0.01, 81.92, 14)
        );
        for pair in duration.windows(2) {
            assert!((pair[1] / pair[0] - 2.0).abs() < 1e-12);
        }
        let tokens = b.edges("gen_ai.client.token.usage").unwrap();
        assert!(tokens.windows(2).all(|p| p[1] == p[0] * 4.0));
        assert_eq!(tokens.last(), Some(&67108864.0));
        assert_eq!(
            b.edges("gen_ai.server.time_to_first_token").unwrap().len(),
            16
        );
    }

    #[test]
    fn extra_edges_merge_and_survive_a_replacement() {
        let mut b = Buckets::new();
        b.add_edges(Metric::InputTokens, &[3000.0]).unwrap();
        b.add_edges(Metric::OutputTokens, &[400.0]).unwrap();
        let usage = b.edges("gen_ai.client.token.usage").unwrap();
        assert!(usage.contains(&3000.0) && usage.contains(&400.0));
        b.add_edges(Metric::Ttft, &[0.35]).unwrap();
        b.set(Metric::Ttft, &[2.0, 1.0, 1.0]).unwrap();
        assert_eq!(
            b.edges("gen_ai.client.operation.time_to_first_chunk")
                .unwrap(),
            [0.35, 1.0, 2.0]
        );
    }

    #[test]
    fn invalid_edges_are_refused_and_change_nothing() {
        let mut b = Buckets::new();
        let err = b.add_edges(Metric::Ttft, &[0.5, f64::NAN]).unwrap_err();
        assert!(err.to_string().contains("finite"), "{err}");
        assert!(b.add_edges(Metric::Ttft, &[-1.0]).is_err());
        assert_eq!(
            b.set(Metric::E2e, &[]).unwrap_err(),
            BucketError::EmptyBuckets {
                metric: Metric::E2e
            }
        );
        assert_eq!(b, Buckets::new());
    }
}
