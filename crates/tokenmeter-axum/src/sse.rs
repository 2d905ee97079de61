//! [`SseSplitter`]: an incremental `text/event-stream` reader that is fed the body's frames as
//! they pass and calls back once per complete event.
//!
//! It follows the event-stream grammar of the HTML standard for what the meter needs: lines end
//! at LF, CRLF or CR (also split across frames); `:` starts a comment; `data` lines are joined
//! with `\n`; `event` sets the type; a blank line dispatches an event that has data. `id` and
//! `retry` are ignored, and an event the body never closes with a blank line is not dispatched.
//!
//! An event read whole from one frame is handed out borrowed from that frame (no copy); only a
//! line or an event cut by a frame boundary is copied, into buffers that keep their capacity.
//! A line or an event longer than the limit is dropped (up to its blank line) and counted.

use std::mem;

/// The event type, as far as the meter cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// No `event` field, `message`, or any type other than `error`.
    Message,
    /// `event: error`.
    Error,
}

/// One dispatched event: its type and its data (lines joined with `\n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Event<'a> {
    pub(crate) kind: Kind,
    pub(crate) data: &'a [u8],
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct SseSplitter {
    /// An unterminated line carried over from the previous frame.
    line: Vec<u8>,
    /// The event's data, once it could not stay borrowed from one frame.
    data: Vec<u8>,
    has_data: bool,
    kind: Kind,
    /// The previous frame ended with CR: an LF at the start of the next one belongs to it.
    after_cr: bool,
    /// An oversized line or event is being dropped up to the blank line that ends it.
    skipping: bool,
    /// While skipping: bytes of the current line were dropped, so its end is not a blank line.
    in_dropped_line: bool,
    limit: usize,
    oversized: u64,
}

