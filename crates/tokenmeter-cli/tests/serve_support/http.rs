//! HTTP/1.1 on raw sockets: requests with any headers, responses read byte for byte (so a test
//! sees exactly what the server wrote, headers included), complete or not.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A complete response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// The status line and headers, as sent.
    pub head: String,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Connects to `addr` with generous timeouts.
pub fn connect(addr: SocketAddr) -> Result<TcpStream, String> {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| format!("cannot set a read timeout: {e}"))?;
    Ok(stream)
}

/// A blocking TCP connection to `addr` whose receive buffer (`SO_RCVBUF`, set before
/// connecting; the kernel doubles it) is `recv_buffer` bytes, so that a client that stops
/// reading soon leaves the server's writes waiting.
pub fn small_buffer_connection(addr: SocketAddr, recv_buffer: u32) -> TcpStream {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .expect("a runtime to connect with");
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket
            .set_recv_buffer_size(recv_buffer)
            .expect("set SO_RCVBUF");
        let stream = tokio::time::timeout(Duration::from_secs(5), socket.connect(addr))
            .await
            .expect("connected within 5 s")
            .expect("connected");
        stream.into_std().expect("a std stream")
    });
    stream.set_nonblocking(false).expect("blocking");
    stream
}

/// Sends `method path` with `headers` and `body` (`Connection: close`), and reads the whole
/// response.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response, String> {
    let mut stream = connect(addr)?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| format!("{method} {path}: cannot send: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("{method} {path}: cannot read the response: {e}"))?;
    match parse_response(&raw)? {
        Some((response, _)) => Ok(response),
        None => Err(format!(
            "{method} {path}: the connection closed after {} bytes, before the response was complete",
            raw.len()
        )),
    }
}

/// `GET /metrics`: the body of a complete 200 response.
pub fn scrape(addr: SocketAddr) -> Result<String, String> {
    let response = request(addr, "GET", "/metrics", &[], b"")?;
    if response.status != 200 {
        return Err(format!("GET /metrics answered {}", response.head));
    }
    String::from_utf8(response.body).map_err(|e| format!("/metrics is not UTF-8: {e}"))
}

/// The text of `GET /metrics` pipelined `n` times on one connection, the last with
/// `Connection: close`.
pub fn pipelined_scrapes(addr: SocketAddr, n: usize) -> String {
    let mut text = String::new();
    for i in 0..n {
        let close = if i + 1 == n {
            "Connection: close\r\n"
        } else {
            ""
        };
        text.push_str(&format!(
            "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n{close}\r\n"
        ));
    }
    text
}

/// Parses the first response in `raw`: `Ok(None)` while it is incomplete, else the response
/// and the bytes it took. Bodies are framed by `Content-Length` or chunked.
pub fn parse_response(raw: &[u8]) -> Result<Option<(Response, usize)>, String> {
    let Some(head_end) = find(raw, b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: {head:?}"))?;
    let header = |name: &str| {
        head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    };
    let start = head_end + 4;
    let chunked = header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let (body, end) = if chunked {
        match dechunk(&raw[start..])? {
            Some((body, used)) => (body, start + used),
            None => return Ok(None),
        }
    } else {
        let length: usize = match header("content-length") {
            Some(v) => v.parse().map_err(|_| format!("bad content-length {v}"))?,
            // No framing: the body runs to the end of the connection.
            None => raw.len() - start,
        };
        if raw.len() < start + length {
            return Ok(None);
        }
        (raw[start..start + length].to_vec(), start + length)
    };
    Ok(Some((Response { status, head, body }, end)))
}

fn dechunk(mut raw: &[u8]) -> Result<Option<(Vec<u8>, usize)>, String> {
    let total = raw.len();
    let mut body = Vec::new();
    loop {
        let Some(line_end) = find(raw, b"\r\n") else {
            return Ok(None);
        };
        let size_text = String::from_utf8_lossy(&raw[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        let data = line_end + 2;
        if raw.len() < data + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&raw[data..data + size]);
        raw = &raw[data + size + 2..];
        if size == 0 {
            return Ok(Some((body, total - raw.len())));
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A reqwest client. This package builds reqwest with rustls and no crypto provider of its own
/// (`tokenmeter` installs `ring` before its clients are built), so a test installs it too:
/// building a client with none installed panics.
pub fn reqwest_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}
