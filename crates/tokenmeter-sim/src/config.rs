//! [`SimConfig`] and [`Faults`]: the engine's size, costs, faults and seed.

use std::time::Duration;

use crate::cost::CostModel;
use crate::error::ConfigError;

/// Default maximum batch (requests running at once).
pub const DEFAULT_MAX_BATCH: usize = 64;

/// Default KV-cache capacity in tokens: about what is left for the cache of an 8B model (128 KiB
/// per token in fp16) on an 80 GB H100.
pub const DEFAULT_KV_CAPACITY: u64 = 400_000;

/// Default context length (prompt plus output tokens) of the simulated model: 8,192, the
/// `max_model_len` vLLM serves an 8B Llama 3 model with.
pub const DEFAULT_MAX_MODEL_LEN: u64 = 8_192;

/// Default length of an injected stall.
pub const DEFAULT_STALL: Duration = Duration::from_millis(500);

/// Default capacity of a request's output queue, in tokens: what the engine may have produced
/// and its consumer not yet taken.
pub const DEFAULT_OUTPUT_QUEUE: usize = 16;

/// Default time a request may wait with its output queue full before the engine cuts it.
pub const DEFAULT_STALL_LIMIT: Duration = Duration::from_secs(30);

/// The engine's shape: batch and KV-cache limits, step costs, faults and the random seed.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_sim::{Faults, SimConfig};
///
/// let config = SimConfig::default()
///     .max_batch(8)
///     .kv_capacity_tokens(20_000)
///     .max_model_len(4_096)
///     .seed(7)
///     .output_queue(4)
///     .stall_limit(Duration::from_secs(10))
///     .faults(Faults::default().error_rate(0.01).queue_limit(100));
/// assert_eq!(config.max_batch, 8);
/// assert_eq!(config.max_model_len, 4_096);
/// assert_eq!(config.faults.queue_limit, Some(100));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SimConfig {
    /// Requests that may run (prefill or decode) at once.
    pub max_batch: usize,
    /// KV-cache capacity in tokens. A request is admitted only when its prompt plus its whole
    /// output fit beside the reservations of the running batch (no preemption).
    pub kv_capacity_tokens: u64,
    /// The model's context length: a request whose prompt plus output tokens exceed it is
    /// refused ([`SubmitError::ContextLength`](crate::SubmitError::ContextLength), an HTTP 400
    /// with vLLM's message). Default [`DEFAULT_MAX_MODEL_LEN`].
    pub max_model_len: u64,
    /// Step costs.
    pub cost: CostModel,
    /// Fault injection.
    pub faults: Faults,
    /// Seed of every random choice (faults, token text).
    pub seed: u64,
    /// Capacity of each request's output queue, in tokens (default [`DEFAULT_OUTPUT_QUEUE`]).
    /// A request whose consumer has not taken this many tokens yet sits out the decode steps
    /// (keeping its batch slot and KV cache) until the consumer takes one: a slow reader slows
    /// its own request only, and what it has not read is bounded.
    pub output_queue: usize,
    /// How long a request may sit out with its output queue full before the engine cuts it
    /// (default [`DEFAULT_STALL_LIMIT`]): it leaves the batch, frees its KV cache and is
    /// recorded as cancelled then, whether or not its consumer looks again; its stream yields
    /// [`StreamError::Stalled`](crate::StreamError::Stalled) next (the tokens still queued are
    /// dropped, never counted).
    pub stall_limit: Duration,
    /// Blocks ([`BLOCK_TOKENS`](crate::BLOCK_TOKENS) tokens each) the prefix cache keeps; 0
    /// turns prefix caching off. Default: as many as the KV cache holds.
    pub prefix_cache_blocks: usize,
    /// Speculative decoding, when set: every decode step drafts tokens and emits the accepted
    /// ones with the step's own.
    pub speculation: Option<Speculation>,
    /// Allocate the KV cache as tokens are generated and, when it runs out, preempt the most
    /// recently scheduled request (free its cache, put it back at the head of the queue, and
    /// recompute its prompt and output when it is scheduled again), as vLLM does. Off (the
    /// default), a request reserves its prompt and whole output when it is scheduled and is
    /// never preempted.
    pub preemption: bool,
    /// Most LoRA adapters the engine holds at once (vLLM's `--max-loras`); above 0, a request
    /// whose adapter would go past it waits (counted `deferred`, as vLLM does) though the batch
    /// has room, and the engine publishes the adapters of its running and waiting requests
    /// ([`GenerateRequest::adapter`](crate::GenerateRequest::adapter)). 0 (the default): no
    /// LoRA limit, nothing published.
    pub max_loras: u32,
}

/// Speculative decoding: how many tokens a draft proposes and how likely the target model
/// accepts each (the first rejection ends the accepted run).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Speculation {
    /// Draft tokens per decode step (`num_speculative_tokens`), at least 1.
    pub tokens: u32,
    /// The probability that each draft token is accepted, given the ones before it were.
    pub acceptance: f64,
}

impl Speculation {
    /// Drafts of `tokens` tokens, each accepted with probability `acceptance`.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter_sim::{SimConfig, Speculation};
    ///
    /// let config = SimConfig::default().speculation(Speculation::new(4, 0.7));
    /// assert!(config.validate().is_ok());
    /// ```
    pub fn new(tokens: u32, acceptance: f64) -> Self {
        Self { tokens, acceptance }
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            max_batch: DEFAULT_MAX_BATCH,
            kv_capacity_tokens: DEFAULT_KV_CAPACITY,
            max_model_len: DEFAULT_MAX_MODEL_LEN,
            cost: CostModel::default(),
            faults: Faults::default(),
            seed: 0,
            output_queue: DEFAULT_OUTPUT_QUEUE,
            stall_limit: DEFAULT_STALL_LIMIT,
            prefix_cache_blocks: usize::try_from(
                DEFAULT_KV_CAPACITY / u64::from(crate::BLOCK_TOKENS),
            )
            .unwrap_or(usize::MAX),
            speculation: None,
            preemption: false,
            max_loras: 0,
        }
    }
}

