//! [`Chunk`]: one data event of the stream, parsed and timestamped.

use std::time::Duration;

use crate::chunk::{self, Parsed};

/// One data event of a streaming completion: when it was parsed, what it carried for the meter,
/// and its raw JSON for anything else a program wants from it.
///
/// # Examples
///
/// ```
/// # futures_executor::block_on(async {
/// use futures_util::{StreamExt, stream};
/// use tokenmeter::Clock;
/// use tokenmeter_openai::SseChunks;
///
/// let body = stream::iter([Ok::<_, std::io::Error>(
///     "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n",
/// )]);
/// let chunks: Vec<_> = SseChunks::new(body, Clock::default()).collect().await;
/// let first = chunks[0].as_ref().unwrap();
/// assert_eq!((first.tokens(), first.text().as_str(), first.done), (1, "Hi", false));
/// assert!(chunks[1].as_ref().unwrap().done);
/// # });
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Chunk {
    /// When the event had been parsed, on the stream's [`EventClock`](crate::EventClock).
    pub at: Duration,
    /// What it carried: token-bearing deltas, finish reason, usage, response id (all empty for
    /// `[DONE]`).
    pub parsed: Parsed,
    /// True for the `[DONE]` sentinel.
    pub done: bool,
    /// The event's data: the chunk's JSON (`[DONE]` for the sentinel).
    pub data: String,
}

impl Chunk {
    /// A parsed data event.
    pub fn new(at: Duration, parsed: Parsed, data: String) -> Self {
        Self {
            at,
            parsed,
            done: false,
            data,
        }
    }

    /// The `[DONE]` sentinel, seen at `at`.
    pub fn done_at(at: Duration) -> Self {
        Self {
            at,
            parsed: Parsed::default(),
            done: true,
            data: "[DONE]".to_owned(),
        }
    }

    /// Token-bearing deltas in this chunk (0 for a role frame, a usage chunk or `[DONE]`).
    pub fn tokens(&self) -> u32 {
        self.parsed.tokens
    }

    /// The text this chunk carried (content, reasoning or completion text), parsed from
    /// [`data`](Chunk::data) on each call; empty for frames without text.
    pub fn text(&self) -> String {
        if self.done {
            String::new()
        } else {
            chunk::text(&self.data)
        }
    }
}
