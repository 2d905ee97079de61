//! [`EngineGauges`]: what an inference engine reports about itself.

use metrics::{Counter, Gauge};
use tokenmeter::Labels;

use super::labels;
use super::target::Target;
use crate::names::{semconv, vllm};
use crate::profile::Profile;

/// Setters for engine-level metrics: KV-cache usage and preemptions. Get one with
/// [`PrometheusSink::engine`](crate::PrometheusSink::engine) and keep it; setting is one atomic
/// store.
///
/// | Setter | semconv profile | vLLM profile |
/// |---|---|---|
/// | [`set_kv_cache_usage`](Self::set_kv_cache_usage) | `tokenmeter_kv_cache_usage_ratio` | `vllm:kv_cache_usage_perc` |
/// | [`add_preemptions`](Self::add_preemptions) | `tokenmeter_preemptions_total` | `vllm:num_preemptions_total` |
#[derive(Clone, Debug)]
pub struct EngineGauges {
    kv_cache_usage: Gauge,
    preemptions: Counter,
}

impl EngineGauges {
    pub(crate) fn new(profile: Profile, target: &Target, series: &Labels<'_>) -> Self {
        let (labels, kv, preempt) = match profile {
            Profile::Semconv => (
                labels::semconv(series, false),
                semconv::KV_CACHE_USAGE.prometheus,
                semconv::PREEMPTIONS.prometheus,
            ),
            Profile::Vllm => (
                labels::vllm(series),
                vllm::KV_CACHE_USAGE.prometheus,
                vllm::NUM_PREEMPTIONS.prometheus,
            ),
        };
        Self {
            kv_cache_usage: target.gauge(kv, labels.clone()),
            preemptions: target.counter(preempt, labels),
        }
    }

    /// Sets the KV-cache usage, a fraction from 0 (empty) to 1 (full). Values outside are
    /// clamped; NaN is ignored.
    pub fn set_kv_cache_usage(&self, fraction: f64) {
        if !fraction.is_nan() {
            self.kv_cache_usage.set(fraction.clamp(0.0, 1.0));
        }
    }

    /// Counts `count` more preempted requests.
    pub fn add_preemptions(&self, count: u64) {
        self.preemptions.increment(count);
    }
}
