//! [`MeteredStream`]: an async-openai stream measured by a tokenmeter [`Request`], and the
//! functions that build one.

use std::fmt;
use std::future::IntoFuture;
use std::pin::Pin;
use std::task::{Context, Poll};

use ::async_openai::error::OpenAIError;
use ::async_openai::types::chat::ChatCompletionResponseStream;
use ::async_openai::types::completions::CompletionResponseStream;
use ::async_openai::types::responses::ResponseStream;
use futures_core::Stream;
use pin_project_lite::pin_project;
use tokenmeter::{ErrorClass, Metered, Request};

use super::chunks::{ChunkObserver, StreamChunk};
use super::class::error_class;

/// A metered chat completion stream ([`meter_chat_stream`], or [`send`] of
/// `client.chat().create_stream(..)`).
pub type MeteredChatStream = MeteredStream<ChatCompletionResponseStream>;

/// A metered text completion stream ([`meter_completion_stream`], or [`send`] of
/// `client.completions().create_stream(..)`).
pub type MeteredCompletionStream = MeteredStream<CompletionResponseStream>;

/// A metered Responses API stream ([`meter_response_stream`], or [`send`] of
/// `client.responses().create_stream(..)`).
pub type MeteredResponseStream = MeteredStream<ResponseStream>;

pin_project! {
    /// An async-openai stream, each item measured as it passes and yielded unchanged: a
    /// tokenmeter [`Metered`] stream that also takes the token counts from `usage`.
    ///
    /// - TTFT: the first chunk with a content, refusal or tool-call delta (or completion
    ///   text); never the role frame or the usage chunk. ITL: the gaps between such chunks.
    /// - Tokens: `usage.completion_tokens` when the stream sends it (ask with
    ///   `stream_options.include_usage`), else one per token-bearing choice; input tokens from
    ///   `usage.prompt_tokens` (see
    ///   [`input_tokens_from_usage`](MeteredStream::input_tokens_from_usage)).
    /// - The finish reason of the last choice that gave one.
    /// - The outcome, once: success when the stream ends; the class of the first `Err` item
    ///   ([`error_class`]); `cancelled` when dropped before its end.
    ///
    /// A Responses API stream is read the same way, from its typed events: see
    /// [`meter_response_stream`].
    ///
    /// Built by [`meter_chat_stream`], [`meter_completion_stream`],
    /// [`meter_response_stream`] or [`send`].
    ///
    /// # Examples
    ///
    /// ```
    /// # futures_executor::block_on(async {
    /// use async_openai::types::chat::{ChatCompletionResponseStream, CreateChatCompletionStreamResponse};
    /// use futures_util::{StreamExt, stream};
    /// use tokenmeter::{FinishReason, Labels, Meter, Outcome, sink::InMemorySink};
    /// use tokenmeter_openai::async_openai::meter_chat_stream;
    ///
    /// let memory = InMemorySink::new();
    /// let meter = Meter::builder().sink(memory.clone()).build();
    /// let request = meter.series(&Labels::client("chat")).start();
    ///
    /// let chunk = |choices: &str, usage: &str| {
    ///     let json = format!(
    ///         r#"{{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{choices}],"usage":{usage}}}"#
    ///     );
    ///     Ok(serde_json::from_str::<CreateChatCompletionStreamResponse>(&json).unwrap())
    /// };
    /// let chunks: ChatCompletionResponseStream = Box::pin(stream::iter([
    ///     chunk(r#"{"index":0,"delta":{"role":"assistant","content":""}}"#, "null"),
    ///     chunk(r#"{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}"#, "null"),
    ///     chunk("", r#"{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}"#),
    /// ]));
    /// let items: Vec<_> = meter_chat_stream(chunks, request).collect().await;
    ///
    /// assert_eq!(items.len(), 3); // unchanged
    /// let record = &memory.records()[0];
    /// assert_eq!(record.outcome, Outcome::Success);
    /// assert_eq!((record.input_tokens, record.output_tokens), (Some(9), 2)); // from usage
    /// assert_eq!(record.finish_reason, Some(FinishReason::Stop));
    /// # });
    /// ```
    #[must_use = "streams do nothing unless polled"]
    pub struct MeteredStream<S> {
        #[pin]
        inner: Metered<S, ChunkObserver>,
        input_from_usage: bool,
    }
}

impl<S, T> MeteredStream<S>
where
    S: Stream<Item = Result<T, OpenAIError>>,
    T: StreamChunk,
{
    fn new(stream: S, request: Request) -> Self {
        Self {
            inner: Metered::new(stream, request, ChunkObserver::default()),
            input_from_usage: true,
        }
    }
}

