//! [`EngineRecorder`]'s model-server-protocol methods: the KV-cache configuration, the LoRA
//! adapters (bounded in `engine_info.rs`), the waiting requests by reason and
//! the admission rejections, handed to every engine sink.

use std::time::{SystemTime, UNIX_EPOCH};

use super::engine_info::{AdmissionReason, CacheConfig, LoraInfo, WaitingReason};
use super::step::EngineRecorder;

impl EngineRecorder {
    /// Publishes the engine's KV-cache configuration (an info gauge, value 1). Call it once at
    /// start-up: the first call is kept and later ones are ignored, so the configuration is
    /// one series.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::sink::CacheConfig;
    /// use tokenmeter::{Labels, Meter};
    ///
    /// let meter = Meter::builder().build();
    /// let engine = meter.engine(&Labels::server("").request_model("llama-3-8b"));
    /// engine.set_cache_config(CacheConfig::new(16, 25_000));
    /// ```
    pub fn set_cache_config(&self, config: CacheConfig) {
        if self
            .cache_config_set
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return;
        }
        for handle in self.handles.iter() {
            super::guarded(|| handle.cache_config(&config));
        }
    }

    /// Publishes the LoRA adapters running and waiting, bounded as the [module](crate::sink)
    /// docs say ([`MAX_LORA_ADAPTERS`](crate::sink::MAX_LORA_ADAPTERS),
    /// [`MAX_LORA_NAME_BYTES`](crate::sink::MAX_LORA_NAME_BYTES),
    /// [`MAX_LORA_COMBINATIONS`](crate::sink::MAX_LORA_COMBINATIONS)). Sinks hear of it only
    /// when the bounded lists change; the value is then the current Unix time. Call it as often
    /// as the adapters may change (once per engine step is fine).
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::{Labels, Meter};
    ///
    /// let meter = Meter::builder().build();
    /// let engine = meter.engine(&Labels::server("").request_model("llama-3-8b"));
    /// engine.set_lora_adapters(4, ["sql-lora", "chat-lora"], ["summarise-lora"]);
    /// ```
    pub fn set_lora_adapters<'a>(
        &self,
        max_lora: u32,
        running: impl IntoIterator<Item = &'a str>,
        waiting: impl IntoIterator<Item = &'a str>,
    ) {
        let Some((max_lora, running, waiting)) = self.lora.update(max_lora, running, waiting)
        else {
            return;
        };
        let changed_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let info = LoraInfo {
            max_lora,
            running: &running,
            waiting: &waiting,
            changed_at,
        };
        for handle in self.handles.iter() {
            super::guarded(|| handle.lora_adapters(&info));
        }
    }

    /// Sets how many requests wait in the engine's queue for `reason` (the total stays the
    /// core's `waiting` gauge, kept from the requests' lifecycle).
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::sink::WaitingReason;
    /// use tokenmeter::{Labels, Meter};
    ///
    /// let meter = Meter::builder().build();
    /// let engine = meter.engine(&Labels::server("").request_model("llama-3-8b"));
    /// engine.set_waiting_by_reason(WaitingReason::Capacity, 3);
    /// engine.set_waiting_by_reason(WaitingReason::Deferred, 0);
    /// ```
    pub fn set_waiting_by_reason(&self, reason: WaitingReason, count: u64) {
        for handle in self.handles.iter() {
            super::guarded(|| handle.waiting_by_reason(reason, count));
        }
    }

    /// Counts `count` more requests the engine refused to admit for `reason`.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::sink::AdmissionReason;
    /// use tokenmeter::{Labels, Meter};
    ///
    /// let meter = Meter::builder().build();
    /// let engine = meter.engine(&Labels::server("").request_model("llama-3-8b"));
    /// engine.add_admission_rejections(AdmissionReason::QueueFull, 1);
    /// ```
    pub fn add_admission_rejections(&self, reason: AdmissionReason, count: u64) {
        for handle in self.handles.iter() {
            super::guarded(|| handle.admission_rejections(reason, count));
        }
    }
}
