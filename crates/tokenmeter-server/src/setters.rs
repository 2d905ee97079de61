//! The setters of [`Config`]: one per field, named after it, each returning the config.

use std::path::PathBuf;
use std::time::Duration;

use tokenmeter_slo::SloSpec;

use crate::config::Config;
use crate::profile::MetricsProfile;

/// One `#[must_use]` setter per listed field.
macro_rules! setters {
    ($($field:ident: $ty:ty),* $(,)?) => {
        impl Config {
            $(
                #[doc = concat!("Sets [`", stringify!($field), "`](Config::", stringify!($field), ").")]
                #[must_use]
                pub fn $field(mut self, value: $ty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

setters! {
    served_model_name: Vec<String>,
    accept_any_model: bool,
    seed: u64,
    profile: MetricsProfile,
    default_max_tokens: u32,
    max_batch: usize,
    kv_capacity: u64,
    decode_table: Vec<(u32, Duration)>,
    prefill_base: Duration,
    prefill_per_token: Duration,
    error_rate: f64,
    queue_limit: usize,
    max_model_len: u64,
    header_timeout: Duration,
    body_timeout: Duration,
    keep_alive_timeout: Duration,
    send_timeout: Duration,
    max_body_size: usize,
    max_body_memory: usize,
    max_answer_size: usize,
    max_answer_memory: usize,
    max_connections: usize,
    shutdown_grace: Duration,
    stall_rate: f64,
    stall: Duration,
    stall_limit: Duration,
    send_buffer: u32,
    reasoning_tokens: u32,
    enable_per_request_metrics: bool,
    orca_format: Option<tokenmeter::orca::OrcaFormat>,
    no_prefix_caching: bool,
    preemption: bool,
    max_loras: u32,
    speculative_tokens: u32,
    speculative_acceptance: f64,
    keep_records: bool,
}

impl Config {
    /// Sets [`model`](Config::model).
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Sets [`slo_spec`](Config::slo_spec).
    #[must_use]
    pub fn slo_spec(mut self, spec: SloSpec) -> Self {
        self.slo_spec = Some(spec);
        self
    }

    /// Sets [`tokenizer`](Config::tokenizer): the path of a `tokenizer.json`.
    #[must_use]
    pub fn tokenizer(mut self, path: impl Into<PathBuf>) -> Self {
        self.tokenizer = Some(path.into());
        self
    }
}
