//! Bucket layouts: the defaults of `../shared/METRICS.md`, per-metric replacement, and extra
//! edges (SLO thresholds) so that `rate(x_bucket{le="<threshold>"}) / rate(x_count)` is exact.

use std::collections::BTreeMap;
use std::fmt;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

use crate::error::Error;
pub(crate) use crate::layout::Layout;
use crate::profile::Profile;

/// What a histogram measures, independent of the profile's names. Bucket settings are given per
/// `Metric` and apply to every histogram of that meaning: [`Metric::Ttft`] is
/// `gen_ai_server_time_to_first_token_seconds` and
/// `gen_ai_client_operation_time_to_first_chunk_seconds` in the semconv profile and
/// `vllm:time_to_first_token_seconds` in the vLLM profile.
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
    /// Tokens in one engine step (vLLM's `iteration_tokens_total`).
    StepTokens,
}

impl Metric {
    /// Every metric, in a fixed order.
    pub const ALL: [Metric; 13] = [
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
        Metric::StepTokens,
    ];

    /// `ttft`, `itl`, `tpot`, `e2e`, `queue`, `prefill`, `decode`, `inference`,
    /// `input_tokens`, `output_tokens`, `step_duration`, `batch_size` or `step_tokens`.
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
            Metric::StepTokens => "step_tokens",
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The default context length for vLLM's 1-2-5 token buckets.
pub const DEFAULT_CONTEXT_LENGTH: u64 = 131_072;

/// Bucket settings for every histogram: the defaults of `../shared/METRICS.md`, replaced or
/// extended per [`Metric`].
///
/// Add an SLO threshold as an edge with [`Buckets::add_edges`], so that
/// `rate(x_bucket{le="<threshold>"}[w]) / rate(x_count[w])` is the exact fraction of requests at
/// or under the threshold (buckets count `value <= le`).
///
/// # Examples
///
/// ```
/// use tokenmeter_prometheus::{Buckets, Metric, Profile};
///
/// let mut buckets = Buckets::new();
/// buckets.add_edges(Metric::Ttft, &[0.35])?; // "TTFT <= 350 ms" is an SLO
/// let edges = buckets.edges(Profile::Semconv, "gen_ai_server_time_to_first_token_seconds").unwrap();
/// assert!(edges.contains(&0.35) && edges.contains(&0.25) && edges.contains(&0.5));
///
/// buckets.set(Metric::Itl, &[0.05, 0.01])?; // replace a layout (sorted for you)
/// assert_eq!(buckets.edges(Profile::Vllm, "vllm:inter_token_latency_seconds").unwrap(), [0.01, 0.05]);
/// # Ok::<(), tokenmeter_prometheus::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Buckets {
    replaced: BTreeMap<Metric, Vec<f64>>,
    extra: BTreeMap<Metric, Vec<f64>>,
    context_length: Option<u64>,
}

impl Buckets {
    /// The default layouts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the default layout of `metric` with `edges` (any order; duplicates removed).
    /// Edges added with [`Buckets::add_edges`] are kept.
    pub fn set(&mut self, metric: Metric, edges: &[f64]) -> Result<&mut Self, Error> {
        let edges = validate(metric, edges)?;
        if edges.is_empty() {
            return Err(Error::EmptyBuckets { metric });
        }
        self.replaced.insert(metric, edges);
        Ok(self)
    }

    /// Adds `edges` to the layout of `metric` (default or replaced): the SLO thresholds.
    pub fn add_edges(&mut self, metric: Metric, edges: &[f64]) -> Result<&mut Self, Error> {
        let edges = validate(metric, edges)?;
        self.extra.entry(metric).or_default().extend(edges);
        Ok(self)
    }

    /// The model's context length: the top of vLLM's 1-2-5 token-count layouts (default
    /// [`DEFAULT_CONTEXT_LENGTH`]).
    pub fn context_length(&mut self, tokens: u64) -> Result<&mut Self, Error> {
        if tokens == 0 {
            return Err(Error::ZeroContextLength);
        }
        self.context_length = Some(tokens);
        Ok(self)
    }

    /// The sorted edges of the histogram named `name` (its Prometheus name) in `profile`, or
    /// `None` if the profile has no such histogram.
    pub fn edges(&self, profile: Profile, name: &str) -> Option<Vec<f64>> {
        let histogram = profile
            .histograms()
            .iter()
            .find(|h| h.name.prometheus == name)?;
        let context = self.context_length.unwrap_or(DEFAULT_CONTEXT_LENGTH);
        let mut edges = Vec::new();
        for concept in histogram.concepts {
            match self.replaced.get(concept) {
                Some(replaced) => edges.extend_from_slice(replaced),
                None => edges.extend(histogram.default.edges(context)),
            }
            if let Some(extra) = self.extra.get(concept) {
                edges.extend_from_slice(extra);
            }
        }
        edges.sort_by(f64::total_cmp);
        edges.dedup();
        Some(edges)
    }

    /// Every histogram of `profile` with its edges: what to give a `metrics` recorder.
    pub fn layout(&self, profile: Profile) -> Vec<(&'static str, Vec<f64>)> {
        profile
            .histograms()
            .iter()
            .filter_map(|h| Some((h.name.prometheus, self.edges(profile, h.name.prometheus)?)))
            .collect()
    }

