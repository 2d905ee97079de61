//! [`Metric`]: what a histogram measures, independent of its name, so that one bucket setting
//! applies to every histogram of that meaning.

use std::fmt;

/// What a histogram measures, independent of role and naming profile. Bucket settings
/// ([`Buckets`](super::Buckets)) are given per `Metric` and apply to every histogram of that
/// meaning: [`Metric::Ttft`] is `gen_ai.server.time_to_first_token` and
/// `gen_ai.client.operation.time_to_first_chunk` (and vLLM's
/// `vllm:time_to_first_token_seconds` in the Prometheus exporter).
///
/// # Examples
///
/// ```
/// use tokenmeter::conventions::Metric;
///
/// assert_eq!(Metric::Ttft.to_string(), "ttft");
/// assert_eq!(Metric::ALL.len(), 13);
/// ```
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
    /// Tokens in one engine step, as a histogram: only vLLM's `iteration_tokens_total` (the
    /// Prometheus exporter's vLLM profile). The instruments of [`names`](super::names) count
    /// step tokens with a counter, so no histogram there takes this setting.
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
