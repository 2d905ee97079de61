//! The default bucket layouts: what a histogram gets unless [`Buckets`](crate::Buckets) replaces
//! it. Those of the semconv names are in [`tokenmeter::conventions`]; vLLM's
//! (`docs/src/reference/metrics.md` §4) are here.

/// A default bucket layout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Layout {
    /// These edges.
    Fixed(&'static [f64]),
    /// vLLM's 1-2-5 series up to the model's context length.
    OneTwoFive,
}

/// `vllm:time_to_first_token_seconds` (`docs/src/reference/metrics.md` §4).
pub(crate) const VLLM_TTFT: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
/// `vllm:inter_token_latency_seconds` and `vllm:request_time_per_output_token_seconds`
/// (`docs/src/reference/metrics.md` §4).
pub(crate) const VLLM_ITL: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
/// vLLM's end-to-end latency and request phases (`docs/src/reference/metrics.md` §4).
pub(crate) const VLLM_REQUEST: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];
/// vLLM's `iteration_tokens_total` buckets (`vllm/v1/metrics/loggers.py`). Older vLLM releases
/// used the CUDA-graph capture sizes of the running model instead; these are the fixed ones of
/// current vLLM.
pub(crate) const VLLM_ITERATION_TOKENS: &[f64] = &[
    1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0,
];

impl Layout {
    pub(crate) fn edges(self, context_length: u64) -> Vec<f64> {
        match self {
            Layout::Fixed(edges) => edges.to_vec(),
            Layout::OneTwoFive => one_two_five(context_length),
        }
    }
}

/// vLLM's `build_1_2_5_buckets`: 1, 2, 5, 10, 20, 50, … up to `max` inclusive.
fn one_two_five(max: u64) -> Vec<f64> {
    let mut edges = Vec::new();
    let mut scale: u64 = 1;
    'outer: loop {
        for mantissa in [1u64, 2, 5] {
            match mantissa.checked_mul(scale) {
                Some(edge) if edge <= max => edges.push(edge as f64),
                _ => break 'outer,
            }
        }
        match scale.checked_mul(10) {
            Some(next) => scale = next,
            None => break,
        }
    }
    edges
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenmeter::conventions::DEFAULT_CONTEXT_LENGTH;

    #[test]
    fn one_two_five_stops_at_the_context_length() {
        assert_eq!(one_two_five(20), [1.0, 2.0, 5.0, 10.0, 20.0]);
        assert_eq!(one_two_five(49), [1.0, 2.0, 5.0, 10.0, 20.0]);
        assert_eq!(one_two_five(1), [1.0]);
        assert_eq!(one_two_five(u64::MAX).len(), 58);
        let default = one_two_five(DEFAULT_CONTEXT_LENGTH);
        assert_eq!(default.last(), Some(&100_000.0));
    }
}
