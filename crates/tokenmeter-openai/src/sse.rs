//! [`SseChunks`]: the body of a streaming completion (any stream of byte chunks) as parsed,
//! timestamped [`Chunk`]s, with every way it can go wrong as a classified [`StreamError`].

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use pin_project_lite::pin_project;
use tokenmeter::{Clock, ErrorClass};

use crate::bom::SkipBom;
use crate::chunk::{self, ChunkError, ServerError};
use crate::clock::EventClock;
use crate::decode::{Decoder, Event};
use crate::error::{StatusError, StreamError, TransportError};
use crate::item::Chunk;
use crate::skipped::Skipped;

/// How much of an error response's body is read for its message.
pub const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The default limit of one SSE event or line, in bytes (4 MiB): see
/// [`SseChunks::max_event_size`].
pub const DEFAULT_MAX_EVENT_SIZE: usize = 4 << 20;

/// The most body bytes one poll decodes: past them the stream wakes itself and returns
/// `Pending`, so that a task racing it against a timer sees the timer however fast the bytes
/// come (one poll does at most this much SSE work and parses one event's JSON).
const BYTES_PER_POLL: usize = 256 * 1024;

/// Bytes of the leftover buffer kept between pieces; a larger one is freed when empty.
const KEPT_CAPACITY: usize = 64 * 1024;

