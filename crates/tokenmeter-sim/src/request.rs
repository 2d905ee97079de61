//! [`GenerateRequest`]: what a client asks the engine for.

use std::sync::Arc;

use tokenmeter::FinishReason;

/// The API operation a request came through; it names the request's series
/// (`gen_ai.operation.name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// A chat completion (`/v1/chat/completions`).
    Chat,
    /// A text completion (`/v1/completions`).
    TextCompletion,
}

impl Operation {
    /// `chat` or `text_completion`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Operation::Chat => "chat",
            Operation::TextCompletion => "text_completion",
        }
    }
}

/// One generation: its prompt length, how many tokens to generate, and the finish reason to
/// report at the end.
///
/// # Examples
///
/// ```
/// use tokenmeter::FinishReason;
/// use tokenmeter_sim::{GenerateRequest, Operation};
///
/// let request = GenerateRequest::chat(512, 128).finish_reason(FinishReason::Length);
/// assert_eq!(request.operation, Operation::Chat);
/// assert_eq!((request.prompt_tokens, request.output_tokens), (512, 128));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GenerateRequest {
    /// The operation.
    pub operation: Operation,
    /// Prompt tokens: they set the prefill time and occupy the KV cache.
    pub prompt_tokens: u32,
    /// Tokens to generate (at least one is always generated).
    pub output_tokens: u32,
    /// The finish reason the last token reports (default [`FinishReason::Stop`]).
    pub finish: FinishReason,
    /// Of the output tokens, how many come first as *reasoning* (a thinking model's
    /// `reasoning_content`) before the answer.
    pub reasoning_tokens: u32,
    /// The prompt's chained block hashes ([`prompt_blocks`](crate::prompt_blocks)), for the
    /// engine's prefix cache; empty when the prompt is not to be cached.
    pub prompt_blocks: Arc<[u64]>,
    /// The client's `max_tokens` parameter, when it sent one (published as a request
    /// parameter; [`output_tokens`](Self::output_tokens) is what the engine generates).
    pub max_tokens: Option<u32>,
    /// The client's `n` parameter (choices asked for), published as a request parameter; set
    /// it on one engine request per client request.
    pub choices: Option<u32>,
    /// The request's own latency objectives (from its `x-slo-ttft-ms`/`x-slo-tpot-ms`
    /// headers), put on its measurement for an SLO monitor.
    pub slo_targets: Option<tokenmeter::request::SloTargets>,
    /// The LoRA adapter the request runs on (a server takes it from the request's model
    /// name), published among the engine's running and waiting adapters when
    /// [`SimConfig::max_loras`](crate::SimConfig::max_loras) is above 0.
    pub adapter: Option<Arc<str>>,
}

impl GenerateRequest {
    /// A request of `operation`.
    pub fn new(operation: Operation, prompt_tokens: u32, output_tokens: u32) -> Self {
        Self {
            operation,
            prompt_tokens,
            output_tokens,
            finish: FinishReason::Stop,
            reasoning_tokens: 0,
            prompt_blocks: Arc::from([]),
            max_tokens: None,
            choices: None,
            slo_targets: None,
            adapter: None,
        }
    }

    /// A chat completion.
    pub fn chat(prompt_tokens: u32, output_tokens: u32) -> Self {
        Self::new(Operation::Chat, prompt_tokens, output_tokens)
    }

    /// A text completion.
    pub fn completion(prompt_tokens: u32, output_tokens: u32) -> Self {
        Self::new(Operation::TextCompletion, prompt_tokens, output_tokens)
    }

    /// Sets the finish reason reported with the last token.
    pub fn finish_reason(mut self, reason: FinishReason) -> Self {
        self.finish = reason;
        self
    }

    /// The first `tokens` output tokens are reasoning (at most all of them).
    pub fn reasoning_tokens(mut self, tokens: u32) -> Self {
        self.reasoning_tokens = tokens;
        self
    }

    /// The prompt's block hashes, so that the engine's prefix cache can skip the prefill of
    /// blocks an earlier prompt had ([`prompt_blocks`](crate::prompt_blocks)).
    pub fn prompt_blocks(mut self, blocks: Arc<[u64]>) -> Self {
        self.prompt_blocks = blocks;
        self
    }

    /// The client's `n` parameter.
    pub fn choices(mut self, n: u32) -> Self {
        self.choices = Some(n);
        self
    }

    /// The request's own latency objectives ([`slo_targets`](Self::slo_targets)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter::request::SloTargets;
    /// let targets = SloTargets::new(Some(Duration::from_millis(200)), None);
    /// let request = tokenmeter_sim::GenerateRequest::chat(8, 4).slo_targets(targets);
    /// assert_eq!(request.slo_targets, Some(targets));
    /// ```
    pub fn slo_targets(mut self, targets: tokenmeter::request::SloTargets) -> Self {
        self.slo_targets = Some(targets);
        self
    }

    /// The LoRA adapter the request runs on.
    pub fn adapter(mut self, name: impl Into<Arc<str>>) -> Self {
        self.adapter = Some(name.into());
        self
    }

    /// The client's `max_tokens` parameter.
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = Some(tokens);
        self
    }

    /// Tokens generated: `output_tokens`, at least one.
    pub fn generated(&self) -> u32 {
        self.output_tokens.max(1)
    }

    /// KV-cache tokens this request reserves: prompt plus generated.
    pub fn kv_tokens(&self) -> u64 {
        u64::from(self.prompt_tokens) + u64::from(self.generated())
    }
}
