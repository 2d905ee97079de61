//! The async-openai helper (feature `async-openai`): async-openai's chat, text completion and
//! Responses API streams, metered in one line.
//!
//! | You have | Call |
//! |---|---|
//! | the future of `client.chat().create_stream(..)`, `client.completions().create_stream(..)` or `client.responses().create_stream(..)` | [`send`]`(future, series.start()).await?` |
//! | a [`ChatCompletionResponseStream`](::async_openai::types::chat::ChatCompletionResponseStream) | [`meter_chat_stream`]`(stream, request)` |
//! | a [`CompletionResponseStream`](::async_openai::types::completions::CompletionResponseStream) | [`meter_completion_stream`]`(stream, request)` |
//! | a [`ResponseStream`](::async_openai::types::responses::ResponseStream) (`/v1/responses`) | [`meter_response_stream`]`(stream, request)` |
//!
//! The metered stream ([`MeteredStream`]) yields async-openai's items unchanged and measures
//! them as the `reqwest` helper does: TTFT at the first chunk with a content, refusal or
//! tool-call delta (or completion text), ITL between such chunks, output and input tokens from
//! the final `usage` when the request asked for it (`stream_options.include_usage`, else one
//! token per token-bearing choice), the finish reason, and one outcome: success at the end of
//! the stream, the [`error_class`] of an error, or `cancelled` when the stream is dropped
//! before its end.
//!
//! A Responses API stream means the same for the same answer: each text, refusal, reasoning or
//! function-call arguments delta event is one token-bearing item (reasoning ones count as
//! reasoning), `response.completed` or `response.incomplete` ends the request with the tokens
//! of `response.usage` and the finish reason the SSE parser reads in it, `response.failed` and
//! `error` end it with their class; a stream that ends before its last event was cut off
//! (`transport`). See [`meter_response_stream`].
//!
//! What async-openai does not show the meter:
//!
//! - Reasoning deltas of a chat stream: its delta type has no `reasoning_content`, so a chunk
//!   that only carries reasoning is no token, and TTFT waits for the first content, refusal or
//!   tool call (a Responses stream's reasoning events are read).
//! - `[DONE]`: async-openai ends its stream there, and also when the body ends without it, so
//!   a body cut off cleanly is a success (a reset or a body cut mid-chunk is a `transport`
//!   error).
//! - Responses events it does not know: async-openai gives them as an `Err` item
//!   (`JSONDeserialize`), which ends the request as a `transport` error ([`error_class`]).
//!
//! async-openai's client retries a 429, a 5xx and a failed connection before `create_stream`
//! returns (3 times by default, with backoff and `retry-after`): [`send`] records them as one
//! request, from the first attempt to the last, ending with the last error's class.
//!
//! Chunks are timed when the metered stream yields them (async-openai parses them on a task
//! of its own and passes them through a channel).
//!
//! # Examples
//!
//! ```no_run
//! use async_openai::config::OpenAIConfig;
//! use async_openai::types::chat::{
//!     ChatCompletionRequestUserMessage, ChatCompletionStreamOptions,
//!     CreateChatCompletionRequestArgs,
//! };
//! use futures_util::StreamExt;
//! use tokenmeter::{Labels, Meter, sink::InMemorySink};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let memory = InMemorySink::new();
//! let meter = Meter::builder().sink(memory.clone()).build();
//! let series = meter.series(&Labels::client("chat").request_model("my-model"));
//!
//! let client = async_openai::Client::with_config(
//!     OpenAIConfig::new().with_api_base("http://127.0.0.1:8000/v1"),
//! );
//! let ask = CreateChatCompletionRequestArgs::default()
//!     .model("my-model")
//!     .messages([ChatCompletionRequestUserMessage::from("Hello").into()])
//!     .stream_options(ChatCompletionStreamOptions {
//!         include_usage: Some(true),
//!         include_obfuscation: None,
//!     })
//!     .build()?;
//!
//! // The request starts before the call: `send` awaits it.
//! let chat = client.chat();
//! let mut chunks = tokenmeter_openai::async_openai::send(chat.create_stream(ask), series.start()).await?;
//! while let Some(chunk) = chunks.next().await {
//!     for choice in chunk?.choices {
//!         print!("{}", choice.delta.content.unwrap_or_default());
//!     }
//! }
//! println!("\n{}", memory.report());
//! # Ok(()) }
//! ```

mod chunks;
mod class;
mod events;
mod metered;

pub use chunks::StreamChunk;
pub use class::error_class;
pub use metered::{
    MeteredChatStream, MeteredCompletionStream, MeteredResponseStream, MeteredStream,
    meter_chat_stream, meter_completion_stream, meter_response_stream, send,
};

#[cfg(test)]
mod tests;
