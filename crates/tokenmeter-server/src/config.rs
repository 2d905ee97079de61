//! [`Config`]: everything a server can be told, with the defaults of `tokenmeter serve`.

use std::path::PathBuf;
use std::time::Duration;

use tokenmeter_sim::{CostModel, Faults, SimConfig, Speculation};
use tokenmeter_slo::SloSpec;

use crate::limits::{self, Limits};
use crate::profile::MetricsProfile;

/// Default output length when a request gives no `max_tokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 128;
/// Default socket send buffer of a connection, in bytes (Linux's initial `tcp_wmem`, here
/// fixed rather than grown up to 4 MiB).
pub const DEFAULT_SEND_BUFFER: u32 = 16 * 1024;

/// A server's configuration: the model it serves, the simulated engine, the limits on its
/// clients. [`Config::default`] holds the defaults of every `tokenmeter serve` flag; change
/// fields with the setters of the same name.
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_server::{Config, MetricsProfile};
///
/// let config = Config::default()
///     .model("org/llama-3-8b")
///     .max_batch(16)
///     .profile(MetricsProfile::Vllm)
///     .shutdown_grace(Duration::from_millis(200));
/// assert_eq!(config.served_names(), ["org/llama-3-8b"]);
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// The model: the name it is served under unless [`served_model_name`](Self::served_model_name) is given.
    pub model: String,
    /// Names the model is served under (vLLM's `--served-model-name`): responses and
    /// `/metrics` report the first, requests may name any of them (empty: [`model`](Self::model)).
    pub served_model_name: Vec<String>,
    /// Serve requests that name any model under the first served name instead of answering 404.
    pub accept_any_model: bool,
    /// Seed of every random choice (faults, generated words).
    pub seed: u64,
    /// Naming profile of `/metrics`.
    pub profile: MetricsProfile,
    /// Output tokens for requests that give no `max_tokens` / `max_completion_tokens`.
    pub default_max_tokens: u32,
    /// Requests that may run at once (the batch).
    pub max_batch: usize,
    /// KV-cache capacity in tokens; a request waits until its prompt and output fit.
    pub kv_capacity: u64,
    /// Decode step time by batch size, linear in between: (batch, step time) points.
    pub decode_table: Vec<(u32, Duration)>,
    /// Fixed cost of a step that runs a prefill.
    pub prefill_base: Duration,
    /// Prefill cost per prompt token.
    pub prefill_per_token: Duration,
    /// Fraction of requests that fail (before or during their stream), from 0 to 1.
    pub error_rate: f64,
    /// Answer 429 when this many requests already wait in the engine's queue.
    pub queue_limit: usize,
    /// The model's context length: prompt plus `max_tokens` beyond it is answered 400.
    pub max_model_len: u64,
    /// Close a connection whose request line and headers are not complete this long after
    /// their first byte.
    pub header_timeout: Duration,
    /// Answer 408 when a request body has not arrived whole this long after its headers.
    pub body_timeout: Duration,
    /// Close a connection idle (no request, no byte) this long between requests.
    pub keep_alive_timeout: Duration,
    /// Close a connection whose client reads nothing for this long while the server has bytes
    /// to send it (its requests are recorded as cancelled).
    pub send_timeout: Duration,
    /// Answer 413 to request bodies larger than this many bytes.
    pub max_body_size: usize,
    /// The bytes every request body being read or held may take at once (at least one
    /// [`max_body_size`](Self::max_body_size), at most [`max_connections`](Self::max_connections) of them).
    pub max_body_memory: usize,
    /// Answer 400 to a non-streaming request whose answer could be larger than this many bytes.
    pub max_answer_size: usize,
    /// The bytes every non-streaming answer in flight may take at once, each counted at its
    /// worst case; a request whose answer would take the total past it is answered 503 with
    /// `retry-after` before it runs (at least one [`max_answer_size`](Self::max_answer_size),
    /// at most [`max_connections`](Self::max_connections) of them).
    pub max_answer_memory: usize,
    /// Connections open at once; lowered to leave headroom under the process's open-file limit.
    pub max_connections: usize,
    /// At a shutdown, how long in-flight responses get to end before they are cancelled.
    pub shutdown_grace: Duration,
    /// Fraction of streams that pause once mid-stream, from 0 to 1.
    pub stall_rate: f64,
    /// How long an injected stall lasts.
    pub stall: Duration,
    /// How long a client may leave its stream unread before the server cancels the request.
    pub stall_limit: Duration,
    /// Socket send buffer of each connection, in bytes (`SO_SNDBUF`; the kernel doubles it).
    pub send_buffer: u32,
    /// An SLO spec: its verdict counters on `/metrics`, its thresholds as bucket edges, and
    /// its attainment, burn rates and alerts on `GET /slo`.
    pub slo_spec: Option<SloSpec>,
    /// The model's Hugging Face `tokenizer.json`: count prompt tokens with it instead of
    /// estimating a token per 4 characters.
    pub tokenizer: Option<PathBuf>,
    /// Act as a reasoning model: every chat answer starts with this many reasoning tokens.
    pub reasoning_tokens: u32,
    /// Add the server's own timings of each request (vLLM's `--enable-per-request-metrics`).
    pub enable_per_request_metrics: bool,
    /// Add an ORCA load report (`endpoint-load-metrics`: KV-cache usage, waiting and running
    /// requests) in this format to every completion answer whose request does not name one
    /// with `endpoint-load-metrics-format` (requests that name one get it, as in vLLM).
    pub orca_format: Option<tokenmeter::orca::OrcaFormat>,
    /// Turn the prefix cache off.
    pub no_prefix_caching: bool,
    /// Allocate the KV cache as tokens are generated and preempt the newest request when it
    /// runs out, as vLLM does.
    pub preemption: bool,
    /// Most LoRA adapters the simulated engine holds at once (vLLM's `--max-loras`). Above 0,
    /// a request naming a served model other than the first runs on the adapter of that name
    /// (and waits, counted `deferred`, while `max_loras` other adapters run), and `/metrics`
    /// publishes the adapters running and waiting (`vllm:lora_requests_info`). 0 (the
    /// default): no LoRA.
    pub max_loras: u32,
    /// Speculative decoding: tokens each decode step drafts; 0 turns it off.
    pub speculative_tokens: u32,
    /// The probability that each draft token is accepted, given the ones before it were.
    pub speculative_acceptance: f64,
    /// Keep every server-side record in memory, readable with
    /// `Server::records` (memory grows with every request; off by default).
    pub keep_records: bool,
}

