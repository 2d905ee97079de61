//! The floor the client is compared with: the same requests read from raw sockets, one clock
//! read per `read`, no HTTP parsing, no SSE, no JSON, no metering. Its CPU time is what the
//! kernel and the runtime cost on this machine; the bench client's is that plus its own work.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Runs `requests` requests of `tokens` tokens over `streams` keep-alive connections and
/// returns the token events read (counted as `data: ` lines, `[DONE]` and usage excluded).
pub(crate) async fn run(
    addr: SocketAddr,
    streams: usize,
    requests: usize,
    tokens: u64,
) -> std::io::Result<u64> {
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..streams {
        let mine: Vec<u64> = (worker..requests)
            .step_by(streams)
            .map(|i| i as u64)
            .collect();
        workers.spawn(async move {
            let mut socket = TcpStream::connect(addr).await?;
            socket.set_nodelay(true)?;
            let mut events = 0u64;
            for id in mine {
                events += one(&mut socket, id, tokens).await?;
            }
            std::io::Result::Ok(events)
        });
    }
    let mut total = 0;
    while let Some(done) = workers.join_next().await {
        total += done.map_err(std::io::Error::other)??;
    }
    Ok(total)
}

async fn one(socket: &mut TcpStream, id: u64, tokens: u64) -> std::io::Result<u64> {
    let body = format!(r#"{{"model":"paced","max_tokens":{tokens},"stream":true}}"#);
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: paced\r\ncontent-type: application/json\r\n\
         x-tokenmeter-request: {id}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(head.as_bytes()).await?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut tail: Vec<u8> = Vec::with_capacity(8);
    let mut data_lines = 0u64;
    let mut last_read = Duration::ZERO;
    let origin = Instant::now();
    loop {
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        last_read = last_read.max(origin.elapsed());
        let bytes = &buf[..n];
        data_lines += count_data_lines(bytes);
        tail.extend_from_slice(bytes);
        if tail.len() > 5 {
            tail.drain(..tail.len() - 5);
        }
        if tail == b"0\r\n\r\n" {
            std::hint::black_box(last_read);
            return Ok(data_lines.saturating_sub(UNTOKENED_EVENTS));
        }
    }
}

/// Events of each response of the paced server that carry no token: the role frame, the
/// usage chunk and `[DONE]`.
pub(crate) const UNTOKENED_EVENTS: u64 = 3;

/// The `data: ` lines in `bytes`: how the floor (and the HTTP stack alone) count events
/// without parsing them.
pub(crate) fn count_data_lines(bytes: &[u8]) -> u64 {
    bytes.windows(6).filter(|w| w == b"data: ").count() as u64
}