/// What one line says.
enum Field<'l> {
    Blank,
    Data(&'l [u8]),
    Event(&'l [u8]),
    Ignored,
}

fn field(line: &[u8]) -> Field<'_> {
    if line.is_empty() {
        return Field::Blank;
    }
    let (name, value) = match memchr::memchr(b':', line) {
        Some(0) => return Field::Ignored, // a comment (keep-alive)
        Some(at) => {
            let value = &line[at + 1..];
            (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
        }
        None => (line, &line[line.len()..]),
    };
    match name {
        b"data" => Field::Data(value),
        b"event" => Field::Event(value),
        _ => Field::Ignored,
    }
}

impl SseSplitter {
    /// A splitter that drops lines and events longer than `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            kind: Kind::Message,
            after_cr: false,
            skipping: false,
            in_dropped_line: false,
            limit,
            oversized: 0,
        }
    }

    /// Lines or events dropped because they were longer than the limit.
    #[cfg(test)]
    pub(crate) fn oversized(&self) -> u64 {
        self.oversized
    }

    /// Reads one frame, calling `on_event` for every event it completes, in order.
    pub(crate) fn feed<'a>(&mut self, mut bytes: &'a [u8], on_event: &mut impl FnMut(Event<'_>)) {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        // The event's only data line so far, still inside `bytes`.
        let mut borrowed: Option<&'a [u8]> = None;
        while let Some(at) = memchr::memchr2(b'\n', b'\r', bytes) {
            let line = &bytes[..at];
            let mut rest = &bytes[at + 1..];
            if bytes[at] == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if self.line.is_empty() && !self.in_dropped_line {
                self.apply(line, &mut borrowed, on_event);
            } else {
                self.carried_line(line, on_event);
            }
            bytes = rest;
        }
        if let Some(data) = borrowed {
            self.data.extend_from_slice(data); // the event goes on in the next frame
        }
        self.carry(bytes);
    }

    /// Ends the line carried over from the previous frame with `tail`.
    fn carried_line(&mut self, tail: &[u8], on_event: &mut impl FnMut(Event<'_>)) {
        if self.in_dropped_line {
            self.in_dropped_line = false;
            return; // a dropped (so not blank) line ends
        }
        if self.line.len() + tail.len() > self.limit {
            self.line.clear();
            self.overflow();
            return;
        }
        self.line.extend_from_slice(tail);
        let carried = mem::take(&mut self.line);
        let mut borrowed = None;
        self.apply(&carried, &mut borrowed, on_event);
        if let Some(data) = borrowed {
            self.data.extend_from_slice(data);
        }
        self.line = carried;
        self.line.clear();
    }

    /// Keeps an unterminated line for the next frame, within the limit.
    fn carry(&mut self, partial: &[u8]) {
        if partial.is_empty() {
            return;
        }
        if self.skipping {
            self.in_dropped_line = true;
        } else if self.line.len() + partial.len() > self.limit {
            self.line.clear();
            self.overflow();
            self.in_dropped_line = true;
        } else {
            self.line.extend_from_slice(partial);
        }
    }

    /// Applies one complete line. A data line may stay `borrowed` from the frame.
    fn apply<'l>(
        &mut self,
        line: &'l [u8],
        borrowed: &mut Option<&'l [u8]>,
        on_event: &mut impl FnMut(Event<'_>),
    ) {
        if self.skipping {
            if line.is_empty() {
                self.skipping = false;
                self.reset();
            }
            return;
        }
        if line.len() > self.limit {
            *borrowed = None;
            self.overflow();
            return;
        }
        match field(line) {
            Field::Blank => {
                if self.has_data {
                    let data = borrowed.take().unwrap_or(&self.data);
                    on_event(Event {
                        kind: self.kind,
                        data,
                    });
                }
                self.reset();
            }
            Field::Data(value) => self.data_line(value, borrowed),
            Field::Event(name) => {
                self.kind = if name == b"error" {
                    Kind::Error
                } else {
                    Kind::Message
                };
            }
            Field::Ignored => {}
        }
    }

    fn data_line<'l>(&mut self, value: &'l [u8], borrowed: &mut Option<&'l [u8]>) {
        let held = borrowed.map_or(0, <[u8]>::len) + self.data.len();
        if self.has_data && held + 1 + value.len() > self.limit {
            *borrowed = None;
            self.overflow();
            return;
        }
        if !self.has_data {
            self.has_data = true;
            *borrowed = Some(value);
            return;
        }
        if let Some(first) = borrowed.take() {
            self.data.extend_from_slice(first);
        }
        self.data.push(b'\n');
        self.data.extend_from_slice(value);
    }

    /// Drops the event being read and skips to its blank line.
    fn overflow(&mut self) {
        self.oversized += 1;
        self.skipping = true;
        self.reset();
    }

    fn reset(&mut self) {
        self.data.clear();
        self.has_data = false;
        self.kind = Kind::Message;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of `frames`, as (is error, data).
    fn events(limit: usize, frames: &[&[u8]]) -> (Vec<(bool, String)>, u64) {
        let mut splitter = SseSplitter::new(limit);
        let mut out = Vec::new();
        for frame in frames {
            splitter.feed(frame, &mut |e: Event<'_>| {
                out.push((
                    e.kind == Kind::Error,
                    String::from_utf8(e.data.to_vec()).unwrap(),
                ));
            });
        }
        (out, splitter.oversized())
    }

    fn message(data: &str) -> (bool, String) {
        (false, data.to_owned())
    }

    #[test]
    fn splits_events_in_one_frame_and_ignores_comments_and_other_fields() {
        let stream = b": keep-alive\n\ndata: a\n\nid: 7\nretry: 10\ndata:b\n\nevent: error\ndata: {\"e\":1}\n\ndata: [DONE]\n\n";
        let (got, oversized) = events(1024, &[stream]);
        assert_eq!(
            got,
            [
                message("a"),
                message("b"),
                (true, "{\"e\":1}".into()),
                message("[DONE]")
            ]
        );
        assert_eq!(oversized, 0);
    }

    #[test]
    fn every_split_of_a_stream_gives_the_same_events() {
        let stream: &[u8] =
            b"data: one\r\n\r\nevent: error\rdata: two\rdata: 2b\r\rdata:three\n\n: c\n\n";
        let expected = vec![message("one"), (true, "two\n2b".into()), message("three")];
        for a in 0..=stream.len() {
            for b in a..=stream.len() {
                let frames = [&stream[..a], &stream[a..b], &stream[b..]];
                assert_eq!(events(64, &frames).0, expected, "split at {a} and {b}");
            }
        }
    }

    #[test]
    fn an_event_without_data_or_without_its_blank_line_is_not_dispatched() {
        let (got, _) = events(64, &[b"event: error\n\ndata: cut"]);
        assert!(got.is_empty());
        // The type does not leak into the next event.
        let (got, _) = events(64, &[b"event: error\n\ndata: x\n\n"]);
        assert_eq!(got, [message("x")]);
    }

    #[test]
    fn oversized_lines_and_events_are_dropped_up_to_their_blank_line() {
        let long = format!("data: {}\n\ndata: ok\n\n", "x".repeat(100));
        // Whole in one frame, or byte by byte: the same result.
        assert_eq!(events(32, &[long.as_bytes()]), (vec![message("ok")], 1));
        let bytes: Vec<&[u8]> = long.as_bytes().chunks(1).collect();
        assert_eq!(events(32, &bytes), (vec![message("ok")], 1));
        // Many short data lines that add up past the limit.
        let many = format!("{}\ndata: after\n\n", "data: 0123456789\n".repeat(10));
        assert_eq!(events(32, &[many.as_bytes()]), (vec![message("after")], 1));
        // A huge unterminated line is not kept.
        let mut splitter = SseSplitter::new(32);
        splitter.feed(&[b'x'; 1000], &mut |_| panic!("no event"));
        splitter.feed(&[b'y'; 1000], &mut |_| panic!("no event"));
        assert!(splitter.line.capacity() <= 64);
    }

    #[test]
    fn a_whole_event_is_borrowed_and_buffers_are_reused() {
        let mut splitter = SseSplitter::new(1024);
        let frame = b"data: {\"x\":1}\n\n";
        let mut seen = None;
        splitter.feed(frame, &mut |e: Event<'_>| seen = Some(e.data.as_ptr()));
        assert_eq!(seen, Some(frame[6..].as_ptr()), "no copy for a whole event");
        // A split event is copied once, and the buffer keeps its capacity.
        splitter.feed(b"data: {\"x\"", &mut |_| {});
        splitter.feed(b":2}\n\n", &mut |e: Event<'_>| {
            assert_eq!(e.data, b"{\"x\":2}")
        });
        let capacity = splitter.data.capacity();
        splitter.feed(b"data: {\"x\"", &mut |_| {});
        splitter.feed(b":3}\n\n", &mut |_| {});
        assert_eq!(splitter.data.capacity(), capacity);
    }
}
