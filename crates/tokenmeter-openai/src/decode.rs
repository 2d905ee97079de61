//! [`Decoder`]: server-sent events from byte pieces, in time linear in the bytes and in memory
//! bounded by a limit.
//!
//! Why not a crate: `eventsource-stream` 0.2.3 (used before) re-scans its whole buffer for
//! every piece, so one long line costs quadratic time (30 MB took 30 s inside one poll), and it
//! panicked on a byte order mark. `sse-stream` 0.3 is linear but has no limit on a line or an
//! event (its buffers grow with whatever the server sends, inside one poll), boxes the body's
//! error (losing its [`TransportError`](crate::TransportError) class) and puts the body's type
//! bounds on every type that holds its decoder. `async-sse` and `sse-codec` need an
//! `AsyncBufRead` or a codec framework and have no limit either; `eventsource-client` is a whole
//! reconnecting client; `tokio-util`'s `LinesCodec` has a limit but no bare-CR line end, and
//! splitting on any of CR and LF would read CRLF as two lines (a spurious dispatch). What is
//! needed here is small: this decoder scans only the bytes it has not seen (memchr for CR and
//! LF), keeps the unfinished line, and refuses a line or an event over the limit before
//! buffering past it.
//!
//! The grammar is the WHATWG one: lines end with CRLF, LF or CR (also across pieces); a line
//! starting with `:` is a comment; `field: value` drops one leading space of the value; `data`
//! lines are joined with LF; an empty line dispatches the event if it has data; `event` sets
//! its type; other fields (`id`, `retry`, unknown) are ignored. Every line must be UTF-8.

use std::mem;

use crate::error::StreamError;

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    /// The event type was `error`.
    pub(crate) error: bool,
    /// The event type was another name than `message` (the default), `error` or a Responses
    /// API event's (`response.…`, whose data is read as a chunk): an event a completion stream
    /// does not define (a `ping`, say), which a reader skips.
    pub(crate) other: bool,
    /// Its data lines, joined with LF.
    pub(crate) data: String,
}

/// The decoder's state between pieces.
#[derive(Debug)]
pub(crate) struct Decoder {
    /// The unfinished line: bytes after the last line end.
    line: Vec<u8>,
    /// The data of the event being read, each line followed by LF.
    data: String,
    /// Its type.
    kind: String,
    /// Bytes of the event being read (its lines so far, comments and ignored fields included).
    event_bytes: usize,
    /// The limit of `event_bytes` plus the unfinished line.
    max: usize,
    /// The last piece ended with CR: a LF opening the next one ends the same line.
    skip_lf: bool,
    /// Comment lines read (lines starting with `:`, which the grammar ignores).
    comments: u64,
}

