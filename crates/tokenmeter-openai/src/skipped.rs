//! [`Skipped`]: what [`SseChunks`](crate::SseChunks) read and skipped because it is not a chunk.

/// The parts of a stream that are valid server-sent events but not completion chunks, which
/// [`SseChunks`](crate::SseChunks) skips (as the SSE specification's `onmessage` and
/// OpenAI-compatible clients do) instead of failing the stream, counted so that a program can
/// say so ([`SseChunks::skipped`](crate::SseChunks::skipped)).
///
/// ```
/// # futures_executor::block_on(async {
/// use futures_util::{StreamExt, stream};
/// use tokenmeter::Clock;
/// use tokenmeter_openai::SseChunks;
///
/// let body = stream::iter([Ok::<_, std::io::Error>(concat!(
///     ": keep-alive\n\n",
///     "event: ping\ndata: pong\n\n",
///     "data:\n\n",
///     "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n",
///     "data: [DONE]\n\n",
/// ))]);
/// let mut chunks = SseChunks::new(body, Clock::default());
/// let mut tokens = 0;
/// while let Some(chunk) = chunks.next().await {
///     tokens += chunk.unwrap().tokens();
/// }
/// let skipped = chunks.skipped();
/// assert_eq!(tokens, 1);
/// assert_eq!((skipped.other_events, skipped.empty_events, skipped.comments), (1, 1, 1));
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Skipped {
    /// Events whose type (`event:`) is another name than `message` (the default) or `error`,
    /// such as a `ping`: whatever their data, they are not chunks.
    pub other_events: u64,
    /// Events of the default type whose data is empty or only white space (an empty `data:`
    /// line, which the specification dispatches as an event with empty data).
    pub empty_events: u64,
    /// Comment lines (starting with `:`), often keep-alives; the grammar ignores them.
    pub comments: u64,
}

impl Skipped {
    /// Events skipped (comments are not events): [`other_events`](Self::other_events) +
    /// [`empty_events`](Self::empty_events).
    pub fn events(&self) -> u64 {
        self.other_events.saturating_add(self.empty_events)
    }
}
