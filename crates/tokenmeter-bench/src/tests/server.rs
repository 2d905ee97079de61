//! A scripted HTTP/1.1 server on 127.0.0.1 for client tests: each request gets a list of
//! steps (status, events, raw bytes, pauses, a reset, a close), written by hand so that every
//! way a server can misbehave can be produced exactly.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the server does, in order.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    /// A complete non-streaming answer with this status and body; the script ends.
    Status(u16, String),
    /// A redirect with this status to this `Location`, with an empty body; the script ends.
    Redirect(u16, String),
    /// The headers of a 200 event stream (chunked).
    StreamHead,
    /// One SSE event `data: …\n\n` as one chunk.
    Data(String),
    /// Raw bytes as one chunk.
    Raw(Vec<u8>),
    /// A pause.
    Sleep(Duration),
    /// Waits until the count `seen` holds reaches `n` (the client has taken `n` tokens), so
    /// that what follows is written after the client saw what came before, however late it
    /// reads. Panics after 10 s.
    WaitFor(watch::Receiver<u64>, u64),
    /// The terminating chunk: the body ends cleanly.
    End,
    /// Closes the connection without ending the body.
    Close,
    /// Resets the connection (RST).
    Reset,
    /// Never answers again.
    Stall,
    /// `count` SSE events `data: {event}\n\n`, written in chunks of about 64 KiB as fast as the
    /// client reads them (a flood); stops when the client goes away.
    Flood(String, u64),
    /// `bytes` bytes of `a` with no line end (a line that never ends), in chunks of `piece`
    /// bytes `gap` apart; stops when the client goes away.
    Line {
        /// How many bytes in all.
        bytes: usize,
        /// Bytes per chunk.
        piece: usize,
        /// The pause between chunks.
        gap: Duration,
    },
}

/// What the server saw of a request.
#[derive(Clone, Debug, Default)]
pub(crate) struct Seen {
    /// The request line's path.
    pub(crate) path: String,
    /// Lower-cased header lines, `name: value`.
    pub(crate) headers: Vec<String>,
    /// The body.
    pub(crate) body: serde_json::Value,
}

type Script = Arc<dyn Fn(&Seen) -> Vec<Step> + Send + Sync>;

/// Starts a server answering every request with `script(request)`.
pub(crate) async fn start(
    script: impl Fn(&Seen) -> Vec<Step> + Send + Sync + 'static,
) -> SocketAddr {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    let script: Script = Arc::new(script);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let script = script.clone();
            tokio::spawn(async move {
                let _ = connection(socket, script).await;
            });
        }
    });
    addr
}

/// A normal chat stream: a role frame, `tokens` content deltas `gap` apart, a finish reason,
/// usage, `[DONE]`.
pub(crate) fn chat_stream(tokens: u64, gap: Duration) -> Vec<Step> {
    chat_steps(tokens, gap, None)
}

/// [`chat_stream`], except that each token after the first is written `gap` after the client
/// took the one before (as `seen` counts them): every gap the client sees is at least `gap`,
/// however late it reads.
pub(crate) fn paced_chat_stream(
    tokens: u64,
    gap: Duration,
    seen: &watch::Receiver<u64>,
) -> Vec<Step> {
    chat_steps(tokens, gap, Some(seen))
}

