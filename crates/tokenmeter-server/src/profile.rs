//! [`MetricsProfile`]: the names `/metrics` publishes under.

/// The naming profile of `GET /metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MetricsProfile {
    /// OpenTelemetry GenAI semantic conventions (`gen_ai_*`).
    #[default]
    Semconv,
    /// vLLM's names (`vllm:*`), for existing vLLM dashboards.
    Vllm,
    /// vLLM's names plus the names vLLM used before 0.11 (`vllm:time_per_output_token_seconds`,
    /// `vllm:gpu_cache_usage_perc`, …), for dashboards written before the renames.
    VllmLegacy,
}
