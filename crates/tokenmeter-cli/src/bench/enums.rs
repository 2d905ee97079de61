//! The possible values of `tokenmeter bench`'s enum flags: mirrors of the library's enums,
//! with the help texts `--help` lists, each mapped onto the library's by `From`.

/// From when a request's TTFT and E2E are judged against the objectives (`--slo-from`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum JudgedFrom {
    /// From when the request was due (its arrival in an open loop): what its user felt,
    /// the time it waited in the client for a slot included.
    Schedule,
    /// From when it was sent, as `vllm bench serve` judges goodput.
    Send,
}

impl From<JudgedFrom> for tokenmeter_bench::JudgedFrom {
    fn from(value: JudgedFrom) -> Self {
        match value {
            JudgedFrom::Schedule => Self::Schedule,
            JudgedFrom::Send => Self::Send,
        }
    }
}

/// What `--json` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ResultFormat {
    /// tokenmeter's own summary, with the `run` block.
    Tokenmeter,
    /// The keys `vllm bench serve --save-result` writes (single runs).
    Vllm,
}

impl From<ResultFormat> for tokenmeter_bench::ResultFormat {
    fn from(value: ResultFormat) -> Self {
        match value {
            ResultFormat::Tokenmeter => Self::Tokenmeter,
            ResultFormat::Vllm => Self::Vllm,
        }
    }
}

/// A metric of `--percentile-metrics`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PercentileMetric {
    /// Time to first token.
    Ttft,
    /// Time per output token.
    Tpot,
    /// Inter-token latency.
    Itl,
    /// End-to-end latency (to the last token).
    E2el,
    /// Client queue time: send − due, over every request sent (vLLM 0.33).
    ClientQueueTime,
    /// E2E from the schedule: client queue time + E2E, over every request sent, a failed
    /// one's E2E 0 (vLLM 0.33's `e2el_including_client_queue`).
    E2elIncludingClientQueue,
}

impl From<PercentileMetric> for tokenmeter_bench::PercentileMetric {
    fn from(value: PercentileMetric) -> Self {
        match value {
            PercentileMetric::Ttft => Self::Ttft,
            PercentileMetric::Tpot => Self::Tpot,
            PercentileMetric::Itl => Self::Itl,
            PercentileMetric::E2el => Self::E2el,
            PercentileMetric::ClientQueueTime => Self::ClientQueueTime,
            PercentileMetric::E2elIncludingClientQueue => Self::E2elIncludingClientQueue,
        }
    }
}

/// The field that carries the output length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MaxTokensField {
    /// `max_tokens` (most servers, vLLM).
    #[value(name = "max_tokens")]
    MaxTokens,
    /// `max_completion_tokens` (OpenAI's reasoning models reject `max_tokens`).
    #[value(name = "max_completion_tokens")]
    MaxCompletionTokens,
}

impl From<MaxTokensField> for tokenmeter_bench::MaxTokensField {
    fn from(value: MaxTokensField) -> Self {
        match value {
            MaxTokensField::MaxTokens => Self::MaxTokens,
            MaxTokensField::MaxCompletionTokens => Self::MaxCompletionTokens,
        }
    }
}

/// The format of a dataset file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DatasetFormat {
    /// From the content: a JSON array is ShareGPT, lines with `timestamp` and `input_length`
    /// a Mooncake trace, other lines JSONL.
    Auto,
    /// One JSON request per line.
    Jsonl,
    /// ShareGPT conversations.
    Sharegpt,
    /// A Mooncake trace.
    Mooncake,
}

impl From<DatasetFormat> for tokenmeter_bench::DatasetFormat {
    fn from(value: DatasetFormat) -> Self {
        match value {
            DatasetFormat::Auto => Self::Auto,
            DatasetFormat::Jsonl => Self::Jsonl,
            DatasetFormat::Sharegpt => Self::Sharegpt,
            DatasetFormat::Mooncake => Self::Mooncake,
        }
    }
}

/// How arrivals are spaced when a rate is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ArrivalKind {
    /// Random gaps with mean 1/rate: exponential (a Poisson process), or gamma with
    /// `--burstiness`.
    Poisson,
    /// Gaps of exactly 1/rate.
    Constant,
}

impl From<ArrivalKind> for tokenmeter_bench::ArrivalKind {
    fn from(value: ArrivalKind) -> Self {
        match value {
            ArrivalKind::Poisson => Self::Poisson,
            ArrivalKind::Constant => Self::Constant,
        }
    }
}

/// How the rate moves from its start to its end over a ramp.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Curve {
    /// `start + (end − start) · p`.
    Linear,
    /// `start · (end / start)^p`.
    Exponential,
}

impl From<Curve> for tokenmeter_bench::Curve {
    fn from(value: Curve) -> Self {
        match value {
            Curve::Linear => Self::Linear,
            Curve::Exponential => Self::Exponential,
        }
    }
}
