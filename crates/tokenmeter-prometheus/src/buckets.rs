//! Bucket layouts: the defaults of [`tokenmeter::conventions`] and of vLLM
//! (`docs/metrics.md` §4), per-metric replacement, and extra edges (SLO thresholds) so that
//! `rate(x_bucket{le="<threshold>"}) / rate(x_count)` is exact.

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use tokenmeter::conventions;
pub use tokenmeter::conventions::Metric;

use crate::error::Error;
pub(crate) use crate::layout::Layout;
use crate::profile::{Histogram, Profile};

/// The default context length for vLLM's 1-2-5 token buckets.
pub const DEFAULT_CONTEXT_LENGTH: u64 = 131_072;

/// Bucket settings for every histogram: the defaults of `docs/metrics.md` §4 (those of
/// [`tokenmeter::conventions`] for the semconv names, vLLM's for the vLLM profile), replaced
/// or extended per [`Metric`].
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
    settings: conventions::Buckets,
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
        self.settings.set(metric, edges)?;
        Ok(self)
    }

    /// Adds `edges` to the layout of `metric` (default or replaced): the SLO thresholds.
    pub fn add_edges(&mut self, metric: Metric, edges: &[f64]) -> Result<&mut Self, Error> {
        self.settings.add_edges(metric, edges)?;
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
        let histogram = profile.histograms().find(|h| h.name.prometheus == name)?;
        Some(self.edges_of(&histogram))
    }

    /// Every histogram of `profile` with its edges: what to give a `metrics` recorder.
    pub fn layout(&self, profile: Profile) -> Vec<(&'static str, Vec<f64>)> {
        profile
            .histograms()
            .map(|h| (h.name.prometheus, self.edges_of(&h)))
            .collect()
    }

    fn edges_of(&self, histogram: &Histogram) -> Vec<f64> {
        let context = self.context_length.unwrap_or(DEFAULT_CONTEXT_LENGTH);
        let default = histogram.default.edges(context);
        self.settings.edges_for(histogram.concepts, &default)
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
    fn semconv_layouts_are_those_of_the_conventions_under_the_translated_names() {
        let mut ours = Buckets::new();
        let mut conventions = conventions::Buckets::new();
        for round in 0..2 {
            let layout = ours.layout(Profile::Semconv);
            assert_eq!(layout.len(), conventions::HISTOGRAMS.len());
            for (h, (name, edges)) in conventions::HISTOGRAMS.iter().zip(&layout) {
                assert_eq!(*name, h.instrument.prometheus_name(), "round {round}");
                assert_eq!(Some(edges), conventions.edges(h.instrument.name).as_ref());
            }
            // The same settings on both, then again.
            ours.add_edges(Metric::Ttft, &[0.35]).unwrap();
            ours.set(Metric::OutputTokens, &[7.0]).unwrap();
            conventions.add_edges(Metric::Ttft, &[0.35]).unwrap();
            conventions.set(Metric::OutputTokens, &[7.0]).unwrap();
        }
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