/// The role frame, then `tokens` content chunks each `gap` after the one before (after the
/// client took it, when `seen` counts what it took), then the end.
fn chat_steps(tokens: u64, gap: Duration, seen: Option<&watch::Receiver<u64>>) -> Vec<Step> {
    let mut steps = vec![
        Step::StreamHead,
        Step::Data(r#"{"id":"r1","choices":[{"index":0,"delta":{"role":"assistant"}}]}"#.into()),
    ];
    for i in 0..tokens {
        if let Some(seen) = seen.filter(|_| i > 0) {
            steps.push(Step::WaitFor(seen.clone(), i));
        }
        steps.push(Step::Sleep(gap));
        let finish = if i + 1 == tokens { "\"stop\"" } else { "null" };
        steps.push(Step::Data(format!(
            r#"{{"id":"r1","choices":[{{"index":0,"delta":{{"content":"w{i} "}},"finish_reason":{finish}}}]}}"#
        )));
    }
    end_of_chat_stream(&mut steps, tokens);
    steps
}

/// Usage, `[DONE]` and the end of the body.
fn end_of_chat_stream(steps: &mut Vec<Step>, tokens: u64) {
    steps.push(Step::Data(format!(
        r#"{{"id":"r1","choices":[],"usage":{{"prompt_tokens":7,"completion_tokens":{tokens}}}}}"#
    )));
    steps.push(Step::Data("[DONE]".into()));
    steps.push(Step::End);
}

async fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<Seen>> {
    let mut seen = Seen::default();
    let mut line = String::new();
    let mut length = 0usize;
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if seen.path.is_empty() {
            seen.path = trimmed.split(' ').nth(1).unwrap_or("").to_owned();
            continue;
        }
        let lower = trimmed.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        seen.headers.push(trimmed.to_owned());
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    seen.body = serde_json::from_slice(&body).unwrap_or_default();
    Ok(Some(seen))
}

async fn chunk(socket: &mut TcpStream, payload: &[u8]) -> std::io::Result<()> {
    let mut frame = format!("{:x}\r\n", payload.len()).into_bytes();
    frame.extend_from_slice(payload);
    frame.extend_from_slice(b"\r\n");
    socket.write_all(&frame).await
}

async fn flood(socket: &mut TcpStream, event: &str, count: u64) -> std::io::Result<()> {
    let one = format!("data: {event}\n\n");
    let per_chunk = (64 * 1024 / one.len()).max(1) as u64;
    let batch = one.repeat(per_chunk as usize);
    let mut left = count;
    while left > 0 {
        let n = left.min(per_chunk);
        chunk(socket, &batch.as_bytes()[..n as usize * one.len()]).await?;
        left -= n;
    }
    Ok(())
}

async fn connection(socket: TcpStream, script: Script) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut reader = BufReader::new(socket);
    while let Some(seen) = read_request(&mut reader).await? {
        let socket = reader.get_mut();
        for step in script(&seen) {
            match step {
                Step::Status(code, body) => {
                    let head = format!(
                        "HTTP/1.1 {code} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    );
                    socket.write_all(head.as_bytes()).await?;
                    socket.write_all(body.as_bytes()).await?;
                }
                Step::Redirect(code, location) => {
                    let head = format!(
                        "HTTP/1.1 {code} Moved\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n"
                    );
                    socket.write_all(head.as_bytes()).await?;
                }
                Step::StreamHead => {
                    socket
                        .write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
                        )
                        .await?;
                }
                Step::Data(data) => chunk(socket, format!("data: {data}\n\n").as_bytes()).await?,
                Step::Raw(bytes) => chunk(socket, &bytes).await?,
                Step::Sleep(d) => tokio::time::sleep(d).await,
                Step::WaitFor(mut seen, n) => {
                    tokio::time::timeout(Duration::from_secs(10), seen.wait_for(|&got| got >= n))
                        .await
                        .unwrap_or_else(|_| panic!("the client did not take token {n} within 10 s"))
                        .expect("the client's token count is kept");
                }
                Step::End => socket.write_all(b"0\r\n\r\n").await?,
                Step::Close => {
                    socket.shutdown().await?;
                    return Ok(());
                }
                Step::Reset => {
                    socket.set_zero_linger()?;
                    return Ok(());
                }
                Step::Stall => std::future::pending::<()>().await,
                Step::Flood(event, count) => flood(socket, &event, count).await?,
                Step::Line { bytes, piece, gap } => {
                    let chunk_bytes = vec![b'a'; piece.max(1)];
                    let mut left = bytes;
                    while left > 0 {
                        let n = left.min(chunk_bytes.len());
                        chunk(socket, &chunk_bytes[..n]).await?;
                        left -= n;
                        if !gap.is_zero() {
                            tokio::time::sleep(gap).await;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}