impl Default for Config {
    /// The defaults of `tokenmeter serve`'s flags.
    fn default() -> Self {
        Self {
            model: tokenmeter_sim::DEFAULT_MODEL.to_owned(),
            served_model_name: Vec::new(),
            accept_any_model: false,
            seed: 0,
            profile: MetricsProfile::Semconv,
            default_max_tokens: DEFAULT_MAX_TOKENS,
            max_batch: tokenmeter_sim::DEFAULT_MAX_BATCH,
            kv_capacity: tokenmeter_sim::DEFAULT_KV_CAPACITY,
            decode_table: tokenmeter_sim::H100_8B_DECODE.to_vec(),
            prefill_base: tokenmeter_sim::H100_8B_PREFILL_BASE,
            prefill_per_token: tokenmeter_sim::H100_8B_PREFILL_PER_TOKEN,
            error_rate: 0.0,
            queue_limit: limits::DEFAULT_QUEUE_LIMIT,
            max_model_len: tokenmeter_sim::DEFAULT_MAX_MODEL_LEN,
            header_timeout: limits::DEFAULT_HEADER_TIMEOUT,
            body_timeout: limits::DEFAULT_BODY_TIMEOUT,
            keep_alive_timeout: limits::DEFAULT_KEEP_ALIVE,
            send_timeout: limits::DEFAULT_SEND_TIMEOUT,
            max_body_size: limits::DEFAULT_MAX_BODY,
            max_body_memory: limits::DEFAULT_BODY_MEMORY,
            max_answer_size: crate::budget::DEFAULT_MAX_ANSWER,
            max_answer_memory: crate::budget::DEFAULT_ANSWER_MEMORY,
            max_connections: limits::DEFAULT_MAX_CONNECTIONS,
            shutdown_grace: limits::DEFAULT_SHUTDOWN_GRACE,
            stall_rate: 0.0,
            stall: tokenmeter_sim::DEFAULT_STALL,
            stall_limit: tokenmeter_sim::DEFAULT_STALL_LIMIT,
            send_buffer: DEFAULT_SEND_BUFFER,
            slo_spec: None,
            tokenizer: None,
            reasoning_tokens: 0,
            enable_per_request_metrics: false,
            orca_format: None,
            no_prefix_caching: false,
            preemption: false,
            max_loras: 0,
            speculative_tokens: 0,
            speculative_acceptance: 0.7,
            keep_records: false,
        }
    }
}

