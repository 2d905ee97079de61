//! The default bucket edges of the histograms in [`names`](super::names); each
//! [`Row`](super::Row) names the layout and the [`Metric`](super::Metric) settings it follows.

/// Semconv bucket advice for `gen_ai.server.time_to_first_token` (`docs/src/reference/metrics.md` §4).
pub const TTFT_EDGES: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// Semconv bucket advice for `gen_ai.server.time_per_output_token` (`docs/src/reference/metrics.md` §4), also
/// used for `tokenmeter.inter_token_latency` and `tokenmeter.time_per_output_token`.
pub const TPOT_EDGES: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
];
/// Semconv bucket advice for durations: 0.01 doubling to 81.92 (`docs/src/reference/metrics.md` §4, for
/// `gen_ai.server.request.duration` and the `gen_ai.client.operation.*` histograms), also used
/// for the `tokenmeter.request.*` phases.
pub const DURATION_EDGES: &[f64] = &[
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// Semconv bucket advice for `gen_ai.client.token.usage`: 1, ×4, … 67108864
/// (`docs/src/reference/metrics.md` §4).
pub const TOKEN_EDGES: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
/// The `n` (choices) parameter: vLLM's `request_params_n` edges.
pub const CHOICE_EDGES: &[f64] = &[1.0, 2.0, 5.0, 10.0, 20.0];
/// Engine step durations: 1 ms doubling to 8.192 s (tokenmeter's own, `docs/src/reference/metrics.md` §4).
/// A decode step takes milliseconds to tens of milliseconds, a long prefill seconds; doubling
/// keeps the relative error of a quantile under a factor of 2 across that range with 14 buckets.
pub const STEP_DURATION_EDGES: &[f64] = &[
    0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096,
    8.192,
];
/// Sequences per engine step: powers of two from 1 to 1024, as engines batch (tokenmeter's
/// own, `docs/src/reference/metrics.md` §4).
pub const BATCH_SIZE_EDGES: &[f64] = &[
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_metrics_reference() {
        assert_eq!((TTFT_EDGES.len(), TPOT_EDGES.len()), (16, 13));
        let doubling = |edges: &[f64]| edges.windows(2).all(|p| (p[1] / p[0] - 2.0).abs() < 1e-12);
        assert!(
            doubling(DURATION_EDGES) && doubling(STEP_DURATION_EDGES) && doubling(BATCH_SIZE_EDGES)
        );
        assert_eq!(
            (DURATION_EDGES[0], DURATION_EDGES.last()),
            (0.01, Some(&81.92))
        );
        assert!(TOKEN_EDGES.windows(2).all(|p| p[1] == p[0] * 4.0));
        assert_eq!(TOKEN_EDGES.last(), Some(&67108864.0));
        assert_eq!(
            (STEP_DURATION_EDGES[0], STEP_DURATION_EDGES.len()),
            (0.001, 14)
        );
        assert_eq!(
            (BATCH_SIZE_EDGES[0], BATCH_SIZE_EDGES.last()),
            (1.0, Some(&1024.0))
        );
    }
}
