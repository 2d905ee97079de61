//! The default bucket layouts of `../shared/METRICS.md`, by name: what a histogram gets unless
//! [`Buckets`](crate::Buckets) replaces it.

/// The default bucket layouts, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    SemconvTtft,
    SemconvTpot,
    SemconvDuration,
    SemconvTokens,
    VllmTtft,
    VllmItl,
    VllmRequest,
    VllmTokens,
    StepDuration,
    BatchSize,
    VllmIterationTokens,
}

const SEMCONV_TTFT: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
const SEMCONV_TPOT: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
];
const SEMCONV_DURATION: &[f64] = &[
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
const SEMCONV_TOKENS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
const VLLM_TTFT: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
const VLLM_ITL: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
const VLLM_REQUEST: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];
/// Engine step durations: 1 ms doubling to 8.192 s. A decode step takes milliseconds to tens of
/// milliseconds, a long prefill seconds; doubling keeps the relative error of a quantile under
/// a factor of 2 across that range with 14 buckets.
const STEP_DURATION: &[f64] = &[
    0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096,
    8.192,
];
/// Sequences per step: powers of two from 1 to 1024 (engines batch in powers of two).
const BATCH_SIZE: &[f64] = &[
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];
/// vLLM's `iteration_tokens_total` buckets (`vllm/v1/metrics/loggers.py`). Older vLLM releases
/// used the CUDA-graph capture sizes of the running model instead; these are the fixed ones of
/// current vLLM.
const VLLM_ITERATION_TOKENS: &[f64] = &[
    1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0,
];

impl Layout {
    pub(crate) fn edges(self, context_length: u64) -> Vec<f64> {
        match self {
            Layout::SemconvTtft => SEMCONV_TTFT.to_vec(),
            Layout::SemconvTpot => SEMCONV_TPOT.to_vec(),
            Layout::SemconvDuration => SEMCONV_DURATION.to_vec(),
            Layout::SemconvTokens => SEMCONV_TOKENS.to_vec(),
            Layout::VllmTtft => VLLM_TTFT.to_vec(),
            Layout::VllmItl => VLLM_ITL.to_vec(),
            Layout::VllmRequest => VLLM_REQUEST.to_vec(),
            Layout::VllmTokens => one_two_five(context_length),
            Layout::StepDuration => STEP_DURATION.to_vec(),
            Layout::BatchSize => BATCH_SIZE.to_vec(),
            Layout::VllmIterationTokens => VLLM_ITERATION_TOKENS.to_vec(),
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
    use crate::buckets::DEFAULT_CONTEXT_LENGTH;

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