impl Decoder {
    /// A decoder refusing events and lines over `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            line: Vec::new(),
            data: String::new(),
            kind: String::new(),
            event_bytes: 0,
            max,
            skip_lf: false,
            comments: 0,
        }
    }

    /// Comment lines read so far.
    pub(crate) fn comments(&self) -> u64 {
        self.comments
    }

    /// Sets the limit.
    pub(crate) fn set_max(&mut self, max: usize) {
        self.max = max;
    }

    /// Reads `bytes` up to the end of the next event, an error or their end: how many bytes it
    /// took, and the event or the error. After an error the decoder must not be used again.
    pub(crate) fn decode(&mut self, bytes: &[u8]) -> (usize, Option<Result<Event, StreamError>>) {
        let mut at = 0;
        // An empty piece (a body may yield one) says nothing about the byte after a CR.
        if let Some(&first) = bytes.first()
            && mem::take(&mut self.skip_lf)
            && first == b'\n'
        {
            at = 1;
        }
        while at < bytes.len() {
            let rest = &bytes[at..];
            let Some(i) = memchr::memchr2(b'\n', b'\r', rest) else {
                if self.event_bytes + self.line.len() + rest.len() > self.max {
                    return (at, Some(Err(self.too_large())));
                }
                self.line.extend_from_slice(rest);
                return (bytes.len(), None);
            };
            let end = at + i;
            let mut next = end + 1;
            if bytes[end] == b'\r' {
                match bytes.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            let done = if self.line.is_empty() {
                self.line_done(&bytes[at..end])
            } else if self.event_bytes + self.line.len() + (end - at) > self.max {
                Err(self.too_large())
            } else {
                let mut line = mem::take(&mut self.line);
                line.extend_from_slice(&bytes[at..end]);
                let done = self.line_done(&line);
                line.clear();
                // Keep a small buffer for the next long line, not one of up to the limit.
                if line.capacity() <= 64 * 1024 {
                    self.line = line;
                }
                done
            };
            at = next;
            match done {
                Ok(None) => {}
                Ok(Some(event)) => return (at, Some(Ok(event))),
                Err(error) => return (at, Some(Err(error))),
            }
        }
        (at, None)
    }

    /// At the end of the body: an error if the unfinished line (discarded, as the grammar says)
    /// is not UTF-8.
    pub(crate) fn end(&mut self) -> Option<StreamError> {
        let line = mem::take(&mut self.line);
        std::str::from_utf8(&line).err().map(not_utf8)
    }

    fn too_large(&self) -> StreamError {
        StreamError::EventTooLarge { limit: self.max }
    }

    /// One complete line (without its end).
    fn line_done(&mut self, line: &[u8]) -> Result<Option<Event>, StreamError> {
        self.event_bytes += line.len() + 1;
        if self.event_bytes > self.max {
            return Err(self.too_large());
        }
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        let line = std::str::from_utf8(line).map_err(not_utf8)?;
        if line.starts_with(':') {
            self.comments += 1;
            return Ok(None);
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match name {
            "data" => {
                // One allocation for the usual one-line event (not one for the value and
                // another to grow it for its LF).
                self.data.reserve(value.len() + 1);
                self.data.push_str(value);
                self.data.push('\n');
            }
            "event" => value.clone_into(&mut self.kind),
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<Event> {
        self.event_bytes = 0;
        let error = self.kind == "error";
        let other = !error
            && !self.kind.is_empty()
            && self.kind != "message"
            && !self.kind.starts_with("response.");
        self.kind.clear();
        if self.data.is_empty() {
            return None;
        }
        self.data.pop(); // the last LF
        Some(Event {
            error,
            other,
            data: mem::take(&mut self.data),
        })
    }
}

fn not_utf8(error: std::str::Utf8Error) -> StreamError {
    StreamError::Malformed(format!("the body is not UTF-8: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event and the final error of `pieces`, fed in order.
    fn events(max: usize, pieces: &[&[u8]]) -> Vec<Result<Event, StreamError>> {
        let mut decoder = Decoder::new(max);
        let mut out = Vec::new();
        for piece in pieces {
            // Every piece is offered at least once, an empty one too (a body may yield one).
            let mut at = 0;
            loop {
                let (used, item) = decoder.decode(&piece[at..]);
                at += used;
                match item {
                    Some(Err(e)) => {
                        out.push(Err(e));
                        return out;
                    }
                    Some(Ok(event)) => out.push(Ok(event)),
                    None => {
                        assert_eq!(at, piece.len());
                        break;
                    }
                }
            }
        }
        out.extend(decoder.end().map(Err));
        out
    }

    fn event(data: &str) -> Result<Event, StreamError> {
        Ok(Event {
            error: false,
            other: false,
            data: data.to_owned(),
        })
    }

    #[test]
    fn every_line_end_and_every_cut_gives_the_same_events() {
        let text = b": hi\r\ndata: a\r\ndata:b\r\rdata: c\n\nevent: error\rdata: x\r\n\r\nid: 1\n\ndata\n\n";
        let expected = vec![
            event("a\nb"),
            event("c"),
            Ok(Event {
                error: true,
                other: false,
                data: "x".into(),
            }),
            event(""),
        ];
        for i in 0..=text.len() {
            for j in i..=text.len() {
                let pieces = [&text[..i], &text[i..j], &text[j..]];
                assert_eq!(events(1 << 20, &pieces), expected, "{i} {j}");
                // Empty pieces between the cuts change nothing (a CR ending one piece and the
                // LF opening the next are still one line end).
                let pieces = [&text[..i], b"", &text[i..j], b"", b"", &text[j..]];
                assert_eq!(
                    events(1 << 20, &pieces),
                    expected,
                    "{i} {j}, with empty pieces"
                );
            }
        }
    }

    #[test]
    fn lines_and_events_over_the_limit_are_refused_and_not_kept() {
        let too_large = Err(StreamError::EventTooLarge { limit: 16 });
        // A line that never ends, in pieces: refused before it is kept whole.
        let mut decoder = Decoder::new(16);
        assert_eq!(decoder.decode(b"data: 0123456789"), (16, None));
        assert_eq!(decoder.decode(b"x"), (0, Some(too_large.clone())));
        assert!(decoder.line.len() <= 16);
        // An event of many short lines over the limit.
        assert_eq!(
            events(16, &[b"data: 1\ndata: 2\ndata: 3\n\n"]),
            std::slice::from_ref(&too_large)
        );
        // At the limit: read.
        assert_eq!(events(16, &[b"data: 12345678\n\n"]), [event("12345678")]);
        assert_eq!(events(16, &[b"data: 12345678", b"9\n\n"]), [too_large]);
    }

    #[test]
    fn invalid_utf8_is_malformed_also_in_an_unfinished_last_line() {
        for pieces in [
            &[&b"data: \xff\n\n"[..]][..],
            &[b": \xe2\x82\n"],
            &[b"ok\n\xef"],
        ] {
            let items = events(1 << 20, pieces);
            assert!(
                matches!(&items[..], [Err(StreamError::Malformed(m))] if m.contains("UTF-8")),
                "{items:?}"
            );
        }
        // Split inside a character: still one valid line.
        assert_eq!(
            events(1 << 20, &[b"data: \xe2\x82", b"\xac\n\n"]),
            [event("€")]
        );
    }

    /// The grammar's event types and empty data: a named event is marked (not dropped here),
    /// `message` and an empty name are the default type, an empty `data:` line dispatches an
    /// event with empty data, and comments are counted.
    #[test]
    fn event_types_empty_data_and_comments() {
        let text = b": keep-alive\nevent: ping\ndata: pong\n\nevent: message\ndata: a\n\nevent:\ndata: b\n\ndata:\n\n: x\n";
        let mut decoder = Decoder::new(1 << 20);
        let mut got = Vec::new();
        let mut at = 0;
        while let (used, Some(item)) = decoder.decode(&text[at..]) {
            at += used;
            let event = item.unwrap();
            got.push((event.other, event.data));
        }
        let expected = [(true, "pong"), (false, "a"), (false, "b"), (false, "")];
        let expected: Vec<(bool, String)> = expected
            .iter()
            .map(|(o, d)| (*o, (*d).to_owned()))
            .collect();
        assert_eq!(got, expected);
        assert_eq!(decoder.comments(), 2);
    }
}