impl SimConfig {
    /// Sets [`SimConfig::max_batch`].
    pub fn max_batch(mut self, max: usize) -> Self {
        self.max_batch = max;
        self
    }

    /// Sets [`SimConfig::kv_capacity_tokens`].
    pub fn kv_capacity_tokens(mut self, tokens: u64) -> Self {
        self.kv_capacity_tokens = tokens;
        self
    }

    /// Sets [`SimConfig::max_model_len`].
    pub fn max_model_len(mut self, tokens: u64) -> Self {
        self.max_model_len = tokens;
        self
    }

    /// Sets [`SimConfig::cost`].
    pub fn cost(mut self, cost: CostModel) -> Self {
        self.cost = cost;
        self
    }

    /// Sets [`SimConfig::faults`].
    pub fn faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// Sets [`SimConfig::seed`].
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets [`SimConfig::output_queue`].
    pub fn output_queue(mut self, tokens: usize) -> Self {
        self.output_queue = tokens;
        self
    }

    /// Sets [`SimConfig::stall_limit`].
    pub fn stall_limit(mut self, limit: Duration) -> Self {
        self.stall_limit = limit;
        self
    }

    /// Keeps at most `blocks` prompt blocks in the prefix cache (0: no prefix caching).
    pub fn prefix_cache_blocks(mut self, blocks: usize) -> Self {
        self.prefix_cache_blocks = blocks;
        self
    }

    /// Turns speculative decoding on.
    pub fn speculation(mut self, speculation: Speculation) -> Self {
        self.speculation = Some(speculation);
        self
    }

    /// Allocates the KV cache on demand and preempts under pressure (see
    /// [`SimConfig::preemption`](Self#structfield.preemption)).
    pub fn preemption(mut self, on: bool) -> Self {
        self.preemption = on;
        self
    }

    /// Publishes the LoRA adapters of the requests, holding at most `max` at once.
    pub fn max_loras(mut self, max: u32) -> Self {
        self.max_loras = max;
        self
    }

    /// Checks every knob; the engine builder calls it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_batch == 0 {
            return Err(ConfigError::Zero { name: "max_batch" });
        }
        if self.kv_capacity_tokens == 0 {
            return Err(ConfigError::Zero {
                name: "kv_capacity_tokens",
            });
        }
        if self.max_model_len == 0 {
            return Err(ConfigError::Zero {
                name: "max_model_len",
            });
        }
        if self.output_queue == 0 {
            return Err(ConfigError::Zero {
                name: "output_queue",
            });
        }
        if self.stall_limit.is_zero() {
            return Err(ConfigError::ZeroDuration {
                name: "stall_limit",
            });
        }
        if let Some(spec) = self.speculation {
            if spec.tokens == 0 {
                return Err(ConfigError::Zero {
                    name: "speculation.tokens",
                });
            }
            if !(0.0..=1.0).contains(&spec.acceptance) {
                return Err(ConfigError::Probability {
                    name: "speculation.acceptance",
                    value: spec.acceptance,
                });
            }
        }
        self.faults.validate()
    }
}

/// Fault injection: failures, rejections and stalls. All off by default.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_sim::Faults;
///
/// let faults = Faults::default()
///     .error_rate(0.05) // 5% of requests fail, before or during their stream
///     .queue_limit(32) // at most 32 wait; more are refused (HTTP 429)
///     .stalls(0.1, Duration::from_millis(300)); // 10% of streams pause once for 300 ms
/// assert!(faults.validate().is_ok());
/// assert!(Faults::default().error_rate(1.5).validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Faults {
    /// Probability that a request fails: at a uniformly chosen point of its output, including
    /// before its first token.
    pub error_rate: f64,
    /// At most this many requests wait in the queue; a request arriving when it is full is
    /// refused ([`SubmitError::QueueFull`](crate::SubmitError::QueueFull)). `None`: no limit.
    pub queue_limit: Option<usize>,
    /// Probability that a stream pauses once, at a uniformly chosen point after its first token.
    pub stall_rate: f64,
    /// How long a stall lasts. The stalled request keeps its KV cache and leaves the decode
    /// batch meanwhile.
    pub stall: Duration,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            error_rate: 0.0,
            queue_limit: None,
            stall_rate: 0.0,
            stall: DEFAULT_STALL,
        }
    }
}

impl Faults {
    /// Sets [`Faults::error_rate`].
    pub fn error_rate(mut self, rate: f64) -> Self {
        self.error_rate = rate;
        self
    }

    /// Sets [`Faults::queue_limit`].
    pub fn queue_limit(mut self, limit: usize) -> Self {
        self.queue_limit = Some(limit);
        self
    }

    /// Sets [`Faults::stall_rate`] and [`Faults::stall`].
    pub fn stalls(mut self, rate: f64, stall: Duration) -> Self {
        self.stall_rate = rate;
        self.stall = stall;
        self
    }

    /// Checks the probabilities.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, value) in [
            ("error_rate", self.error_rate),
            ("stall_rate", self.stall_rate),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(ConfigError::Probability { name, value });
            }
        }
        Ok(())
    }
}