pin_project! {
    #[project = BodyProj]
    enum Body<S> {
        Events {
            #[pin]
            raw: SkipBom<S>,
            // The undecoded rest of a piece in which an event ended (or the poll's budget
            // did), from `at`: each byte is copied here at most once.
            rest: Vec<u8>,
            at: usize,
            decoder: Decoder,
        },
        Status { #[pin] raw: S, status: u16, bytes: Vec<u8> },
    }
}

pin_project! {
    /// The chunks of a streaming completion, parsed from its body as it arrives.
    ///
    /// The body is any stream of `Result<B, E>` where `B: AsRef<[u8]>` (`Bytes`, `Vec<u8>`,
    /// `&str`, ...) and `E` is a [`TransportError`]: a `reqwest` body, a hyper body mapped to
    /// bytes, or an in-memory stream with [`Infallible`](std::convert::Infallible) errors for
    /// tests and fuzzing. Events may be split across byte chunks in any way.
    ///
    /// Items, in order:
    ///
    /// - `Ok(Chunk)` for every data event of the default type (`message`) or of a Responses
    ///   API type (`event: response.output_text.delta`, ...), stamped with [`EventClock::now`] when it has been
    ///   parsed; the role frame, usage chunk and `[DONE]` are chunks with 0 tokens (`done` is set
    ///   for `[DONE]`, and the stream ends with it: what follows is not read, so a body left
    ///   open or garbage after `[DONE]` changes nothing; [`into_body`](SseChunks::into_body)
    ///   gives the rest of the body to drain for connection reuse); events that are valid
    ///   SSE but not chunks are skipped, not errors, and counted ([`SseChunks::skipped`]): an
    ///   event of another type than `message` or `error` (an `event: ping` with `data: pong`),
    ///   an event with empty data (an empty `data:` line), and comments;
    /// - at most one `Err(StreamError)`, after which the stream ends: a non-2xx status
    ///   ([`SseChunks::with_status`]), a transport error, invalid UTF-8 or SSE, a chunk that is
    ///   not JSON of a completion chunk, an error object or `error` event, an event or line
    ///   longer than [`max_event_size`](SseChunks::max_event_size), or a body that ended
    ///   before `[DONE]` and before any finish reason (truncated; a Responses API stream has
    ///   no `[DONE]`: its `response.completed` or `response.incomplete` ends it as `[DONE]`
    ///   does, with its finish reason, and what follows is not read).
    ///
    /// Decoding is linear in the bytes (each byte is scanned once), memory is bounded by the
    /// event size limit, and one poll decodes at most 256 KiB without yielding, so a deadline
    /// raced against this stream fires on time whatever the server sends.
    ///
    /// Meter it with [`SseChunks::meter`].
    ///
    /// # Examples
    ///
    /// Driving it from bytes in memory, cut anywhere (the way a fuzz target does):
    ///
    /// ```
    /// # futures_executor::block_on(async {
    /// use std::convert::Infallible;
    /// use futures_util::{StreamExt, stream};
    /// use tokenmeter::Clock;
    /// use tokenmeter_openai::{SseChunks, StreamError};
    ///
    /// let body: Vec<Vec<u8>> = vec![
    ///     b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\nda".to_vec(),
    ///     b"ta: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n".to_vec(),
    /// ];
    /// let bytes = stream::iter(body.into_iter().map(Ok::<_, Infallible>));
    /// let items: Vec<_> = SseChunks::new(bytes, Clock::default()).collect().await;
    /// let tokens: Vec<u32> = items.iter().flatten().map(|c| c.tokens()).collect();
    /// assert_eq!(tokens, [0, 1]); // the role frame carries no token
    /// assert_eq!(items[2], Err(StreamError::Truncated)); // no [DONE], no finish reason
    /// # });
    /// ```
    #[must_use = "streams do nothing unless polled"]
    pub struct SseChunks<S, C = Clock> {
        #[pin]
        body: Body<S>,
        clock: C,
        done: bool,
        finished: bool,
        ended: bool,
        skipped: Skipped,
    }
}

impl<S, C> SseChunks<S, C> {
    /// The chunks of a successful (2xx) response's body, stamped by `clock` (usually the
    /// meter's [`Clock`]: `request.series().clock().clone()`).
    pub fn new(body: S, clock: C) -> Self {
        Self::with_status(200, body, clock)
    }

    /// The chunks of a response with HTTP status `status`. For a status other than 2xx the body
    /// is read (up to [`ERROR_BODY_LIMIT`] bytes) and the only item is
    /// `Err(StreamError::Status(..))`, classified from the status and the body's error object.
    pub fn with_status(status: u16, body: S, clock: C) -> Self {
        let body = if (200..300).contains(&status) {
            Body::Events {
                raw: SkipBom::new(body),
                rest: Vec::new(),
                at: 0,
                decoder: Decoder::new(DEFAULT_MAX_EVENT_SIZE),
            }
        } else {
            Body::Status {
                raw: body,
                status,
                bytes: Vec::new(),
            }
        };
        Self {
            body,
            clock,
            done: false,
            finished: false,
            ended: false,
            skipped: Skipped::default(),
        }
    }

    /// What was read so far and skipped because it is not a chunk (see [`Skipped`]).
    pub fn skipped(&self) -> Skipped {
        let mut skipped = self.skipped;
        if let Body::Events { decoder, .. } = &self.body {
            skipped.comments = decoder.comments();
        }
        skipped
    }

    /// Sets the limit of one SSE event (all its lines, comments included) and of one line, in
    /// bytes ([`DEFAULT_MAX_EVENT_SIZE`], 4 MiB, by default). An event or a line longer than it
    /// ends the stream with [`StreamError::EventTooLarge`] (class `transport`) before more of
    /// it is kept, so a server cannot make the reader buffer without bound.
    ///
    /// ```
    /// # futures_executor::block_on(async {
    /// use futures_util::{StreamExt, stream};
    /// use tokenmeter::Clock;
    /// use tokenmeter_openai::{SseChunks, StreamError};
    ///
    /// let line = format!("data: {}\n\n", "x".repeat(100));
    /// let body = stream::iter([Ok::<_, std::io::Error>(line)]);
    /// let items: Vec<_> = SseChunks::new(body, Clock::default()).max_event_size(64).collect().await;
    /// assert_eq!(items, [Err(StreamError::EventTooLarge { limit: 64 })]);
    /// # });
    /// ```
    pub fn max_event_size(mut self, bytes: usize) -> Self {
        if let Body::Events { decoder, .. } = &mut self.body {
            decoder.set_max(bytes);
        }
        self
    }

    /// The clock that stamps the chunks.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The body, as far as it was not read: after `[DONE]`, read what is left of it (with a
    /// bound of your own) to let the HTTP client reuse the connection.
    pub fn into_body(self) -> S {
        match self.body {
            Body::Events { raw, .. } => raw.into_inner(),
            Body::Status { raw, .. } => raw,
        }
    }
}

impl<S, C> fmt::Debug for SseChunks<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = match &self.body {
            Body::Events { .. } => None,
            Body::Status { status, .. } => Some(*status),
        };
        f.debug_struct("SseChunks")
            .field("error_status", &status)
            .field("done", &self.done)
            .field("finished", &self.finished)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<S, B, E, C> Stream for SseChunks<S, C>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: TransportError,
    C: EventClock,
{
    type Item = Result<Chunk, StreamError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        if *this.ended {
            return Poll::Ready(None);
        }
        let mut state = State {
            clock: this.clock,
            done: this.done,
            finished: this.finished,
            skipped: this.skipped,
        };
        let item = match this.body.project() {
            BodyProj::Status { raw, status, bytes } => match drain(raw, bytes, cx) {
                Poll::Ready(()) => Some(Err(StreamError::Status(StatusError::new(*status, bytes)))),
                Poll::Pending => return Poll::Pending,
            },
            BodyProj::Events {
                raw,
                rest,
                at,
                decoder,
            } => match state.next(raw, rest, at, decoder, cx) {
                Poll::Ready(item) => item,
                Poll::Pending => return Poll::Pending,
            },
        };
        *this.ended = !matches!(item, Some(Ok(_)));
        Poll::Ready(item)
    }
}

/// Reads an error body until its end, an error, or the limit.
fn drain<S, B, E>(mut raw: Pin<&mut S>, bytes: &mut Vec<u8>, cx: &mut Context<'_>) -> Poll<()>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    loop {
        match raw.as_mut().poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Some(Ok(data))) => {
                let data = data.as_ref();
                let room = ERROR_BODY_LIMIT.saturating_sub(bytes.len());
                bytes.extend_from_slice(&data[..data.len().min(room)]);
                if bytes.len() >= ERROR_BODY_LIMIT {
                    return Poll::Ready(());
                }
            }
            // What was read is the best message there is; the status says the rest.
            Poll::Ready(Some(Err(_)) | None) => return Poll::Ready(()),
        }
    }
}