impl Config {
    /// The names the model is served under: [`served_model_name`](Self::served_model_name),
    /// else [`model`](Self::model). Never empty; the first is the one responses report.
    pub fn served_names(&self) -> Vec<String> {
        if self.served_model_name.is_empty() {
            vec![self.model.clone()]
        } else {
            self.served_model_name.clone()
        }
    }

    /// Checks the simulator's settings (the decode table, the probabilities, …); the error
    /// names the setting to fix. `Server::start` checks the same.
    pub fn validate(&self) -> Result<(), crate::error::Error> {
        self.sim_config()
            .map(drop)
            .map_err(crate::error::Error::from)
    }

    /// The connections the server will hold at once: [`max_connections`](Self::max_connections),
    /// lowered to leave an eighth (at least 32) of the process's open-file limit free.
    pub fn connection_limit(&self) -> usize {
        limits::connection_limit(self.max_connections, limits::open_file_limit())
    }

    /// The bytes request bodies may take at once: [`max_body_memory`](Self::max_body_memory)
    /// kept between one [`max_body_size`](Self::max_body_size) and
    /// [`connection_limit`](Self::connection_limit) of them.
    pub fn body_memory_limit(&self) -> usize {
        limits::body_budget(
            self.max_body_memory,
            self.max_body_size,
            self.connection_limit(),
        )
    }

    /// The bytes whole answers in flight may take together:
    /// [`max_answer_memory`](Self::max_answer_memory) kept between one
    /// [`max_answer_size`](Self::max_answer_size) and
    /// [`connection_limit`](Self::connection_limit) of them.
    pub fn answer_memory_limit(&self) -> usize {
        crate::budget::answer_memory(
            self.max_answer_memory,
            self.max_answer_size,
            self.connection_limit(),
        )
    }

    /// The simulator's configuration.
    pub(crate) fn sim_config(&self) -> Result<SimConfig, tokenmeter_sim::ConfigError> {
        let cost = CostModel::new(
            self.decode_table.iter().copied(),
            self.prefill_base,
            self.prefill_per_token,
        )?;
        let faults = Faults::default()
            .error_rate(self.error_rate)
            .stalls(self.stall_rate, self.stall)
            .queue_limit(self.queue_limit);
        let mut config = SimConfig::default()
            .max_batch(self.max_batch)
            .kv_capacity_tokens(self.kv_capacity)
            .prefix_cache_blocks(if self.no_prefix_caching {
                0
            } else {
                usize::try_from(self.kv_capacity / u64::from(tokenmeter_sim::BLOCK_TOKENS))
                    .unwrap_or(usize::MAX)
            })
            .preemption(self.preemption)
            .max_loras(self.max_loras)
            .max_model_len(self.max_model_len)
            .cost(cost)
            .faults(faults)
            .seed(self.seed)
            .stall_limit(self.stall_limit);
        if self.speculative_tokens > 0 {
            config = config.speculation(Speculation::new(
                self.speculative_tokens,
                self.speculative_acceptance,
            ));
        }
        config.validate()?;
        Ok(config)
    }

    /// The connection and request limits, the connection limit lowered under the process's
    /// open-file limit.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            keep_alive: self.keep_alive_timeout,
            send_timeout: self.send_timeout,
            max_body: self.max_body_size,
            body_memory: self.body_memory_limit(),
            max_connections: self.connection_limit(),
            shutdown_grace: self.shutdown_grace,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_the_simulators_default() {
        let default = Config::default();
        assert_eq!(default.limits(), Limits::default());
        assert_eq!(
            default.sim_config().expect("valid"),
            SimConfig::default()
                .seed(0)
                .faults(Faults::default().queue_limit(limits::DEFAULT_QUEUE_LIMIT))
        );
    }

    #[test]
    fn served_names_default_to_the_model() {
        let config = Config::default().model("org/llama");
        assert_eq!(config.served_names(), ["org/llama"]);
        let config = config.served_model_name(vec!["a".into(), "b".into()]);
        assert_eq!(config.served_names(), ["a", "b"]);
    }

    #[test]
    fn a_bad_decode_table_is_refused_with_its_fix() {
        let config = Config::default().decode_table(vec![
            (8, Duration::from_millis(8)),
            (1, Duration::from_millis(7)),
        ]);
        let error = config.validate().expect_err("decreasing batches");
        assert!(error.to_string().contains("increasing"), "{error}");
    }
}
