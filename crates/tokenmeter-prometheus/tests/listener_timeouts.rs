//! The `/metrics` listener of `Builder::install` under slow and idle clients: 50 connections
//! that trickle their headers are closed at the header timeout, connections with no request
//! at the idle timeout (also after a response), each counted, and scrapes are answered
//! meanwhile. (Before the listener had timeouts, such connections were held for as long as
//! their clients liked.)

mod support;

use std::time::Duration;

use support::listener::{install, scrape, stats_when, until_closed};
use tokenmeter_prometheus::{Builder, Profile};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

const HEADER_TIMEOUT: Duration = Duration::from_secs(1);
const IDLE_TIMEOUT: Duration = Duration::from_secs(2);
/// Slow-header connections.
const SLOW: usize = 50;
/// Connections that send nothing.
const SILENT: usize = 5;
/// Room for a loaded 2-core machine past each timeout.
const SLACK: Duration = Duration::from_secs(4);

/// A client that sends a request line and then one header byte every 100 ms, never finishing
/// its headers; returns how long after its first byte the server closed it (`None`: not
/// within the header timeout plus [`SLACK`]).
async fn slow_headers(addr: std::net::SocketAddr) -> Option<Duration> {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .expect("the request line");
    let started = Instant::now();
    let limit = HEADER_TIMEOUT + SLACK;
    let mut byte = [0u8; 1];
    let mut trickle = tokio::time::interval(Duration::from_millis(100));
    while started.elapsed() < limit {
        tokio::select! {
            read = stream.read(&mut byte) => match read {
                Ok(0) | Err(_) => return Some(started.elapsed()),
                Ok(_) => panic!("the server answered headers that never ended"),
            },
            _ = trickle.tick() => {
                if stream.write_all(b"a").await.is_err() {
                    return Some(started.elapsed());
                }
            }
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_header_and_idle_connections_are_closed_at_their_timeouts() {
    let (addr, _sink, handle) = install(|| {
        Builder::new(Profile::Semconv)
            .header_timeout(HEADER_TIMEOUT)
            .idle_timeout(IDLE_TIMEOUT)
    });
    let (status, body) = scrape(addr).await;
    assert_eq!(status, 200, "{body}");

    let slow: Vec<_> = (0..SLOW)
        .map(|_| tokio::spawn(slow_headers(addr)))
        .collect();
    let silent: Vec<_> = (0..SILENT)
        .map(|_| {
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(addr).await.expect("connect");
                until_closed(&mut stream, IDLE_TIMEOUT + SLACK).await
            })
        })
        .collect();
    // A keep-alive connection after its response: closed at the idle timeout from the end
    // of that response.
    let kept = tokio::spawn(async move {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream
            .write_all(b"HEAD /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .expect("a request");
        let mut head = vec![0u8; 4096];
        let n = stream.read(&mut head).await.expect("a response");
        assert!(head[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &head[..n]);
        until_closed(&mut stream, IDLE_TIMEOUT + SLACK).await
    });
    // The slow and silent clients hold connections; a scrape is answered all the same.
    let stats = stats_when(&handle, "50 slow connections open", SLACK, |s| {
        s.open >= (SLOW + SILENT) as u64
    })
    .await;
    let (status, _) = scrape(addr).await;
    assert_eq!(status, 200, "a scrape among slow clients ({stats:?})");

    for task in slow {
        let closed = task.await.expect("a slow client");
        let after = closed.expect("a slow-header connection still open past the header timeout");
        assert!(
            after >= HEADER_TIMEOUT - Duration::from_millis(100),
            "closed {after:?} after its first byte, before the header timeout"
        );
    }
    for task in silent {
        let closed = task.await.expect("a silent client");
        let after = closed.expect("a silent connection still open past the idle timeout");
        assert!(
            after >= IDLE_TIMEOUT - Duration::from_millis(100),
            "{after:?}"
        );
    }
    let after = kept.await.expect("the keep-alive client");
    let after = after.expect("a keep-alive connection still open past the idle timeout");
    assert!(
        after >= IDLE_TIMEOUT - Duration::from_millis(100),
        "{after:?}"
    );

    let stats = stats_when(&handle, "every connection closed", SLACK, |s| s.open == 0).await;
    assert_eq!(stats.header_timeouts, SLOW as u64, "{stats:?}");
    assert_eq!(stats.idle_timeouts, SILENT as u64 + 1, "{stats:?}");
    assert_eq!((stats.evicted, stats.refused), (0, 0), "{stats:?}");
    assert_eq!(stats.accepted, (SLOW + SILENT + 3) as u64, "{stats:?}");
}
