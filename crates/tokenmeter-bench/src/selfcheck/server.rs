//! A server that streams at known times: each request gets its first token 20 ms after it
//! arrived and the next ones every 2 ms, as OpenAI chat-completion SSE over HTTP/1.1 chunked
//! encoding written by hand (one write per event, every token's frame serialized once). It
//! records when it actually wrote each token, on the same clock origin as the client: the
//! truth the client is compared with.
//!
//! Any `POST` is a chat completion (`max_tokens` or `max_completion_tokens` tokens, 16 when
//! neither); `GET /v1/models` lists one model; `GET /tokenmeter/truth` answers what was
//! written since the last time it was asked, as [`Truth`] JSON (for a client in another
//! process: `tokenmeter bench --self-check-serve`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokenmeter::report::Summary;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Every token's event but the last, as one HTTP chunk.
const TOKEN: &[u8] = b"7e\r\ndata: {\"id\":\"pace\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"},\"finish_reason\":null}]}\n\n\r\n";
/// The last token's event: it carries the finish reason, as vLLM and OpenAI send it.
const LAST_TOKEN: &[u8] = b"82\r\ndata: {\"id\":\"pace\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"},\"finish_reason\":\"length\"}]}\n\n\r\n";

/// When the server wrote what, for one request.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sent {
    /// When the request was read, since the shared origin.
    pub(crate) arrival: Duration,
    /// When each token-bearing event was written.
    pub(crate) tokens: Vec<Duration>,
}

/// The schedule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pace {
    /// First token after arrival.
    pub(crate) ttft: Duration,
    /// Between tokens.
    pub(crate) gap: Duration,
}

impl Default for Pace {
    /// The first token 20 ms after the request is read, then one every 2 ms.
    fn default() -> Self {
        Self {
            ttft: Duration::from_millis(20),
            gap: Duration::from_millis(2),
        }
    }
}

impl std::fmt::Display for Pace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "first token {} ms after the request, then one every {} ms",
            self.ttft.as_secs_f64() * 1e3,
            self.gap.as_secs_f64() * 1e3
        )
    }
}

/// The longest request line or header line read; a longer one is cut there.
const MAX_LINE: u64 = 16 * 1024;
/// The largest request body read (bytes); a larger one is refused with 413.
const MAX_BODY: usize = 1 << 20;
/// The most tokens one answer streams; a request for more is refused with 400.
const MAX_TOKENS: u64 = 100_000;
/// The most token times held until the truth is read (16 bytes each): the answers ended past
/// it are counted in [`Truth::unrecorded`], not held.
const MAX_HELD_TOKENS: usize = 16 << 20;

/// What the server saw: when it wrote what, per request (with its id, the
/// `x-tokenmeter-request` header, 0 when none), and the connections it accepted.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// When the server wrote what, per request, in the order the requests ended.
    sent: Mutex<Held>,
    /// Connections accepted.
    pub(crate) accepted: AtomicU64,
}

/// The requests recorded and not yet taken.
#[derive(Debug, Default)]
struct Held {
    sent: Vec<(u64, Sent)>,
    tokens: usize,
    unrecorded: u64,
}

impl Shared {
    /// Takes what was recorded so far, by request id, and starts afresh.
    pub(crate) fn take(&self) -> (HashMap<u64, Sent>, u64) {
        let (held, accepted) = self.take_all();
        (held.sent.into_iter().collect(), accepted)
    }

    /// Records what the server wrote for request `id`, unless [`MAX_HELD_TOKENS`] are held.
    pub(crate) fn record(&self, id: u64, sent: Sent) {
        let mut held = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        if held.tokens + sent.tokens.len() > MAX_HELD_TOKENS {
            held.unrecorded += 1;
            return;
        }
        held.tokens += sent.tokens.len();
        held.sent.push((id, sent));
    }

    /// Takes what was recorded so far, in order, and starts afresh.
    fn take_all(&self) -> (Held, u64) {
        let held = std::mem::take(&mut *self.sent.lock().unwrap_or_else(PoisonError::into_inner));
        (held, self.accepted.swap(0, Ordering::Relaxed))
    }

    /// [`Truth`] of what was recorded so far, and starts afresh.
    pub(crate) fn truth(&self) -> Truth {
        let (held, connections) = self.take_all();
        let mut truth = Truth::of(held.sent.iter().map(|(_, sent)| sent), connections);
        truth.unrecorded = held.unrecorded;
        truth
    }
}

