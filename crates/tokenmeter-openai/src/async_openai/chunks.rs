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
use crate::chunk::Usage;

pub(super) mod sealed {
    /// What the meter reads of a stream that ends on an event of its own (a Responses API
    /// stream), out of users' reach.
    pub trait Sealed {
        /// The stream says it is complete with an event (`response.completed`,
        /// `response.incomplete`): one that ends before it was cut off.
        const ENDS_WITH_EVENT: bool = false;

        /// This item is that event: the answer is complete and the request ends here.
        fn ends_stream(&self) -> bool {
            false
        }
    }
    impl Sealed for super::CreateChatCompletionStreamResponse {}
    impl Sealed for super::CreateCompletionResponse {}
}

/// An item type of async-openai's streams the meter reads: a chat completion chunk
/// ([`CreateChatCompletionStreamResponse`]), a text completion chunk
/// ([`CreateCompletionResponse`]) or a Responses API event
/// ([`ResponseStreamEvent`](::async_openai::types::responses::ResponseStreamEvent)). Sealed:
/// implemented for these three only.
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
    /// tool calls; a completion choice when its text is not empty. A Responses event: see
    /// [`meter_response_stream`](super::meter_response_stream).
    fn observation(&self) -> Observation;

    /// Its token counts, in chat terms (`prompt_tokens`, `completion_tokens`, cached prompt
    /// tokens): a chat or completion chunk's `usage`, sent on the last chunk when the request
    /// asked for it (`stream_options.include_usage`); the `response.usage` of a Responses
    /// stream's last event (`input_tokens`, `output_tokens`,
    /// `input_tokens_details.cached_tokens`).
    fn usage(&self) -> Option<Usage>;
}

impl StreamChunk for CreateChatCompletionStreamResponse {
    fn observation(&self) -> Observation {
        observe_choices(self.choices.iter().map(|choice| {
            let finish = choice.finish_reason.map(chat_finish_reason);
            (bears_tokens(choice), finish)
        }))
    }

    fn usage(&self) -> Option<Usage> {
        self.usage.as_ref().map(completion_usage)
    }
}

impl StreamChunk for CreateCompletionResponse {
    fn observation(&self) -> Observation {
        observe_choices(self.choices.iter().map(|choice| {
            let finish = choice.finish_reason.map(completion_finish_reason);
            (!choice.text.is_empty(), finish)
        }))
    }

    fn usage(&self) -> Option<Usage> {
        self.usage.as_ref().map(completion_usage)
    }
}

/// A chat or completion `usage` as the parser's [`Usage`].
fn completion_usage(usage: &CompletionUsage) -> Usage {
    let mut counts = Usage::new(
        Some(u64::from(usage.prompt_tokens)),
        Some(u64::from(usage.completion_tokens)),
    );
    counts.cached_tokens = usage
        .prompt_tokens_details
        .as_ref()
        .and_then(|details| details.cached_tokens)
        .map(u64::from);
    counts
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
/// carried a token is an [`ErrorClass::EmptyResponse`](tokenmeter::ErrorClass::EmptyResponse);
/// a Responses stream that ends before its last event is a `transport` error.
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

    /// Not called after the event that ends a Responses stream (the request ended there): such
    /// a stream that ends without it was cut off, a `transport` error, as the `reqwest` helper
    /// counts a truncated body.
    fn finish(&mut self) -> tokenmeter::Outcome {
        if T::ENDS_WITH_EVENT {
            tokenmeter::Outcome::Error(tokenmeter::ErrorClass::Transport)
        } else if self.tokens_seen {
            tokenmeter::Outcome::Success
        } else {
            tokenmeter::Outcome::Error(tokenmeter::ErrorClass::EmptyResponse)
        }
    }
}
