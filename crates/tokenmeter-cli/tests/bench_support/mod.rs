//! Shared helpers of the `bench_*` integration tests: the `tokenmeter` binary, temporary
//! directories, and a scripted HTTP server on 127.0.0.1 (plain threads, real sockets).
#![allow(dead_code, unreachable_pub, missing_docs)]

pub mod routes;
pub mod tls;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;

/// `tokenmeter` with no inherited API key.
pub fn tokenmeter() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tokenmeter"));
    command.env_remove("OPENAI_API_KEY");
    command
}

/// Runs `tokenmeter bench ARGS`.
pub fn bench(args: &[&str]) -> Output {
    tokenmeter()
        .arg("bench")
        .args(args)
        .output()
        .expect("the tokenmeter binary runs")
}

/// stdout and stderr as text.
pub fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A fresh directory under the system temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tokenmeter-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a temp dir");
    dir
}

/// A loopback address where nothing listens: a socket bound to a port the kernel picked that
/// never listens, so connections to it are refused. Keep the socket while the address is in
/// use: the port stays reserved (a port merely closed could be taken by another test's server).
pub fn refusing() -> (tokio::net::TcpSocket, SocketAddr) {
    let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
    socket
        .bind(([127, 0, 0, 1], 0).into())
        .expect("bind 127.0.0.1:0");
    let addr = socket.local_addr().expect("address");
    (socket, addr)
}

/// What the server saw.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An answer: status, extra headers and body; `text/event-stream` bodies and `chunked` ones
/// are sent chunked (each event, or piece of at most 64 KiB, one chunk).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    pub headers: Vec<(String, String)>,
    pub chunked: bool,
}

impl Reply {
    pub fn json(status: u16, body: impl Into<String>) -> Self {
        Self::new(status, "application/json", body)
    }

    pub fn new(status: u16, content_type: &'static str, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type,
            body: body.into(),
            headers: Vec::new(),
            chunked: content_type == "text/event-stream",
        }
    }

    /// With one more header.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// Sent chunked, without a length.
    pub fn chunked(mut self) -> Self {
        self.chunked = true;
        self
    }

    /// A streamed chat completion of `tokens` tokens.
    pub fn stream(tokens: usize) -> Self {
        let mut body = String::from(
            "data: {\"id\":\"t\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
        );
        for i in 0..tokens {
            let finish = if i + 1 == tokens { "\"stop\"" } else { "null" };
            body.push_str(&format!(
                "data: {{\"id\":\"t\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"w{i}\"}},\"finish_reason\":{finish}}}]}}\n\n"
            ));
        }
        body.push_str(&format!(
            "data: {{\"id\":\"t\",\"choices\":[],\"usage\":{{\"prompt_tokens\":3,\"completion_tokens\":{tokens}}}}}\n\ndata: [DONE]\n\n"
        ));
        Self::new(200, "text/event-stream", body)
    }
}

type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// Serves every request with `handler` until the process ends.
pub fn serve(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("address");
    let handler: Handler = Arc::new(handler);
    std::thread::spawn(move || {
        for socket in listener.incoming().flatten() {
            let handler = handler.clone();
            std::thread::spawn(move || {
                let _ = connection(socket, &handler);
            });
        }
    });
    addr
}

/// Answers the requests of one connection (plain TCP, or TLS: `tls::serve_tls`).
fn connection(socket: impl Read + Write, handler: &Handler) -> std::io::Result<()> {
    let mut reader = BufReader::new(socket);
    loop {
        let mut seen = Seen::default();
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        seen.path = line.split(' ').nth(1).unwrap_or("").to_owned();
        let mut length = 0;
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            if let Some((name, value)) = trimmed.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
                seen.headers
                    .push((name.trim().to_owned(), value.trim().to_owned()));
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        seen.body = String::from_utf8_lossy(&body).into_owned();
        let reply = handler(&seen);
        let writer = reader.get_mut();
        let mut head = format!(
            "HTTP/1.1 {} Scripted\r\ncontent-type: {}\r\n",
            reply.status, reply.content_type
        );
        for (name, value) in &reply.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if reply.chunked {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
            writer.write_all(head.as_bytes())?;
            for event in reply.body.split_inclusive("\n\n") {
                for piece in event.as_bytes().chunks(64 * 1024) {
                    write!(writer, "{:x}\r\n", piece.len())?;
                    writer.write_all(piece)?;
                    writer.write_all(b"\r\n")?;
                }
            }
            writer.write_all(b"0\r\n\r\n")?;
        } else {
            head.push_str(&format!("content-length: {}\r\n\r\n", reply.body.len()));
            writer.write_all(head.as_bytes())?;
            writer.write_all(reply.body.as_bytes())?;
        }
        writer.flush()?;
    }
}