/// What the server wrote since it was last asked, summed up: the truth a client's TTFT and
/// ITL are compared with when the client cannot share the server's clock.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Truth {
    /// Requests answered to their end.
    pub(crate) requests: u64,
    /// Token events written.
    pub(crate) tokens: u64,
    /// Connections accepted.
    pub(crate) connections: u64,
    /// TTFT as the server saw it, p50: its write of the first token − its read of the request
    /// (s); `None` without a request.
    pub(crate) ttft_p50_s: Option<f64>,
    /// ITL as written, p50: the gaps between its writes of one answer's tokens (s).
    pub(crate) itl_p50_s: Option<f64>,
    /// CPU time of the server's thread since it started (s), when it can be read.
    pub(crate) server_cpu_s: Option<f64>,
    /// Requests answered but not recorded: too many token times were held, unread.
    #[serde(default)]
    pub(crate) unrecorded: u64,
}

impl Truth {
    fn of<'a>(sent: impl Iterator<Item = &'a Sent>, connections: u64) -> Self {
        let (mut ttft, mut itl, mut requests, mut tokens) = (Vec::new(), Vec::new(), 0, 0);
        for one in sent {
            requests += 1;
            tokens += one.tokens.len() as u64;
            ttft.extend(
                one.tokens
                    .first()
                    .map(|t| t.saturating_sub(one.arrival).as_secs_f64()),
            );
            itl.extend(one.tokens.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()));
        }
        let p50 = |v: Vec<f64>| (!v.is_empty()).then(|| Summary::of(v).p50);
        Self {
            requests,
            tokens,
            connections,
            ttft_p50_s: p50(ttft),
            itl_p50_s: p50(itl),
            server_cpu_s: super::thread_cpu_time().map(|d| d.as_secs_f64()),
            unrecorded: 0,
        }
    }
}

type Recorded = Arc<Shared>;

/// Serves on `listener` until the task is dropped.
pub(crate) async fn serve(listener: TcpListener, origin: Instant, pace: Pace, truth: Recorded) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        truth.accepted.fetch_add(1, Ordering::Relaxed);
        let truth = truth.clone();
        tokio::spawn(async move {
            let _ = connection(socket, origin, pace, truth).await;
        });
    }
}

async fn connection(
    socket: TcpStream,
    origin: Instant,
    pace: Pace,
    truth: Recorded,
) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut reader = BufReader::new(socket);
    loop {
        let mut length = 0usize;
        let mut id = 0u64;
        let mut line = String::new();
        if read_line(&mut reader, &mut line).await? == 0 {
            return Ok(());
        }
        let get = line.starts_with("GET ");
        let path = line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        loop {
            line.clear();
            if read_line(&mut reader, &mut line).await? == 0 {
                return Ok(());
            }
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            if let Some((name, value)) = trimmed.split_once(':') {
                let value = value.trim();
                match name.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = value.parse().unwrap_or(0),
                    "x-tokenmeter-request" => id = value.parse().unwrap_or(0),
                    _ => {}
                }
            }
        }
        if length > MAX_BODY {
            let why = format!("a request body of at most {MAX_BODY} bytes");
            return refuse(reader.get_mut(), "413 Payload Too Large", &why).await;
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await?;
        let arrival = Instant::now();
        if get {
            answer_get(reader.get_mut(), &path, &truth).await?;
            continue;
        }
        let body = serde_json::from_slice::<serde_json::Value>(&body).unwrap_or_default();
        let max_tokens = ["max_tokens", "max_completion_tokens"]
            .iter()
            .find_map(|name| body.get(name).and_then(serde_json::Value::as_u64))
            .unwrap_or(16)
            .max(1);
        if max_tokens > MAX_TOKENS {
            let why = format!("max_tokens (or max_completion_tokens) of at most {MAX_TOKENS}");
            return refuse(reader.get_mut(), "400 Bad Request", &why).await;
        }
        let mut sent = Sent {
            arrival: arrival - origin,
            tokens: Vec::with_capacity(max_tokens as usize),
        };
        let socket = reader.get_mut();
        socket
            .write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                  transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n",
            )
            .await?;
        write_event(socket, r#"{"id":"pace","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#).await?;
        for i in 0..max_tokens {
            let due = arrival + pace.ttft + pace.gap * u32::try_from(i).unwrap_or(u32::MAX);
            tokio::time::sleep_until(due.into()).await;
            let frame = if i + 1 == max_tokens {
                LAST_TOKEN
            } else {
                TOKEN
            };
            // The truth is the start of the write: nothing can be read before it.
            sent.tokens.push(origin.elapsed());
            socket.write_all(frame).await?;
        }
        let usage = format!(
            r#"{{"id":"pace","object":"chat.completion.chunk","choices":[],"usage":{{"prompt_tokens":{},"completion_tokens":{max_tokens},"total_tokens":{}}}}}"#,
            length / 4,
            length / 4 + max_tokens as usize
        );
        // Recorded before the end of the response is written: the client cannot finish (and
        // the check cannot take the truth) before the truth is there.
        truth.record(id, sent);
        write_event(socket, &usage).await?;
        socket
            .write_all(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
            .await?;
    }
}

