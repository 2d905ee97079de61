//! Bucket layouts per profile: the defaults of the table's rows ([`tokenmeter::conventions`])
//! and of vLLM (`docs/src/reference/metrics.md` §4), with the settings of the one [`Buckets`] type both
//! exporters take (per-metric replacement, extra edges for SLO thresholds), so that
//! `rate(x_bucket{le="<threshold>"}) / rate(x_count)` is exact.

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use tokenmeter::conventions::Conventions;
pub use tokenmeter::conventions::{Buckets, DEFAULT_CONTEXT_LENGTH, Metric};

use crate::profile::Profile;

impl Profile {
    /// The sorted edges of the histogram named `name` (its Prometheus name) in this profile
    /// with `buckets`' settings, or `None` if the profile has no such histogram.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter_prometheus::{Buckets, Metric, Profile};
    ///
    /// let mut buckets = Buckets::new();
    /// buckets.add_edges(Metric::Ttft, &[0.35])?; // "TTFT <= 350 ms" is an SLO
    /// let edges = Profile::Semconv.edges(&buckets, "gen_ai_server_time_to_first_token_seconds").unwrap();
    /// assert!(edges.contains(&0.35) && edges.contains(&0.25) && edges.contains(&0.5));
    ///
    /// buckets.set(Metric::Itl, &[0.05, 0.01])?; // replace a layout (sorted for you)
    /// assert_eq!(Profile::Vllm.edges(&buckets, "vllm:inter_token_latency_seconds").unwrap(), [0.01, 0.05]);
    /// # Ok::<(), tokenmeter_prometheus::Error>(())
    /// ```
    pub fn edges(self, buckets: &Buckets, name: &str) -> Option<Vec<f64>> {
        self.layout(buckets, &Conventions::default())
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, edges)| edges)
    }

    /// Every histogram of `table` in this profile with its edges: what to give a `metrics`
    /// recorder.
    pub fn layout(self, buckets: &Buckets, table: &Conventions) -> Vec<(String, Vec<f64>)> {
        let context = buckets.context_length_tokens();
        self.histograms(table)
            .into_iter()
            .map(|(name, metrics, layout)| {
                let edges = buckets.edges_for(&metrics, &layout.edges(context));
                (name, edges)
            })
            .collect()
    }

    /// Sets the buckets of every histogram of `table` in this profile on a
    /// `metrics-exporter-prometheus` builder, by full name, so none of them is rendered as a
    /// summary.
    ///
    /// # Examples
    ///
    /// ```
    /// use metrics_exporter_prometheus::PrometheusBuilder;
    /// use tokenmeter::conventions::Conventions;
    /// use tokenmeter_prometheus::{Buckets, Profile};
    ///
    /// let builder = Profile::Vllm.apply(&Buckets::new(), &Conventions::default(), PrometheusBuilder::new());
    /// let recorder = builder.build_recorder();
    /// # drop(recorder);
    /// ```
    pub fn apply(
        self,
        buckets: &Buckets,
        table: &Conventions,
        mut builder: PrometheusBuilder,
    ) -> PrometheusBuilder {
        for (name, edges) in self.layout(buckets, table) {
            if edges.is_empty() {
                continue; // cannot happen: rows have edges and `set` refuses empty ones
            }
            builder = match builder.set_buckets_for_metric(Matcher::Full(name), &edges) {
                Ok(builder) => builder,
                Err(_) => unreachable!("the only error is an empty layout, which was skipped"),
            };
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
        let duration = Profile::Semconv
            .edges(&b, "gen_ai_server_request_duration_seconds")
            .unwrap();
        assert_eq!(
            (duration[0], duration[13], duration.len()),
            (0.01, 81.92, 14)
        );
        for (i, pair) in duration.windows(2).enumerate() {
            assert!((pair[1] / pair[0] - 2.0).abs() < 1e-12, "doubling at {i}");
        }
        let tokens = Profile::Semconv
            .edges(&b, "gen_ai_client_token_usage")
            .unwrap();
        assert_eq!(tokens.len(), 14);
        assert!(tokens.windows(2).all(|p| p[1] == p[0] * 4.0));
        let vllm_e2e = Profile::Vllm
            .edges(&b, "vllm:e2e_request_latency_seconds")
            .unwrap();
        assert_eq!((vllm_e2e.len(), vllm_e2e[20]), (21, 7680.0));
        assert_eq!(
            Profile::Semconv.edges(&b, "vllm:e2e_request_latency_seconds"),
            None
        );
    }

    #[test]
    fn semconv_layouts_are_those_of_the_conventions_under_the_translated_names() {
        let table = Conventions::default();
        let mut b = Buckets::new();
        for round in 0..2 {
            let layout = Profile::Semconv.layout(&b, &table);
            let histograms: Vec<_> = table
                .instruments()
                .into_iter()
                .filter(|i| i.kind == tokenmeter::conventions::InstrumentKind::Histogram)
                .collect();
            assert_eq!(layout.len(), histograms.len());
            for (instrument, (name, edges)) in histograms.iter().zip(&layout) {
                assert_eq!(*name, instrument.prometheus_name(), "round {round}");
                assert_eq!(Some(edges), b.edges(instrument.name).as_ref());
            }
            b.add_edges(Metric::Ttft, &[0.35]).unwrap();
            b.set(Metric::OutputTokens, &[7.0]).unwrap();
        }
    }

    #[test]
    fn engine_step_layouts_are_the_documented_ones() {
        let b = Buckets::new();
        for profile in [Profile::Semconv, Profile::Vllm] {
            let step = profile
                .edges(&b, "tokenmeter_engine_step_duration_seconds")
                .unwrap();
            assert_eq!((step[0], step.len()), (0.001, 14));
            assert!(step.windows(2).all(|p| p[1] == p[0] * 2.0), "{step:?}");
            assert!(step.contains(&0.008) && *step.last().unwrap() > 8.0);
            let batch = profile.edges(&b, "tokenmeter_engine_batch_size").unwrap();
            assert_eq!(batch.len(), 11);
            assert!(
                batch
                    .iter()
                    .enumerate()
                    .all(|(i, e)| *e == (1u32 << i) as f64)
            );
        }
        let vllm = Profile::Vllm
            .edges(&b, "vllm:iteration_tokens_total")
            .unwrap();
        assert_eq!((vllm[0], vllm[1], vllm.len()), (1.0, 8.0, 13));
        assert_eq!(vllm.last(), Some(&16384.0));
        assert_eq!(
            Profile::Semconv.edges(&b, "vllm:iteration_tokens_total"),
            None
        );

        let mut b = Buckets::new();
        b.add_edges(Metric::StepDuration, &[0.015]).unwrap();
        b.set(Metric::BatchSize, &[48.0, 1.0]).unwrap();
        let step = Profile::Vllm
            .edges(&b, "tokenmeter_engine_step_duration_seconds")
            .unwrap();
        assert!(step.contains(&0.015) && step.contains(&0.016));
        assert_eq!(
            Profile::Semconv
                .edges(&b, "tokenmeter_engine_batch_size")
                .unwrap(),
            [1.0, 48.0]
        );
    }

    #[test]
    fn extra_edges_survive_a_replaced_layout_and_merge_across_concepts() {
        let mut b = Buckets::new();
        b.add_edges(Metric::InputTokens, &[3000.0]).unwrap();
        b.add_edges(Metric::OutputTokens, &[400.0]).unwrap();
        let usage = Profile::Semconv
            .edges(&b, "gen_ai_client_token_usage")
            .unwrap();
        assert!(usage.contains(&3000.0) && usage.contains(&400.0) && usage.contains(&1.0));

        b.add_edges(Metric::Ttft, &[0.35]).unwrap();
        b.set(Metric::Ttft, &[2.0, 1.0, 1.0]).unwrap();
        let ttft = Profile::Vllm
            .edges(&b, "vllm:time_to_first_token_seconds")
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
            tokenmeter::conventions::BucketError::EmptyBuckets {
                metric: Metric::E2e
            }
        ));
        assert!(b.context_length(0).is_err());
        assert_eq!(b, Buckets::new(), "a refused change changes nothing");
    }
}
