//! [`SseChunks`]: SSE events of a response body, timestamped as they are parsed and turned
//! into [`Chunk`]s, with every way a stream can go wrong as a classified [`StreamError`].

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use eventsource_stream::{EventStream, EventStreamError};
use futures_util::Stream;
use pin_project_lite::pin_project;
use tokenmeter::{ErrorClass, Observation};

use crate::bench::clock::{self, BenchClock};
use tokenmeter_openai::chunk::{self, ChunkError, Parsed, ServerError};

/// One data event, parsed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Chunk {
    /// When it was parsed, on the bench clock.
    pub(crate) at: Duration,
    /// What it carried.
    pub(crate) parsed: Parsed,
    /// True for the `[DONE]` sentinel.
    pub(crate) done: bool,
}

/// Why a stream ended badly.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StreamError {
    /// The body could not be read (reset, closed mid-chunk, ...).
    Transport(ErrorClass, String),
    /// An event was not valid SSE, UTF-8 or JSON of the expected shape.
    Malformed(String),
    /// The server sent an error object or an `error` event.
    Server(ServerError),
    /// The body ended before `[DONE]` and before any finish reason.
    Truncated,
}

impl StreamError {
    /// The class the request ends with.
    pub(crate) fn class(&self) -> ErrorClass {
        match self {
            StreamError::Transport(class, _) => *class,
            StreamError::Malformed(_) | StreamError::Truncated => ErrorClass::Transport,
            StreamError::Server(e) => e.class,
        }
    }

    /// A message for the trace.
    pub(crate) fn message(&self) -> String {
        match self {
            StreamError::Transport(_, m) => format!("reading the stream failed: {m}"),
            StreamError::Malformed(m) => format!("malformed stream: {m}"),
            StreamError::Server(e) => format!("the server sent an error: {}", e.message),
            StreamError::Truncated => {
                "the stream ended before [DONE] and before any finish_reason (truncated body)"
                    .into()
            }
        }
    }
}

/// What the meter is told about one item: its tokens, finish reason or error. A token-bearing
/// chunk latches its parse time so the core records that same instant.
pub(crate) fn observe(item: &Result<Chunk, StreamError>) -> Observation {
    match item {
        Ok(chunk) => {
            if chunk.parsed.tokens > 0 {
                clock::latch(chunk.at);
            }
            let observation = Observation::tokens(chunk.parsed.tokens);
            match chunk.parsed.finish {
                Some(reason) => observation.with_finish(reason),
                None => observation,
            }
        }
        Err(error) => Observation::error(error.class()),
    }
}

pin_project! {
    /// Parsed, timestamped chunks of one response body.
    pub(crate) struct SseChunks<S> {
        #[pin]
        inner: EventStream<S>,
        clock: BenchClock,
        done: bool,
        finished: bool,
        ended: bool,
    }
}

impl<S> SseChunks<S> {
    /// Wraps an SSE event stream.
    pub(crate) fn new(inner: EventStream<S>, clock: BenchClock) -> Self {
        Self {
            inner,
            clock,
            done: false,
            finished: false,
            ended: false,
        }
    }
}

fn transport(error: reqwest::Error) -> StreamError {
    let class = if error.is_timeout() {
        ErrorClass::Timeout
    } else {
        ErrorClass::Transport
    };
    StreamError::Transport(class, super::describe(&error.without_url()))
}

impl<S, B> Stream for SseChunks<S>
where
    S: Stream<Item = Result<B, reqwest::Error>>,
    B: AsRef<[u8]>,
{
    type Item = Result<Chunk, StreamError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            if *this.ended {
                return Poll::Ready(None);
            }
            let event = match this.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(event))) => event,
                Poll::Ready(Some(Err(error))) => {
                    *this.ended = true;
                    let error = match error {
                        EventStreamError::Transport(e) => transport(e),
                        EventStreamError::Utf8(e) => StreamError::Malformed(format!("{e}")),
                        EventStreamError::Parser(e) => {
                            StreamError::Malformed(format!("not server-sent events: {e}"))
                        }
                    };
                    return Poll::Ready(Some(Err(error)));
                }
                Poll::Ready(None) => {
                    *this.ended = true;
                    if *this.done || *this.finished {
                        return Poll::Ready(None);
                    }
                    return Poll::Ready(Some(Err(StreamError::Truncated)));
                }
            };
            let at = this.clock.now();
            if *this.done {
                continue; // anything after [DONE] is ignored
            }
            if event.event == "error" {
                *this.ended = true;
                let error = match serde_json::from_str::<serde_json::Value>(&event.data) {
                    Ok(value) => chunk::server_error(value.get("error").unwrap_or(&value)),
                    Err(_) => ServerError {
                        class: ErrorClass::ServerError,
                        message: chunk::excerpt(&event.data),
                    },
                };
                return Poll::Ready(Some(Err(StreamError::Server(error))));
            }
            if event.data.trim() == "[DONE]" {
                *this.done = true;
                return Poll::Ready(Some(Ok(Chunk {
                    at,
                    parsed: Parsed::default(),
                    done: true,
                })));
            }
            return Poll::Ready(Some(match chunk::parse(&event.data) {
                Ok(parsed) => {
                    *this.finished |= parsed.finish.is_some();
                    Ok(Chunk {
                        at,
                        parsed,
                        done: false,
                    })
                }
                Err(ChunkError::Malformed(m)) => {
                    *this.ended = true;
                    Err(StreamError::Malformed(m))
                }
                Err(ChunkError::Server(e)) => {
                    *this.ended = true;
                    Err(StreamError::Server(e))
                }
            }));
        }
    }
}
