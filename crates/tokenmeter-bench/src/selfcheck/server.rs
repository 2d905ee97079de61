//! A server that streams at known times: each request gets its first token 20 ms after it
//! arrived and the next ones every 2 ms, as OpenAI chat-completion SSE over HTTP/1.1 chunked
//! encoding written by hand (one write per event). It records when it actually wrote each
//! token, on the same clock origin as the client: the truth the client is compared with.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};

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

/// What the server saw: truth per request id (the `x-tokenmeter-request` header) and the
/// connections it accepted.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// When the server wrote what, per request id.
    pub(crate) sent: Mutex<HashMap<u64, Sent>>,
    /// Connections accepted.
    pub(crate) accepted: AtomicU64,
}

impl Shared {
    /// Takes what was recorded so far and starts afresh.
    pub(crate) fn take(&self) -> (HashMap<u64, Sent>, u64) {
        let sent = std::mem::take(&mut *self.sent.lock().unwrap_or_else(PoisonError::into_inner));
        (sent, self.accepted.swap(0, Ordering::Relaxed))
    }
}

type Truth = Arc<Shared>;

/// Serves on `listener` until the task is dropped.
pub(crate) async fn serve(listener: TcpListener, origin: Instant, pace: Pace, truth: Arc<Shared>) {
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
    truth: Truth,
) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut reader = BufReader::new(socket);
    loop {
        let mut length = 0usize;
        let mut id = 0u64;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).await? == 0 {
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
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await?;
        let arrival = Instant::now();
        let max_tokens = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|b| b.get("max_tokens").and_then(serde_json::Value::as_u64))
            .unwrap_or(16)
            .max(1);
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
            let finish = if i + 1 == max_tokens {
                r#""length""#
            } else {
                "null"
            };
            let event = format!(
                r#"{{"id":"pace","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"content":" tok{i}"}},"finish_reason":{finish}}}]}}"#
            );
            // The truth is the start of the write: nothing can be read before it.
            sent.tokens.push(origin.elapsed());
            write_event(socket, &event).await?;
        }
        let usage = format!(
            r#"{{"id":"pace","object":"chat.completion.chunk","choices":[],"usage":{{"prompt_tokens":{},"completion_tokens":{max_tokens},"total_tokens":{}}}}}"#,
            length / 4,
            length / 4 + max_tokens as usize
        );
        // Recorded before the end of the response is written: the client cannot finish (and
        // the check cannot take the truth) before the truth is there.
        truth
            .sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, sent);
        write_event(socket, &usage).await?;
        socket
            .write_all(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
            .await?;
    }
}

/// Writes one SSE event as one HTTP chunk, in one write.
async fn write_event(socket: &mut TcpStream, data: &str) -> std::io::Result<()> {
    let payload_len = "data: ".len() + data.len() + 2;
    let frame = format!("{payload_len:x}\r\ndata: {data}\n\n\r\n");
    socket.write_all(frame.as_bytes()).await
}
