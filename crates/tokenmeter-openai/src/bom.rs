//! [`SkipBom`]: reads past the byte order mark that may open an SSE body.
//!
//! The SSE grammar allows one U+FEFF at the start of a stream (`stream = [ bom ] *event`).
//! `eventsource-stream` 0.2.3, the decoder used before [`Decoder`](crate::decode::Decoder),
//! dropped it by slicing one byte off the three-byte character, which panicked (found by the
//! `sse_chunks` fuzz target). This adapter drops the mark itself, also when it is cut across
//! chunks, and opens the body with an empty line, which dispatches nothing, so the decoder
//! never sees U+FEFF at the start (a second one is a field-name character, as the grammar
//! says).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use pin_project_lite::pin_project;

const BOM: &[u8] = "\u{feff}".as_bytes();

/// A piece of the body handed to the SSE decoder.
#[derive(Debug)]
pub(crate) enum Piece<B> {
    /// The opening empty line.
    Line,
    /// A chunk as it came.
    Whole(B),
    /// A chunk without its first bytes (the rest of the mark).
    From(B, usize),
    /// Bytes held while deciding whether they start the mark.
    Held(Vec<u8>),
}

impl<B: AsRef<[u8]>> AsRef<[u8]> for Piece<B> {
    fn as_ref(&self) -> &[u8] {
        match self {
            Piece::Line => b"\n",
            Piece::Whole(b) => b.as_ref(),
            Piece::From(b, skip) => &b.as_ref()[*skip..],
            Piece::Held(bytes) => bytes,
        }
    }
}

#[derive(Debug)]
enum State {
    /// Nothing sent yet.
    Fresh,
    /// Looking at the first bytes; `held` is a strict prefix of the mark.
    Sniffing { held: Vec<u8> },
    /// Past the start: chunks pass through.
    Body,
    /// The body has ended: the inner stream is not polled again.
    Done,
}

pin_project! {
    /// A body without its opening byte order mark, starting with an empty line.
    #[derive(Debug)]
    pub(crate) struct SkipBom<S> {
        #[pin]
        inner: S,
        state: State,
    }
}

impl<S> SkipBom<S> {
    pub(crate) fn new(inner: S) -> Self {
        Self {
            inner,
            state: State::Fresh,
        }
    }

    /// The body under it.
    pub(crate) fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, B, E> Stream for SkipBom<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    type Item = Result<Piece<B>, E>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            let held = match this.state {
                State::Fresh => {
                    *this.state = State::Sniffing { held: Vec::new() };
                    return Poll::Ready(Some(Ok(Piece::Line)));
                }
                State::Done => return Poll::Ready(None),
                State::Body => {
                    let item = ready!(this.inner.as_mut().poll_next(cx));
                    if item.is_none() {
                        *this.state = State::Done;
                    }
                    return Poll::Ready(item.map(|r| r.map(Piece::Whole)));
                }
                State::Sniffing { held } => held,
            };
            let chunk = match ready!(this.inner.as_mut().poll_next(cx)) {
                Some(Ok(chunk)) => chunk,
                Some(Err(error)) => {
                    // Bytes of a mark cut short by an error carry nothing: the error ends it.
                    *this.state = State::Body;
                    return Poll::Ready(Some(Err(error)));
                }
                None => {
                    // The body ended inside what could have been the mark: the decoder sees
                    // those bytes (and says they are not UTF-8).
                    let held = std::mem::take(held);
                    *this.state = State::Done;
                    return Poll::Ready((!held.is_empty()).then(|| Ok(Piece::Held(held))));
                }
            };
            let bytes = chunk.as_ref();
            let seen = held.len() + bytes.len();
            let take = bytes.len().min(BOM.len().saturating_sub(held.len()));
            let prefix_matches = BOM[held.len()..].starts_with(&bytes[..take]);
            if prefix_matches && seen < BOM.len() {
                held.extend_from_slice(bytes); // still a strict prefix of the mark
                continue;
            }
            let piece = if prefix_matches {
                Piece::From(chunk, take) // the mark ends inside this chunk: skip it
            } else if held.is_empty() {
                Piece::Whole(chunk)
            } else {
                let mut all = std::mem::take(held);
                all.extend_from_slice(bytes);
                Piece::Held(all)
            };
            *this.state = State::Body;
            return Poll::Ready(Some(Ok(piece)));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use futures_util::{StreamExt, stream};
    use tokenmeter::{Clock, Labels, Meter, Outcome, sink::InMemorySink};