/// The event-reading state of [`SseChunks`], borrowed for one poll.
struct State<'a, C> {
    clock: &'a C,
    done: &'a mut bool,
    finished: &'a mut bool,
    skipped: &'a mut Skipped,
}

impl<C: EventClock> State<'_, C> {
    /// The next item; `None` ends the stream.
    fn next<S, B, E>(
        &mut self,
        mut raw: Pin<&mut SkipBom<S>>,
        rest: &mut Vec<u8>,
        at: &mut usize,
        decoder: &mut Decoder,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Chunk, StreamError>>>
    where
        S: Stream<Item = Result<B, E>>,
        B: AsRef<[u8]>,
        E: TransportError,
    {
        if *self.done {
            return Poll::Ready(None); // what follows [DONE] is not read
        }
        let mut budget = BYTES_PER_POLL;
        loop {
            // What is left of the last piece.
            while *at < rest.len() {
                let (used, item) = decode(decoder, &rest[*at..], &mut budget);
                *at += used;
                if *at == rest.len() {
                    rest.clear();
                    *at = 0;
                    if rest.capacity() > KEPT_CAPACITY {
                        *rest = Vec::new();
                    }
                }
                if let Some(item) = item.and_then(|item| self.item(item)) {
                    return Poll::Ready(Some(item));
                }
                if budget == 0 {
                    return yielded(cx);
                }
            }
            let piece = match raw.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(piece))) => piece,
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(failed(error)))),
                Poll::Ready(None) => {
                    return Poll::Ready(match decoder.end() {
                        Some(error) => Some(Err(error)),
                        None if *self.finished => None,
                        None => Some(Err(StreamError::Truncated)),
                    });
                }
            };
            let bytes = piece.as_ref();
            let (used, item) = decode(decoder, bytes, &mut budget);
            if item.is_some() || budget == 0 {
                // Kept for the next poll (not read at all after an error or [DONE]).
                rest.extend_from_slice(&bytes[used..]);
            }
            if let Some(item) = item.and_then(|item| self.item(item)) {
                return Poll::Ready(Some(item));
            }
            if budget == 0 {
                return yielded(cx);
            }
        }
    }

    /// The item a decoded event or error gives; `None` for an event that is skipped.
    fn item(&mut self, item: Result<Event, StreamError>) -> Option<Result<Chunk, StreamError>> {
        match item {
            Ok(event) => self.chunk(event),
            Err(error) => Some(Err(error)),
        }
    }

    /// The chunk of one event; `None` for an event that is not a chunk (counted in
    /// [`Skipped`]). `[DONE]` ends the stream whatever the event's type (but `error`), as
    /// OpenAI's SDK reads it.
    fn chunk(&mut self, event: Event) -> Option<Result<Chunk, StreamError>> {
        let at = self.clock.now();
        if event.error {
            return Some(Err(StreamError::Server(error_event(&event.data))));
        }
        let data = event.data.trim();
        if data == "[DONE]" {
            *self.done = true;
            return Some(Ok(Chunk::done_at(at)));
        }
        if event.other {
            self.skipped.other_events += 1;
            return None;
        }
        if data.is_empty() {
            self.skipped.empty_events += 1;
            return None;
        }
        Some(self.parse(at, event))
    }

    fn parse(&mut self, at: std::time::Duration, event: Event) -> Result<Chunk, StreamError> {
        match chunk::parse(&event.data) {
            Ok(parsed) => {
                *self.finished |= parsed.finish.is_some();
                // A Responses stream's last event ends it as `[DONE]` does.
                *self.done |= parsed.terminal;
                Ok(Chunk::new(at, parsed, event.data))
            }
            Err(ChunkError::Malformed(message)) => Err(StreamError::Malformed(message)),
            Err(ChunkError::Server(error)) => Err(StreamError::Server(error)),
        }
    }
}

/// Decodes at most `budget` bytes of `bytes` (up to the next event or error).
fn decode(
    decoder: &mut Decoder,
    bytes: &[u8],
    budget: &mut usize,
) -> (usize, Option<Result<Event, StreamError>>) {
    let (used, item) = decoder.decode(&bytes[..bytes.len().min(*budget)]);
    *budget -= used;
    (used, item)
}

/// Gives the executor back its thread after a poll's worth of bytes.
fn yielded<T>(cx: &mut Context<'_>) -> Poll<T> {
    cx.waker().wake_by_ref();
    Poll::Pending
}

/// The error an `event: error` carried.
fn error_event(data: &str) -> ServerError {
    match serde_json::from_str::<serde_json::Value>(data) {
        Ok(value) => chunk::server_error(value.get("error").unwrap_or(&value)),
        Err(_) => ServerError {
            class: ErrorClass::ServerError,
            message: chunk::excerpt(data),
        },
    }
}

fn failed<E: TransportError>(error: E) -> StreamError {
    StreamError::Transport {
        class: error.class(),
        message: format!("reading the stream failed: {}", error.describe()),
    }
}