    /// Sets the buckets of every histogram of `profile` on a `metrics-exporter-prometheus`
    /// builder, by full name, so none of them is rendered as a summary.
    ///
    /// # Examples
    ///
    /// ```
    /// use metrics_exporter_prometheus::PrometheusBuilder;
    /// use tokenmeter_prometheus::{Buckets, Profile};
    ///
    /// let builder = Buckets::new().apply(Profile::Vllm, PrometheusBuilder::new());
    /// let recorder = builder.build_recorder();
    /// # drop(recorder);
    /// ```
    pub fn apply(&self, profile: Profile, mut builder: PrometheusBuilder) -> PrometheusBuilder {
        for (name, edges) in self.layout(profile) {
            if edges.is_empty() {
                continue; // cannot happen: defaults have edges and `set` refuses empty ones
            }
            builder = builder
                .set_buckets_for_metric(Matcher::Full(name.to_owned()), &edges)
                .expect("the only error is an empty layout, which was skipped");
        }
        builder
    }
}

fn validate(metric: Metric, edges: &[f64]) -> Result<Vec<f64>, Error> {
    if let Some(&value) = edges.iter().find(|v| !v.is_finite() || **v < 0.0) {
        return Err(Error::InvalidEdge { metric, value });
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
    fn defaults_match_the_metrics_reference() {
        let b = Buckets::new();
        let duration = b
            .edges(Profile::Semconv, "gen_ai_server_request_duration_seconds")
            .unwrap();
        assert_eq!(
            (duration[0], duration[13], duration.len()),
            (0.01, 81.92, 14)
        );
        for (i, pair) in duration.windows(2).enumerate() {
            assert!((pair[1] / pair[0] - 2.0).abs() < 1e-12, "doubling at {i}");
        }
        let tokens = b
            .edges(Profile::Semconv, "gen_ai_client_token_usage")
            .unwrap();
        assert_eq!(tokens.len(), 14);
        assert!(tokens.windows(2).all(|p| p[1] == p[0] * 4.0));
        let vllm_e2e = b
            .edges(Profile::Vllm, "vllm:e2e_request_latency_seconds")
            .unwrap();
        assert_eq!((vllm_e2e.len(), vllm_e2e[20]), (21, 7680.0));
        assert_eq!(
            b.edges(Profile::Semconv, "vllm:e2e_request_latency_seconds"),
            None
        );
    }

    #[test]
    fn engine_step_layouts_are_the_documented_ones() {
        let b = Buckets::new();
        for profile in [Profile::Semconv, Profile::Vllm] {
            let step = b
                .edges(profile, "tokenmeter_engine_step_duration_seconds")
                .unwrap();
            assert_eq!((step[0], step.len()), (0.001, 14));
            assert!(step.windows(2).all(|p| p[1] == p[0] * 2.0), "{step:?}");
            assert!(step.contains(&0.008) && *step.last().unwrap() > 8.0);
            let batch = b.edges(profile, "tokenmeter_engine_batch_size").unwrap();
            assert_eq!(batch.len(), 11);
            assert!(
                batch
                    .iter()
                    .enumerate()
                    .all(|(i, e)| *e == (1u32 << i) as f64)
            );
        }
        let vllm = b
            .edges(Profile::Vllm, "vllm:iteration_tokens_total")
            .unwrap();
        assert_eq!((vllm[0], vllm[1], vllm.len()), (1.0, 8.0, 13));
        assert_eq!(vllm.last(), Some(&16384.0));
        assert_eq!(
            b.edges(Profile::Semconv, "vllm:iteration_tokens_total"),
            None
        );

        let mut b = Buckets::new();
        b.add_edges(Metric::StepDuration, &[0.015]).unwrap();
        b.set(Metric::BatchSize, &[48.0, 1.0]).unwrap();
        let step = b
            .edges(Profile::Vllm, "tokenmeter_engine_step_duration_seconds")
            .unwrap();
        assert!(step.contains(&0.015) && step.contains(&0.016));
        assert_eq!(
            b.edges(Profile::Semconv, "tokenmeter_engine_batch_size")
                .unwrap(),
            [1.0, 48.0]
        );
    }

    #[test]
    fn extra_edges_survive_a_replaced_layout_and_merge_across_concepts() {
        let mut b = Buckets::new();
        b.add_edges(Metric::InputTokens, &[3000.0]).unwrap();
        b.add_edges(Metric::OutputTokens, &[400.0]).unwrap();
        let usage = b
            .edges(Profile::Semconv, "gen_ai_client_token_usage")
            .unwrap();
        assert!(usage.contains(&3000.0) && usage.contains(&400.0) && usage.contains(&1.0));

        b.add_edges(Metric::Ttft, &[0.35]).unwrap();
        b.set(Metric::Ttft, &[2.0, 1.0, 1.0]).unwrap();
        let ttft = b
            .edges(Profile::Vllm, "vllm:time_to_first_token_seconds")
            .unwrap();
        assert_eq!(ttft, [0.35, 1.0, 2.0]);
    }

    #[test]
    fn invalid_edges_are_refused_with_a_fix() {
        let mut b = Buckets::new();
        let err = b.add_edges(Metric::Ttft, &[0.5, f64::NAN]).unwrap_err();
        assert!(err.to_string().contains("finite"), "{err}");
        assert!(b.add_edges(Metric::Ttft, &[-1.0]).is_err());
        let err = b.set(Metric::E2e, &[]).unwrap_err();
        assert!(matches!(
            err,
            Error::EmptyBuckets {
                metric: Metric::E2e
            }
        ));
        assert!(b.context_length(0).is_err());
        assert_eq!(b, Buckets::new(), "a refused change changes nothing");
    }
}