    use super::*;
    use crate::{SseChunks, StreamError};

    fn bytes_of(chunks: &[&[u8]]) -> Vec<u8> {
        let body = stream::iter(chunks.iter().map(|c| Ok::<_, Infallible>(*c)));
        futures_executor::block_on(
            SkipBom::new(body)
                .map(|p| p.unwrap().as_ref().to_vec())
                .concat(),
        )
    }

    /// Every way of cutting `text` in two (and three) pieces.
    fn cuts(text: &[u8]) -> Vec<Vec<&[u8]>> {
        let mut out = vec![vec![text]];
        for i in 0..=text.len() {
            for j in i..=text.len() {
                out.push(vec![&text[..i], &text[i..j], &text[j..]]);
            }
        }
        out
    }

    #[test]
    fn one_mark_is_dropped_wherever_the_body_is_cut() {
        let text = "\u{feff}data: x\n\n".as_bytes();
        for chunks in cuts(text) {
            assert_eq!(bytes_of(&chunks), b"\ndata: x\n\n", "{chunks:?}");
        }
        let twice = "\u{feff}\u{feff}a".as_bytes();
        for chunks in cuts(twice) {
            assert_eq!(bytes_of(&chunks), "\n\u{feff}a".as_bytes(), "{chunks:?}");
        }
    }

    #[test]
    fn other_bodies_pass_unchanged() {
        for text in [
            &b"data: x\n\n"[..],
            b"",
            b"\xef",
            b"\xef\xbb",
            b"\xef\xbbX",
            b"\xefdata",
        ] {
            for chunks in cuts(text) {
                let mut expected = b"\n".to_vec();
                expected.extend_from_slice(text);
                assert_eq!(bytes_of(&chunks), expected, "{chunks:?}");
            }
        }
    }

    #[test]
    fn errors_pass_and_the_end_is_final() {
        let body = stream::iter([Ok(&b"\xef"[..]), Err("reset"), Ok(b"data")]);
        let pieces: Vec<_> = futures_executor::block_on(SkipBom::new(body).collect());
        let pieces: Vec<_> = pieces
            .iter()
            .map(|p| p.as_ref().map(|p| p.as_ref()))
            .collect();
        assert_eq!(pieces, [Ok(&b"\n"[..]), Err(&"reset"), Ok(b"data")]);

        let mut skip = SkipBom::new(stream::iter([Ok::<_, Infallible>(&b"\xef"[..])]));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut next = || match Pin::new(&mut skip).poll_next(&mut cx) {
            Poll::Ready(item) => item.map(|p| p.unwrap().as_ref().to_vec()),
            Poll::Pending => unreachable!(),
        };
        assert_eq!(
            (next(), next()),
            (Some(b"\n".to_vec()), Some(b"\xef".to_vec()))
        );
        assert_eq!((next(), next()), (None, None));
    }

    /// Found by the `sse_chunks` fuzz target: a body opening with a byte order mark panicked
    /// inside the SSE decoder (`start byte index 1 is not a char boundary`).
    #[test]
    fn a_body_with_a_byte_order_mark_is_read() {
        let crash = b"\xef\xbb\xbfa: s\x9f\x91\x8d\n"; // the fuzzer's input, after its header byte
        let items: Vec<_> = futures_executor::block_on(
            SseChunks::new(
                stream::iter([Ok::<_, Infallible>(&crash[..])]),
                Clock::default(),
            )
            .collect(),
        );
        assert!(
            matches!(items[..], [Err(StreamError::Malformed(_))]),
            "{items:?}"
        );

        let text =
            "\u{feff}data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n";
        for chunks in cuts(text.as_bytes()) {
            let memory = InMemorySink::new();
            let meter = Meter::builder().sink(memory.clone()).build();
            let request = meter.series(&Labels::client("chat")).start();
            let body = stream::iter(chunks.iter().map(|c| Ok::<_, Infallible>(*c)));
            let items: Vec<_> = futures_executor::block_on(
                SseChunks::new(body, Clock::default())
                    .meter(request)
                    .collect(),
            );
            assert_eq!(items.len(), 2, "{chunks:?}: {items:?}");
            let record = &memory.records()[0];
            assert_eq!(
                (record.outcome, record.output_tokens),
                (Outcome::Success, 1)
            );
        }
    }
}
