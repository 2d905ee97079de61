//! [`MeteredChunks`]: an [`SseChunks`] stream measured by a tokenmeter [`Request`].

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use pin_project_lite::pin_project;
use tokenmeter::stream::Observe;
use tokenmeter::{Clock, ErrorClass, Metered, Observation, Outcome, Request};

use crate::clock::EventClock;
use crate::error::StreamError;
use crate::item::Chunk;
use crate::sse::SseChunks;

/// What the meter is told about each item of an [`SseChunks`] stream: the chunk's token-bearing
/// deltas (0 for role frames, usage chunks and `[DONE]`: they do not set TTFT), its finish
/// reason, or the error's class, which ends the request.
///
/// Each chunk is observed at [`Chunk::at`], the instant the reader parsed it
/// ([`Observation::at`]): the request's record holds exactly the times the chunks carry.
///
/// A stream that ends (at `[DONE]` or at the end of the body) before any chunk carried a token
/// ends as [`ErrorClass::EmptyResponse`], as `vllm bench serve` counts it: a role frame and a
/// finish reason are not an answer.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChunkObserver {
    tokens_seen: bool,
}

impl ChunkObserver {
    /// The observer.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Observe<Result<Chunk, StreamError>> for ChunkObserver {
    #[inline]
    fn observe(&mut self, item: &Result<Chunk, StreamError>) -> Observation {
        match item {
            Ok(chunk) => {
                let parsed = &chunk.parsed;
                self.tokens_seen |= parsed.tokens > 0;
                let observation = if parsed.reasoning > 0 && parsed.reasoning == parsed.tokens {
                    Observation::reasoning(parsed.tokens)
                } else {
                    Observation::tokens(parsed.tokens)
                }
                .at(chunk.at);
                match chunk.parsed.finish {
                    Some(reason) => observation.with_finish(reason),
                    None => observation,
                }
            }
            Err(error) => Observation::error(error.class()),
        }
    }

    fn finish(&mut self) -> Outcome {
        if self.tokens_seen {
            Outcome::Success
        } else {
            Outcome::Error(ErrorClass::EmptyResponse)
        }
    }
}

pin_project! {
    /// The chunks of a streaming completion, each one measured as it passes: a tokenmeter
    /// [`Metered`] stream over [`SseChunks`] that also takes the token counts from `usage`.
    ///
    /// - TTFT: the first chunk with a content, reasoning or tool-call delta (never the role
    ///   frame). ITL: the gaps between token-bearing chunks. Time to first output token: the
    ///   first such chunk that is not only reasoning.
    /// - Cached input tokens from `usage.prompt_tokens_details.cached_tokens`.
    /// - Tokens: `usage.completion_tokens` when the stream sends it (ask with
    ///   `"stream_options": {"include_usage": true}`), else one per token-bearing delta;
    ///   input tokens from `usage.prompt_tokens` (see
    ///   [`input_tokens_from_usage`](MeteredChunks::input_tokens_from_usage)).
    /// - The finish reason of the last choice that gave one.
    /// - The outcome: success at the end of a complete body that carried a token
    ///   ([`ErrorClass::EmptyResponse`] when none did); the error's class on the first
    ///   `Err` item (a non-2xx status, a transport error, a malformed, truncated or failed
    ///   stream); `cancelled` when dropped before its end.
    ///
    /// Built by [`SseChunks::meter`], or by `meter_response` (feature `reqwest`).
    ///
    /// # Examples
    ///
    /// ```
    /// # futures_executor::block_on(async {
    /// use futures_util::{StreamExt, stream};
    /// use tokenmeter::{FinishReason, Labels, Meter, Outcome, sink::InMemorySink};
    /// use tokenmeter_openai::SseChunks;
    ///
    /// let memory = InMemorySink::new();
    /// let meter = Meter::builder().sink(memory.clone()).build();
    /// let request = meter.series(&Labels::client("chat")).start();
    /// let clock = request.series().clock().clone();
    ///
    /// let body = stream::iter([Ok::<_, std::io::Error>(concat!(
    ///     "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
    ///     "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\n",
    ///     "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2}}\n\n",
    ///     "data: [DONE]\n\n",
    /// ))]);
    /// let text: String = SseChunks::new(body, clock)
    ///     .meter(request)
    ///     .filter_map(|item| async move { item.ok().map(|chunk| chunk.text()) })
    ///     .collect()
    ///     .await;
    ///
    /// let record = &memory.records()[0];
    /// assert_eq!(text, "Hi");
    /// assert_eq!(record.outcome, Outcome::Success);
    /// assert_eq!((record.input_tokens, record.output_tokens), (Some(9), 2)); // from usage
    /// assert_eq!(record.finish_reason, Some(FinishReason::Stop));
    /// # });
    /// ```
    #[must_use = "streams do nothing unless polled"]
    #[derive(Debug)]
    pub struct MeteredChunks<S, C = Clock> {
        #[pin]
        inner: Metered<SseChunks<S, C>, ChunkObserver>,
        input_from_usage: bool,
    }
}

impl<S, C> SseChunks<S, C>
where
    Self: Stream<Item = Result<Chunk, StreamError>>,
    C: EventClock,
{
    /// Measures these chunks as `request` (started when the request was sent). The chunks'
    /// clock must read the same time line as the request's series (its clock, or one built on
    /// the same source): each token is recorded at its chunk's [`Chunk::at`].
    pub fn meter(self, request: Request) -> MeteredChunks<S, C> {
        MeteredChunks {
            inner: Metered::new(self, request, ChunkObserver::new()),
            input_from_usage: true,
        }
    }
}

impl<S, C> MeteredChunks<S, C> {
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
    /// `request_mut().end(Outcome::Error(ErrorClass::Timeout))`) or mark it degraded.
    pub fn request_mut(&mut self) -> &mut Request {
        self.inner.request_mut()
    }

    /// The chunks and the request, with no side effect (see [`Metered::into_parts`]): dropping
    /// the request ends it as cancelled if it had not ended.
    pub fn into_parts(self) -> (SseChunks<S, C>, Request) {
        self.inner.into_parts()
    }
}

impl<S, C> Stream for MeteredChunks<S, C>
where
    SseChunks<S, C>: Stream<Item = Result<Chunk, StreamError>>,
    C: EventClock,
{
    type Item = Result<Chunk, StreamError>;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let mut inner = this.inner;
        let item = match inner.as_mut().poll_next(cx) {
            Poll::Ready(item) => item,
            Poll::Pending => return Poll::Pending,
        };
        if let Some(Ok(chunk)) = &item
            && let Some(usage) = chunk.parsed.usage
        {
            usage.record(inner.request_pin_mut(), *this.input_from_usage);
        }
        Poll::Ready(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}
