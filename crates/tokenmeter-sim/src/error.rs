//! Errors: a bad configuration, a refused submission, a failure inside a stream.

use std::time::Duration;

use tokenmeter::ErrorClass;
use tokenmeter::stream::HasErrorClass;

/// A configuration the engine cannot run with.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The decode table has no point.
    #[error(
        "the decode table is empty: give at least one `batch → step time` point, e.g. 1 → 7 ms"
    )]
    EmptyDecodeTable,
    /// The decode table's batch sizes are not strictly increasing from 1 or more.
    #[error(
        "decode table batch {batch} comes after {previous}: list batch sizes greater than 0 in strictly increasing order"
    )]
    DecodeTableOrder {
        /// The offending batch size.
        batch: u32,
        /// The batch size before it (0 for the first point).
        previous: u32,
    },
    /// A probability outside `0.0..=1.0`.
    #[error("{name} is {value}: give a probability between 0.0 and 1.0")]
    Probability {
        /// Which knob.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A zero that must be positive.
    #[error("{name} is 0: give at least 1")]
    Zero {
        /// Which knob.
        name: &'static str,
    },
    /// A zero duration that must be positive.
    #[error("{name} is 0: give a positive duration, e.g. 30s")]
    ZeroDuration {
        /// Which knob.
        name: &'static str,
    },
    /// The engine was built outside a tokio runtime.
    #[error(
        "the engine needs a tokio runtime: build it from inside one (e.g. in `#[tokio::main]`)"
    )]
    NoRuntime,
}

/// Why the engine refused a request. The refusal is recorded on the request's series with the
/// matching [`ErrorClass`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubmitError {
    /// The waiting queue is at its limit (an HTTP 429).
    #[error(
        "the queue is full ({waiting} requests waiting, limit {limit}): retry later or raise the queue limit"
    )]
    QueueFull {
        /// Requests waiting when this one arrived.
        waiting: usize,
        /// The configured limit.
        limit: usize,
    },
    /// Prompt plus output exceed the model's context length
    /// ([`SimConfig::max_model_len`](crate::SimConfig::max_model_len)), an HTTP 400. The message
    /// is vLLM's (and OpenAI's), word for word.
    #[error(
        "This model's maximum context length is {max_model_len} tokens. However, you requested {} tokens ({prompt} in the messages, {completion} in the completion). Please reduce the length of the messages or completion.",
        u64::from(*.prompt) + u64::from(*.completion)
    )]
    ContextLength {
        /// Prompt tokens.
        prompt: u32,
        /// Output tokens asked for (`max_tokens`, or the server's default).
        completion: u32,
        /// The context length.
        max_model_len: u64,
    },
    /// Prompt plus output can never fit in the KV cache (an HTTP 400).
    #[error(
        "the request needs {needed} KV-cache tokens (prompt + output) but the cache holds {capacity}: shorten the prompt or max_tokens"
    )]
    TooLarge {
        /// Prompt plus output tokens.
        needed: u64,
        /// The KV-cache capacity in tokens.
        capacity: u64,
    },
    /// More choices (`n`) than the batch holds at once (an HTTP 400): they could never all run
    /// together, so the engine refuses the request rather than let its last choices hold the
    /// head of the queue while the first ones generate.
    #[error(
        "the request asks for {n} choices but this server runs at most {max_batch} sequences at once: lower `n` to {max_batch} or fewer, or start the server with a larger --max-batch"
    )]
    TooManyChoices {
        /// The choices asked for.
        n: u32,
        /// The batch limit ([`SimConfig::max_batch`](crate::SimConfig::max_batch)).
        max_batch: usize,
    },
    /// The choices together can never fit in the KV cache (an HTTP 400): each reserves its
    /// prompt and whole output when scheduled, so they could never all run together.
    #[error(
        "the request's {n} choices need {needed} KV-cache tokens together ({n} × (prompt + max_tokens)) but the cache holds {capacity}: lower `n` or `max_tokens`, or start the server with a larger --kv-capacity"
    )]
    ChoicesTooLarge {
        /// The choices asked for.
        n: u32,
        /// Their KV-cache tokens together.
        needed: u64,
        /// The KV-cache capacity in tokens.
        capacity: u64,
    },
    /// The engine task is gone (its runtime shut down).
    #[error("the engine has stopped: start a new one")]
    Stopped,
}

impl SubmitError {
    /// The reason an engine counts this refusal under
    /// ([`EngineRecorder::add_admission_rejections`](tokenmeter::sink::EngineRecorder::add_admission_rejections)):
    /// a full queue, or a request that can never fit the KV cache; `None` for a request that
    /// is invalid rather than refused.
    pub fn admission_reason(&self) -> Option<tokenmeter::sink::AdmissionReason> {
        use tokenmeter::sink::AdmissionReason;
        match self {
            SubmitError::QueueFull { .. } => Some(AdmissionReason::QueueFull),
            SubmitError::TooLarge { .. } | SubmitError::ChoicesTooLarge { .. } => {
                Some(AdmissionReason::TooLarge)
            }
            _ => None,
        }
    }

    /// The class this refusal is recorded with: `rate_limited`, `client_error` or `overloaded`.
    pub fn error_class(&self) -> ErrorClass {
        match self {
            SubmitError::QueueFull { .. } => ErrorClass::RateLimited,
            SubmitError::ContextLength { .. }
            | SubmitError::TooLarge { .. }
            | SubmitError::TooManyChoices { .. }
            | SubmitError::ChoicesTooLarge { .. } => ErrorClass::ClientError,
            SubmitError::Stopped => ErrorClass::Overloaded,
        }
    }

    /// The HTTP status an OpenAI-compatible server answers with: 429, 400 or 503.
    pub fn http_status(&self) -> u16 {
        match self {
            SubmitError::QueueFull { .. } => 429,
            SubmitError::ContextLength { .. }
            | SubmitError::TooLarge { .. }
            | SubmitError::TooManyChoices { .. }
            | SubmitError::ChoicesTooLarge { .. } => 400,
            SubmitError::Stopped => 503,
        }
    }
}

impl HasErrorClass for SubmitError {
    fn error_class(&self) -> ErrorClass {
        SubmitError::error_class(self)
    }
}

/// A failure delivered inside a token stream; the stream ends after it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// An injected failure (the error-rate knob) after `after_tokens` tokens were sent.
    #[error("injected engine failure after {after_tokens} tokens (error-rate fault knob)")]
    Injected {
        /// Tokens sent before the failure (0: it failed before the first token).
        after_tokens: u32,
    },
    /// The consumer left its output queue full for the stall limit
    /// ([`SimConfig::stall_limit`](crate::SimConfig::stall_limit)): the engine cut the
    /// request, which is recorded as cancelled with the tokens the consumer took.
    #[error(
        "the consumer took no token for {limit:?} while its output queue was full (the stall limit): the request was cancelled; read the stream faster or raise the stall limit"
    )]
    Stalled {
        /// The stall limit.
        limit: Duration,
    },
}

impl HasErrorClass for StreamError {
    /// `server_error` for an injected failure; `timeout` for a stalled consumer (which the
    /// engine itself records as cancelled: the consumer, not the engine, stopped).
    fn error_class(&self) -> ErrorClass {
        match self {
            StreamError::Injected { .. } => ErrorClass::ServerError,
            StreamError::Stalled { .. } => ErrorClass::Timeout,
        }
    }
}
