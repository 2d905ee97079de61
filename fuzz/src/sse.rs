//! `sse_chunks`: arbitrary bytes cut at arbitrary boundaries, read as the body of a streaming
//! completion by [`tokenmeter_openai::SseChunks`] (the bench client's reader) and metered by
//! [`SseChunks::meter`] on a [`ManualClock`] into an [`InMemorySink`](tokenmeter::sink::InMemorySink).
//!
//! Input layout: byte 0 holds the number `k` of cuts (low 4 bits) and the response (high 4
//! bits, see [`Response`]); the next `k` bytes are chunk lengths, the rest is the body; what
//! the lengths leave over is the last chunk. A seed is an SSE body with a `\x00` in front
//! (HTTP 200, one chunk). The clock moves 1 µs per chunk read.
//!
//! [`check`] asserts: nothing panics; the items are the same however the body is cut; at most
//! one error, and only as the last item; exactly one record, whose outcome is success or that
//! error's class; its output tokens are the last `usage.completion_tokens`, else the sum of the
//! chunks' tokens, its input tokens the last `usage.prompt_tokens`; TTFT and decode are the
//! parse times of the first and last token-bearing chunks.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};
use tokenmeter::{Clock, ErrorClass, Labels, ManualClock, Meter, Outcome};
use tokenmeter_openai::{Chunk, SseChunks, StreamError};

/// Non-2xx statuses (and two 2xx ones) a response can have, picked by the high bits of byte 0.
const STATUSES: [u16; 13] = [
    400, 404, 408, 429, 500, 503, 504, 529, 302, 101, 204, 299, 700,
];

/// The response around the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response {
    /// HTTP 200; the body ends normally.
    Ok,
    /// HTTP 200; reading fails after the last chunk (`ConnectionReset` or `TimedOut`).
    Broken(io::ErrorKind),
    /// Another status: the body is read as its error message.
    Status(u16),
}

impl Response {
    fn of(selector: u8) -> Self {
        match selector {
            0 => Response::Ok,
            1 => Response::Broken(io::ErrorKind::ConnectionReset),
            2 => Response::Broken(io::ErrorKind::TimedOut),
            n => Response::Status(STATUSES[usize::from(n - 3) % STATUSES.len()]),
        }
    }

    fn status(self) -> u16 {
        match self {
            Response::Ok | Response::Broken(_) => 200,
            Response::Status(status) => status,
        }
    }
}

/// The response and the chunks `data` describes (see the module docs).
pub fn split(data: &[u8]) -> (Response, Vec<&[u8]>) {
    let Some((&head, rest)) = data.split_first() else {
        return (Response::Ok, Vec::new());
    };
    let k = usize::from(head & 0x0f).min(rest.len());
    let (lengths, mut body) = rest.split_at(k);
    let mut chunks = Vec::with_capacity(k + 1);
    for &len in lengths {
        let (chunk, tail) = body.split_at(usize::from(len).min(body.len()));
        chunks.push(chunk);
        body = tail;
    }
    chunks.push(body);
    (Response::of(head >> 4), chunks)
}

/// Polls a stream that never returns `Pending` (an in-memory body) to its next item.
fn next<S: Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    match Pin::new(stream).poll_next(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(item) => item,
        Poll::Pending => unreachable!("an in-memory body is always ready"),
    }
}

/// The body as a stream: each chunk read moves `clock` by 1 µs; a broken response fails after
/// the last chunk.
fn body<'a>(
    response: Response,
    chunks: &'a [&'a [u8]],
    clock: &ManualClock,
) -> impl Stream<Item = Result<&'a [u8], io::Error>> + Unpin + 'a {
    let clock = clock.clone();
    let broken = match response {
        Response::Broken(kind) => Some(Err(io::Error::from(kind))),
        Response::Ok | Response::Status(_) => None,
    };
    stream::iter(chunks.iter().copied())
        .map(move |chunk| {
            clock.advance(Duration::from_micros(1));
            Ok(chunk)
        })
        .chain(stream::iter(broken))
}

/// Reads every item of the response, unmetered.
fn read(response: Response, chunks: &[&[u8]]) -> Vec<Result<Chunk, StreamError>> {
    let clock = ManualClock::new();
    let body = body(response, chunks, &clock);
    let mut items = SseChunks::with_status(response.status(), body, Clock::manual(&clock));
    let mut out = Vec::new();
    while let Some(item) = next(&mut items) {
        out.push(item);
    }
    out
}

