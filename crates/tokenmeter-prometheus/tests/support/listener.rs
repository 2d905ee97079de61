//! Helpers for the `/metrics` listener tests: install on a free loopback port, poll the
//! listener's counters with a deadline, and raw HTTP/1.1 over tokio sockets.

use std::net::SocketAddr;
use std::time::Duration;

use tokenmeter_prometheus::{Builder, Error, Handle, ListenerStats, PrometheusSink};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// `builder` installed on a free loopback port (another is tried if the port was taken in the
/// meantime; nothing is installed when the bind fails).
pub(crate) fn install(builder: impl Fn() -> Builder) -> (SocketAddr, PrometheusSink, Handle) {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let addr: SocketAddr = ([127, 0, 0, 1], super::free_port()).into();
        match builder().listen(addr).install() {
            Err(Error::Listen { .. }) if attempts < 5 => continue,
            installed => {
                let (sink, handle) = installed.expect("install the exporter");
                return (addr, sink, handle);
            }
        }
    }
}

/// The listener's counters once `done` holds of them; panics naming `what` after `limit`.
pub(crate) async fn stats_when(
    handle: &Handle,
    what: &str,
    limit: Duration,
    done: impl Fn(&ListenerStats) -> bool,
) -> ListenerStats {
    let deadline = Instant::now() + limit;
    loop {
        let stats = handle
            .listener_stats()
            .expect("install's handle has listener stats");
        if done(&stats) {
            return stats;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {limit:?}; the listener's counters: {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads (and drops) what `stream` receives until the server closes it; the time that took,
/// or `None` if it was still open after `limit`.
pub(crate) async fn until_closed(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let drain = async {
        let mut sink = vec![0u8; 64 * 1024];
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    };
    tokio::time::timeout(limit, drain)
        .await
        .ok()
        .map(|()| started.elapsed())
}

/// `GET /metrics` with `Connection: close`: the status code and body, within 10 s.
pub(crate) async fn scrape(addr: SocketAddr) -> (u16, String) {
    let answer = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        std::io::Result::Ok(raw)
    };
    let raw = tokio::time::timeout(Duration::from_secs(10), answer)
        .await
        .expect("a scrape answered within 10 s")
        .expect("a scrape over loopback");
    status_and_body(&raw)
}

/// The status code and body of a raw HTTP/1.1 response.
pub(crate) fn status_and_body(raw: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, body.to_owned())
}
