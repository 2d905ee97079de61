//! The engine group of a rules file: the speculative-decoding acceptance rate and the
//! prefix-cache hit rate as recording rules, and, for dashboards that read vLLM's counters
//! without their `_total` suffix, those names as recorded copies.

use super::yaml::Rule;

/// The engine counters the rules read, which depend on the exporter's naming profile.
///
/// # Examples
///
/// ```
/// use tokenmeter_slo::rules::EngineMetrics;
///
/// let vllm = EngineMetrics::vllm();
/// assert_eq!(vllm.accepted_tokens, "vllm:spec_decode_num_accepted_tokens_total");
/// assert!(vllm.unsuffixed.contains(&"vllm:prefix_cache_hits_total".to_owned()));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EngineMetrics {
    /// Draft tokens accepted (a counter).
    pub accepted_tokens: String,
    /// Draft tokens proposed (a counter).
    pub draft_tokens: String,
    /// Prompt tokens found in the prefix cache (a counter).
    pub prefix_hits: String,
    /// Prompt tokens looked up in the prefix cache (a counter).
    pub prefix_queries: String,
    /// The labels the ratios keep (`model_name` for vLLM; the provider and model for semconv).
    pub by: Vec<String>,
    /// Counters also recorded under their name without `_total`, for dashboards that query
    /// that name (vLLM's own Kubernetes example reads `vllm:prefix_cache_hits` and
    /// `vllm:num_preemptions`, which no exposition has).
    pub unsuffixed: Vec<String>,
}

impl EngineMetrics {
    /// The semconv profile's counters (`tokenmeter_spec_decode_*`, `tokenmeter_prefix_cache_*`).
    pub fn semconv() -> Self {
        Self {
            accepted_tokens: "tokenmeter_spec_decode_accepted_tokens_total".into(),
            draft_tokens: "tokenmeter_spec_decode_draft_tokens_total".into(),
            prefix_hits: "tokenmeter_prefix_cache_hits_total".into(),
            prefix_queries: "tokenmeter_prefix_cache_queries_total".into(),
            by: vec!["gen_ai_provider_name".into(), "gen_ai_request_model".into()],
            unsuffixed: Vec::new(),
        }
    }

    /// vLLM's counters, and its counters dashboards read without `_total`.
    pub fn vllm() -> Self {
        let unsuffixed = [
            "vllm:prefix_cache_hits_total",
            "vllm:prefix_cache_queries_total",
            "vllm:num_preemptions_total",
            "vllm:request_success_total",
            "vllm:prompt_tokens_total",
            "vllm:generation_tokens_total",
        ];
        Self {
            accepted_tokens: "vllm:spec_decode_num_accepted_tokens_total".into(),
            draft_tokens: "vllm:spec_decode_num_draft_tokens_total".into(),
            prefix_hits: "vllm:prefix_cache_hits_total".into(),
            prefix_queries: "vllm:prefix_cache_queries_total".into(),
            by: vec!["model_name".into()],
            unsuffixed: unsuffixed.into_iter().map(String::from).collect(),
        }
    }
}

/// The recording rules of the engine group.
pub(super) fn rules(metrics: &EngineMetrics) -> Vec<Rule> {
    let by = metrics.by.join(", ");
    let ratio = |num: &str, den: &str| {
        format!("sum by ({by}) (rate({num}[5m])) / sum by ({by}) (rate({den}[5m])) > -1")
    };
    let mut rules = vec![
        Rule::record(
            "tokenmeter:spec_decode_acceptance:ratio_rate5m",
            ratio(&metrics.accepted_tokens, &metrics.draft_tokens),
            Vec::new(),
        ),
        Rule::record(
            "tokenmeter:prefix_cache_hit:ratio_rate5m",
            ratio(&metrics.prefix_hits, &metrics.prefix_queries),
            Vec::new(),
        ),
    ];
    for name in &metrics.unsuffixed {
        if let Some(short) = name.strip_suffix("_total") {
            rules.push(Rule::record(short, name.clone(), Vec::new()));
        }
    }
    rules
}
