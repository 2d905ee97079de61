//! [`StreamChunk`]: what one chunk of an async-openai stream carried for the meter.

use ::async_openai::error::OpenAIError;
use ::async_openai::types::chat::{
    ChatChoiceStream, CompletionFinishReason, CompletionUsage, CreateChatCompletionStreamResponse,
    FinishReason as ChatFinishReason,
};
use ::async_openai::types::completions::CreateCompletionResponse;
use tokenmeter::stream::Observe;
use tokenmeter::{FinishReason, Observation};

use super::class::error_class;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::CreateChatCompletionStreamResponse {}
    impl Sealed for super::CreateCompletionResponse {}
}

/// A chunk type of async-openai's streams the meter reads: a chat completion chunk
/// ([`CreateChatCompletionStreamResponse`]) or a text completion chunk
/// ([`CreateCompletionResponse`]). Sealed: implemented for these two only.
///
/// # Examples
///
/// ```
/// use async_openai::types::chat::CreateChatCompletionStreamResponse;
/// use tokenmeter::FinishReason;
/// use tokenmeter_openai::async_openai::StreamChunk;
///
/// let chunk: CreateChatCompletionStreamResponse = serde_json::from_str(
///     r#"{"id":"c","object":"chat.completion.chunk","created":0,"model":"m",
///         "choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#,
/// )?;
/// let observation = chunk.observation();
/// assert_eq!(observation.token_count(), 1);
/// assert_eq!(observation.finish_reason(), Some(FinishReason::Stop));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub trait StreamChunk: sealed::Sealed {
    /// Its token-bearing choices (one token each) and the finish reason of the last choice
    /// that gave one. A chat choice bears tokens when its delta has content, a refusal or
    /// tool calls; a completion choice when its text is not empty.
    fn observation(&self) -> Observation;

    /// Its `usage`: sent on the last chunk when the request asked for it
    /// (`stream_options.include_usage`).
    fn usage(&self) -> Option<&CompletionUsage>;
}

impl StreamChunk for CreateChatCompletionStreamResponse {
    fn observation(&self) -> Observation {
        observe_choices(self.choices.iter().map(|choice| {
            let finish = choice.finish_reason.map(chat_finish_reason);
            (bears_tokens(choice), finish)
        }))
    }

    fn usage(&self) -> Option<&CompletionUsage> {
        self.usage.as_ref()
    }
}

impl StreamChunk for CreateCompletionResponse {
    fn observation(&self) -> Observation {
        observe_choices(self.choices.iter().map(|choice| {
            let finish = choice.finish_reason.map(completion_finish_reason);
            (!choice.text.is_empty(), finish)
        }))
    }

    fn usage(&self) -> Option<&CompletionUsage> {
        self.usage.as_ref()
    }
}

/// Whether a chat choice's delta carries output: content, a refusal or tool calls (async-openai's
/// delta type has no reasoning field: a reasoning-only delta reaches it as an empty delta).
fn bears_tokens(choice: &ChatChoiceStream) -> bool {
    let filled = |text: &Option<String>| text.as_deref().is_some_and(|t| !t.is_empty());
    let delta = &choice.delta;
    filled(&delta.content)
        || filled(&delta.refusal)
        || delta
            .tool_calls
            .as_ref()
            .is_some_and(|calls| !calls.is_empty())
}

/// One token per choice that bears some, and the last finish reason given.
fn observe_choices(choices: impl Iterator<Item = (bool, Option<FinishReason>)>) -> Observation {
    let mut tokens = 0u32;
    let mut finish = None;
    for (bears, reason) in choices {
        tokens += u32::from(bears);
        finish = reason.or(finish);
    }
    let observation = Observation::tokens(tokens);
    match finish {
        Some(reason) => observation.with_finish(reason),
        None => observation,
    }
}

fn chat_finish_reason(reason: ChatFinishReason) -> FinishReason {
    match reason {
        ChatFinishReason::Stop => FinishReason::Stop,
        ChatFinishReason::Length => FinishReason::Length,
        ChatFinishReason::ToolCalls | ChatFinishReason::FunctionCall => FinishReason::ToolCalls,
        ChatFinishReason::ContentFilter => FinishReason::ContentFilter,
    }
}

fn completion_finish_reason(reason: CompletionFinishReason) -> FinishReason {
    match reason {
        CompletionFinishReason::Stop => FinishReason::Stop,
        CompletionFinishReason::Length => FinishReason::Length,
        CompletionFinishReason::ContentFilter => FinishReason::ContentFilter,
    }
}

/// The observer of a metered async-openai stream: `Ok` chunks through [`StreamChunk`], `Err`
/// items through [`error_class`], which ends the request. A stream that ends before any chunk
/// carried a token is an [`ErrorClass::EmptyResponse`](tokenmeter::ErrorClass::EmptyResponse).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ChunkObserver {
    tokens_seen: bool,
}

impl<T: StreamChunk> Observe<Result<T, OpenAIError>> for ChunkObserver {
    #[inline]
    fn observe(&mut self, item: &Result<T, OpenAIError>) -> Observation {
        match item {
            Ok(chunk) => {
                let observation = chunk.observation();
                self.tokens_seen |= observation.token_count() > 0;
                observation
            }
            Err(error) => Observation::error(error_class(error)),
        }
    }

    fn finish(&mut self) -> tokenmeter::Outcome {
        if self.tokens_seen {
            tokenmeter::Outcome::Success
        } else {
            tokenmeter::Outcome::Error(tokenmeter::ErrorClass::EmptyResponse)
        }
    }
}