impl<S> MeteredStream<S> {
    /// Whether `usage.prompt_tokens` replaces the request's input tokens (the default: `true`).
    /// Turn it off to keep a count of your own set with [`Request::set_input_tokens`].
    pub fn input_tokens_from_usage(mut self, yes: bool) -> Self {
        self.input_from_usage = yes;
        self
    }

    /// The request being measured.
    pub fn request(&self) -> &Request {
        self.inner.request()
    }

    /// The request being measured: end it yourself (for example with a timeout of your own,
    /// `request_mut().fail(ErrorClass::Timeout)`) or mark it degraded.
    pub fn request_mut(&mut self) -> &mut Request {
        self.inner.request_mut()
    }

    /// The stream and the request, with no side effect (see [`Metered::into_parts`]): dropping
    /// the request ends it as cancelled if it had not ended.
    pub fn into_parts(self) -> (S, Request) {
        self.inner.into_parts()
    }
}

/// The request and the settings: async-openai's streams are boxed trait objects, without
/// `Debug`.
impl<S> fmt::Debug for MeteredStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MeteredStream")
            .field("request", self.request())
            .field("input_from_usage", &self.input_from_usage)
            .finish_non_exhaustive()
    }
}

impl<S, T> Stream for MeteredStream<S>
where
    S: Stream<Item = Result<T, OpenAIError>>,
    T: StreamChunk,
{
    type Item = Result<T, OpenAIError>;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let mut inner = this.inner;
        let item = match inner.as_mut().poll_next(cx) {
            Poll::Ready(item) => item,
            Poll::Pending => return Poll::Pending,
        };
        let Some(Ok(chunk)) = &item else {
            return Poll::Ready(item);
        };
        let request = inner.request_pin_mut();
        if let Some(usage) = chunk.usage() {
            usage.record(request, *this.input_from_usage);
        }
        if chunk.ends_stream() && !request.is_ended() {
            // A Responses stream's last event: the answer is whole, as at `[DONE]`.
            if request.ttft().is_some() {
                request.succeed();
            } else {
                request.fail(ErrorClass::EmptyResponse);
            }
        }
        Poll::Ready(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

/// Meters a chat completion `stream` from `client.chat().create_stream(..)` as `request`,
/// started before that call: TTFT, tokens (from `usage` when sent), the finish reason and the
/// outcome (see [`MeteredStream`]). The items pass unchanged.
///
/// An error of `create_stream` itself (a non-2xx answer, a refused connection) never reaches a
/// stream: [`send`] meters those too.
///
/// # Examples
///
/// ```no_run
/// use async_openai::types::chat::CreateChatCompletionRequest;
/// use futures_util::StreamExt;
/// use tokenmeter::Series;
///
/// async fn chat(
///     client: &async_openai::Client<async_openai::config::OpenAIConfig>,
///     series: &Series,
///     ask: CreateChatCompletionRequest,
/// ) -> Result<(), async_openai::error::OpenAIError> {
///     let request = series.start(); // TTFT and E2E count from here
///     let stream = client.chat().create_stream(ask).await?;
///     let mut chunks = tokenmeter_openai::async_openai::meter_chat_stream(stream, request);
///     while let Some(chunk) = chunks.next().await {
///         for choice in chunk?.choices {
///             print!("{}", choice.delta.content.unwrap_or_default());
///         }
///     }
///     Ok(())
/// }
/// ```
pub fn meter_chat_stream(
    stream: ChatCompletionResponseStream,
    request: Request,
) -> MeteredChatStream {
    MeteredStream::new(stream, request)
}

/// Meters a text completion `stream` from `client.completions().create_stream(..)` as
/// `request`, started before that call: see [`meter_chat_stream`].
///
/// # Examples
///
/// ```no_run
/// use async_openai::types::completions::CreateCompletionRequest;
/// use futures_util::StreamExt;
/// use tokenmeter::Series;
///
/// async fn complete(
///     client: &async_openai::Client<async_openai::config::OpenAIConfig>,
///     series: &Series,
///     ask: CreateCompletionRequest,
/// ) -> Result<u64, async_openai::error::OpenAIError> {
///     let request = series.start();
///     let stream = client.completions().create_stream(ask).await?;
///     let mut chunks = tokenmeter_openai::async_openai::meter_completion_stream(stream, request);
///     while let Some(chunk) = chunks.next().await {
///         chunk?;
///     }
///     Ok(chunks.request().output_tokens())
/// }
/// ```
pub fn meter_completion_stream(
    stream: CompletionResponseStream,
    request: Request,
) -> MeteredCompletionStream {
    MeteredStream::new(stream, request)
}

/// Meters a Responses API `stream` from `client.responses().create_stream(..)` as `request`,
/// started before that call, so that TTFT, ITL, the token counts, the finish reason and the
/// outcome mean what they mean for the chat stream of the same answer:
///
/// | Event | Read as |
/// |---|---|
/// | `response.output_text.delta`, `response.refusal.delta`, `response.function_call_arguments.delta` | one token-bearing item, as a chat content, refusal or tool-call delta |
/// | `response.reasoning_text.delta`, `response.reasoning_summary_text.delta` | one token-bearing item of reasoning (the time to first output token waits for the next kind) |
/// | `response.completed` | the end: success (`empty_response` if no delta came); finish `stop`; tokens from `response.usage` (`input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`) |
/// | `response.incomplete`, or `response.completed` of a response whose `status` is `incomplete` | the end as above; finish from `response.incomplete_details.reason` (`max_output_tokens` is `length`), as the SSE parser reads it |
/// | `response.failed`, `error` | the server's error: its class, as the SSE parser classes it |
/// | any other event (created, in progress, items and parts added or done) | a frame without tokens |
///
/// The request ends at the last event: what follows is not read, and dropping the stream
/// after it changes nothing. Dropped before it: `cancelled`; ended before it (the body cut
/// cleanly, which async-openai does not report): `transport`. An event async-openai cannot
/// read is its `Err` item, classed by [`error_class`].
///
/// # Examples
///
/// ```
/// # futures_executor::block_on(async {
/// use async_openai::types::responses::{ResponseStream, ResponseStreamEvent};
/// use futures_util::{StreamExt, stream};
/// use tokenmeter::{FinishReason, Labels, Meter, Outcome, sink::InMemorySink};
/// use tokenmeter_openai::async_openai::meter_response_stream;
///
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().sink(memory.clone()).build();
/// let request = meter.series(&Labels::client("responses")).start();
///
/// let event = |json: &str| Ok(serde_json::from_str::<ResponseStreamEvent>(json).unwrap());
/// let events: ResponseStream = Box::pin(stream::iter([
///     event(r#"{"type":"response.output_text.delta","sequence_number":1,"item_id":"m",
///              "output_index":0,"content_index":0,"delta":"Hi"}"#),
///     event(r#"{"type":"response.completed","sequence_number":2,"response":{"id":"r",
///              "object":"response","created_at":0,"model":"m","status":"completed","output":[],
///              "usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":0},
///                       "output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},
///                       "total_tokens":10}}}"#),
/// ]));
/// let items: Vec<_> = meter_response_stream(events, request).collect().await;
///
/// assert_eq!(items.len(), 2); // unchanged
/// let record = &memory.records()[0];
/// assert_eq!(record.outcome, Outcome::Success);
/// assert_eq!((record.input_tokens, record.output_tokens), (Some(9), 1));
/// assert_eq!(record.finish_reason, Some(FinishReason::Stop));
/// # });
/// ```
pub fn meter_response_stream(stream: ResponseStream, request: Request) -> MeteredResponseStream {
    MeteredStream::new(stream, request)
}

/// Awaits `create` (`client.chat().create_stream(..)`, `client.completions().create_stream(..)`
/// or `client.responses().create_stream(..)`, not yet awaited) and meters the stream it gives as `request` (start it just before the
/// call). An error before any stream (a non-2xx answer such as 429 or 404, a refused
/// connection, the client's timeout) ends `request` with its [`error_class`] and is returned
/// unchanged; everything after is [`meter_chat_stream`] / [`meter_completion_stream`] /
/// [`meter_response_stream`].
///
/// Dropping the future before it is done (a timeout of your own around it) ends `request` as
/// `cancelled`.
///
/// # Examples
///
/// ```no_run
/// use async_openai::types::chat::CreateChatCompletionRequest;
/// use futures_util::StreamExt;
/// use tokenmeter::Meter;
/// use tokenmeter_openai::async_openai::send;
///
/// async fn chat(
///     client: &async_openai::Client<async_openai::config::OpenAIConfig>,
///     meter: &Meter,
///     ask: CreateChatCompletionRequest,
/// ) -> Result<u64, async_openai::error::OpenAIError> {
///     let series = meter.series(&tokenmeter::Labels::client("chat"));
///     let mut chunks = send(client.chat().create_stream(ask), series.start()).await?;
///     while let Some(chunk) = chunks.next().await {
///         chunk?;
///     }
///     Ok(chunks.request().output_tokens())
/// }
/// ```
pub async fn send<F, S, T>(create: F, mut request: Request) -> Result<MeteredStream<S>, OpenAIError>
where
    F: IntoFuture<Output = Result<S, OpenAIError>>,
    S: Stream<Item = Result<T, OpenAIError>>,
    T: StreamChunk,
{
    match create.await {
        Ok(stream) => Ok(MeteredStream::new(stream, request)),
        Err(error) => {
            request.fail(error_class(&error));
            Err(error)
        }
    }
}