/// An item without its time stamp, for comparing reads of the same body cut differently.
fn untimed(
    item: &Result<Chunk, StreamError>,
) -> Result<(&tokenmeter_openai::chunk::Parsed, bool, &str), &StreamError> {
    item.as_ref().map(|c| (&c.parsed, c.done, c.data.as_str()))
}

/// Runs one input and panics (a crash, for libFuzzer) when an invariant breaks.
pub fn check(data: &[u8]) {
    let (response, chunks) = split(data);
    let whole = chunks.concat();
    let as_one = read(response, &[whole.as_slice()]);
    let cut = read(response, &chunks);
    assert_eq!(
        cut.iter().map(untimed).collect::<Vec<_>>(),
        as_one.iter().map(untimed).collect::<Vec<_>>(),
        "the items depend on where the body was cut: {chunks:?}"
    );
    metered(response, &chunks);
}

/// Reads the body through the meter and checks the record against the items.
fn metered(response: Response, chunks: &[&[u8]]) {
    let clock = ManualClock::new();
    let (meter, memory) = Meter::manual(&clock);
    clock.advance(Duration::from_millis(1));
    let request = meter.series(&Labels::client("chat")).start();
    let arrival = clock.now();
    let body = body(response, chunks, &clock);
    let mut metered =
        SseChunks::with_status(response.status(), body, Clock::manual(&clock)).meter(request);
    let mut items = Vec::new();
    while let Some(item) = next(&mut metered) {
        items.push(item);
    }
    drop(metered);

    let errors = items.iter().filter(|i| i.is_err()).count();
    assert!(errors <= 1, "more than one error: {items:?}");
    if errors == 1 {
        assert!(
            items.last().is_some_and(Result::is_err),
            "an error before the end: {items:?}"
        );
    }
    if let Response::Status(status) = response
        && !(200..300).contains(&status)
    {
        match items.as_slice() {
            [Err(StreamError::Status(e))] => {
                assert_eq!(e.status, status);
                assert!(
                    e.message.chars().count() <= tokenmeter_openai::chunk::MESSAGE_LIMIT + 1,
                    "{e:?}"
                );
            }
            other => panic!("HTTP {status} gave {other:?}"),
        }
    }

    let records = memory.records();
    assert_eq!(records.len(), 1, "exactly one request end: {records:?}");
    let record = &records[0];
    // A stream that ends without any token-bearing chunk is an empty answer, not a success.
    let answered = items
        .iter()
        .filter_map(|i| i.as_ref().ok())
        .any(|c| c.tokens() > 0);
    let expected = match items.last() {
        Some(Err(error)) => Outcome::Error(error.class()),
        _ if answered => Outcome::Success,
        _ => Outcome::Error(ErrorClass::EmptyResponse),
    };
    assert_eq!(record.outcome, expected, "items {items:?}");
    if let Outcome::Error(class) = record.outcome {
        assert!(ErrorClass::ALL.contains(&class));
    }
    let ok: Vec<&Chunk> = items.iter().filter_map(|i| i.as_ref().ok()).collect();
    let usage = ok.iter().filter_map(|c| c.parsed.usage);
    let completion = usage
        .clone()
        .filter_map(|u| u.completion_tokens)
        .next_back();
    let prompt = usage.filter_map(|u| u.prompt_tokens).next_back();
    let counted: u64 = ok.iter().map(|c| u64::from(c.tokens())).sum();
    assert_eq!(
        record.output_tokens,
        completion.unwrap_or(counted),
        "items {items:?}"
    );
    assert_eq!(record.input_tokens, prompt, "items {items:?}");
    assert_eq!(record.frames, items.len() as u64, "one frame per item");
    let token_times: Vec<Duration> = ok.iter().filter(|c| c.tokens() > 0).map(|c| c.at).collect();
    assert_eq!(record.items, token_times.len() as u64);
    assert_eq!(
        record.ttft,
        token_times.first().map(|t| *t - arrival),
        "items {items:?}"
    );
    let decode = token_times
        .first()
        .zip(token_times.last())
        .map(|(a, b)| *b - *a);
    assert_eq!(record.decode, decode, "items {items:?}");
    assert!(record.e2e >= record.ttft.unwrap_or_default() + record.decode.unwrap_or_default());
}
