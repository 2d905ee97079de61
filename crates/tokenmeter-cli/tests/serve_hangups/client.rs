//! A raw HTTP/1.1 client of `tokenmeter serve` on loopback that counts the SSE token frames it
//! has received in full, and can stop reading, read on, or hang up at any point.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The client's receive buffer (`SO_RCVBUF`, set before connecting; the kernel doubles it):
/// small, so that little can sit unread in the client's kernel buffer.
pub(crate) const RECV_BUFFER: u32 = 4096;

/// What starts a token frame (the role frame's delta has `"role"` first).
const TOKEN: &[u8] = br#""delta":{"content":""#;
const DONE: &[u8] = b"data: [DONE]\n\n";
const ERROR: &[u8] = br#"data: {"error""#;

/// One request's connection.
pub(crate) struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Bytes of `buf` up to the end of the last complete frame, already counted.
    scanned: usize,
    /// Token frames received in full.
    pub(crate) tokens: usize,
    /// `[DONE]` received.
    pub(crate) done: bool,
    /// An error event received.
    pub(crate) error: bool,
}

/// A TCP connection to `addr` with a small receive buffer and a short read timeout.
fn connect(addr: SocketAddr) -> TcpStream {
    let stream = crate::support::http::small_buffer_connection(addr, RECV_BUFFER);
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("read timeout");
    stream
}

impl Client {
    /// Sends a chat completion for `max_tokens` tokens, streamed or not.
    pub(crate) fn send(addr: SocketAddr, max_tokens: u32, stream: bool) -> Self {
        let body = format!(
            r#"{{"model":"sim-llama-3-8b","messages":[{{"role":"user","content":"hello"}}],"max_tokens":{max_tokens},"stream":{stream}}}"#
        );
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let mut connection = connect(addr);
        connection
            .write_all(head.as_bytes())
            .and_then(|()| connection.write_all(body.as_bytes()))
            .expect("the request is sent");
        Self {
            stream: connection,
            buf: Vec::with_capacity(64 * 1024),
            scanned: 0,
            tokens: 0,
            done: false,
            error: false,
        }
    }

    /// Reads until at least `k` token frames have arrived, the stream ended, or `within`
    /// passed (then panics).
    pub(crate) fn read_tokens(&mut self, k: usize, within: Duration) {
        let deadline = Instant::now() + within;
        while self.tokens < k && !self.done {
            assert!(
                self.read_some(),
                "the connection closed after {} tokens, before {k}",
                self.tokens
            );
            assert!(
                Instant::now() < deadline,
                "{} of {k} tokens within {within:?}",
                self.tokens
            );
        }
    }

    /// Reads until the server closes the connection; panics after `within`.
    pub(crate) fn read_to_end(&mut self, within: Duration) -> &[u8] {
        let deadline = Instant::now() + within;
        while self.read_some() {
            assert!(
                Instant::now() < deadline,
                "the response did not end within {within:?} ({} tokens)",
                self.tokens
            );
        }
        &self.buf
    }

    /// One read (at most 100 ms); false once the connection is closed.
    fn read_some(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        match self.stream.read(&mut chunk) {
            Ok(0) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                self.count();
                true
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => false,
            Err(e) => panic!("reading the response: {e}"),
        }
    }

    /// Counts the frames completed by the last read: each SSE frame ends with a blank line.
    fn count(&mut self) {
        let Some(end) = rfind(&self.buf[self.scanned..], b"\n\n") else {
            return;
        };
        let end = self.scanned + end + 2;
        let frames = &self.buf[self.scanned..end];
        self.tokens += occurrences(frames, TOKEN);
        self.done |= occurrences(frames, DONE) > 0;
        self.error |= occurrences(frames, ERROR) > 0;
        self.scanned = end;
    }

    /// Closes the connection, whatever is still unread.
    pub(crate) fn hang_up(self) -> usize {
        self.tokens
    }
}

fn occurrences(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}