/// Reads one line of at most [`MAX_LINE`] bytes (a longer one is cut there).
async fn read_line(reader: &mut BufReader<TcpStream>, line: &mut String) -> std::io::Result<usize> {
    reader.take(MAX_LINE).read_line(line).await
}

/// Answers `status` with what the server takes, then closes the connection.
async fn refuse(socket: &mut TcpStream, status: &str, takes: &str) -> std::io::Result<()> {
    let body = serde_json::json!({
        "error": {"message": format!("the self-check server takes {takes}")}
    })
    .to_string();
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await
}

/// Answers a `GET`: the model list, the truth so far, or 404.
async fn answer_get(socket: &mut TcpStream, path: &str, truth: &Shared) -> std::io::Result<()> {
    let (status, body) = match path {
        "/v1/models" => (
            "200 OK",
            r#"{"object":"list","data":[{"id":"paced","object":"model","owned_by":"tokenmeter"}]}"#
                .to_owned(),
        ),
        "/tokenmeter/truth" => (
            "200 OK",
            serde_json::to_string(&truth.truth()).unwrap_or_default(),
        ),
        _ => ("404 Not Found", r#"{"error":"not found"}"#.to_owned()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await
}

/// Writes one SSE event as one HTTP chunk, in one write.
async fn write_event(socket: &mut TcpStream, data: &str) -> std::io::Result<()> {
    let payload_len = "data: ".len() + data.len() + 2;
    let frame = format!("{payload_len:x}\r\ndata: {data}\n\n\r\n");
    socket.write_all(frame.as_bytes()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_serialized_frames_are_whole_http_chunks_of_one_event() {
        for frame in [TOKEN, LAST_TOKEN] {
            let text = std::str::from_utf8(frame).expect("text");
            let (size, rest) = text.split_once("\r\n").expect("a chunk size line");
            let payload = rest.strip_suffix("\r\n").expect("the chunk's end");
            assert_eq!(usize::from_str_radix(size, 16), Ok(payload.len()), "{text}");
            let data = payload
                .strip_prefix("data: ")
                .and_then(|d| d.strip_suffix("\n\n"));
            let event: serde_json::Value =
                serde_json::from_str(data.expect("one event")).expect("the event is JSON");
            assert_eq!(event["choices"][0]["delta"]["content"], " tok");
        }
    }

    #[test]
    fn the_truth_sums_up_what_was_written_and_starts_afresh() {
        let shared = Shared::default();
        let ms = Duration::from_millis;
        for (id, arrival) in [(1, 0), (2, 10)] {
            let tokens = vec![ms(arrival + 20), ms(arrival + 22), ms(arrival + 24)];
            let sent = Sent {
                arrival: ms(arrival),
                tokens,
            };
            shared.record(id, sent);
        }
        shared.accepted.store(2, Ordering::Relaxed);
        let truth = shared.truth();
        assert_eq!((truth.requests, truth.tokens, truth.connections), (2, 6, 2));
        assert!((truth.ttft_p50_s.expect("a TTFT") - 0.020).abs() < 1e-9);
        assert!((truth.itl_p50_s.expect("an ITL") - 0.002).abs() < 1e-9);
        let empty = shared.truth();
        assert_eq!((empty.requests, empty.ttft_p50_s), (0, None));
    }
}
