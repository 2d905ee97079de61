//! The `/metrics` listener of `Builder::install` at its connection cap: 20 idle connections
//! under a cap of 8 evict the least recently active ones and a scrape is still answered; when
//! all 8 are busy answering clients that read nothing, each further connection is answered
//! 503 and counted, until the send timeout frees them. (Before, the listener had no cap: idle
//! connections were never closed, and under a small file limit they kept scrapes out.)

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::listener::{install, scrape, stats_when, status_and_body, until_closed};
use tokenmeter::{Labels, Meter};
use tokenmeter_prometheus::{Builder, Profile};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

const CAP: usize = 8;
const IDLE: usize = 20;
/// Connections refused while every connection is busy.
const REFUSED: usize = 12;
const SEND_TIMEOUT: Duration = Duration::from_secs(3);
/// Series in the exposition: enough text (several MB) that a client reading nothing blocks
/// the server's writes.
const SERIES: usize = 100;
/// Generous room for a loaded 2-core machine.
const LIMIT: Duration = Duration::from_secs(10);

/// A client that asks for the exposition and reads nothing, with a small receive buffer.
async fn stalled_scrape(addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("a socket");
    socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
    let mut stream = socket.connect(addr).await.expect("connect");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .expect("a request");
    stream
}

/// Whether the server has closed `stream` (read gives end of file or an error, not "would
/// block").
fn is_closed(stream: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    !matches!(stream.try_read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_past_the_cap_make_room_and_busy_ones_get_503s() {
    let (addr, sink, handle) = install(|| {
        Builder::new(Profile::Semconv)
            .max_connections(CAP)
            .header_timeout(Duration::from_secs(60))
            .idle_timeout(Duration::from_secs(60))
            .send_timeout(SEND_TIMEOUT)
    });
    let meter = Meter::builder().sink(sink).build();
    for i in 0..SERIES {
        let name = format!("model-{i}");
        let mut request = meter
            .series(&Labels::server("chat").request_model(name.as_str()))
            .start();
        request.record_tokens(1);
        request.succeed();
    }

    // 20 idle connections, one after another: each past the 8th evicts the least recently
    // active, so the first 12 are closed and the last 8 held.
    let mut idle = Vec::new();
    for i in 0..IDLE {
        idle.push(TcpStream::connect(addr).await.expect("connect"));
        stats_when(&handle, "accepted", LIMIT, |s| s.accepted == i as u64 + 1).await;
    }
    let stats = stats_when(&handle, "evictions", LIMIT, |s| s.open == CAP as u64).await;
    assert_eq!(stats.evicted, (IDLE - CAP) as u64, "{stats:?}");
    for (i, stream) in idle.iter_mut().enumerate().take(IDLE - CAP) {
        let closed = until_closed(stream, LIMIT).await;
        assert!(
            closed.is_some(),
            "idle connection {i} (evicted) is still open"
        );
    }
    for (i, stream) in idle.iter().enumerate().skip(IDLE - CAP) {
        assert!(
            !is_closed(stream),
            "idle connection {i}, among the last 8, was closed"
        );
    }
    // A scrape is answered all the same (it evicts one more).
    let (status, body) = scrape(addr).await;
    assert_eq!(status, 200);
    assert!(body.contains(r#"gen_ai_request_model="model-7""#));
    drop(idle);
    stats_when(&handle, "the idle connections gone", LIMIT, |s| s.open == 0).await;

    // 8 connections busy with responses their clients do not read: every further connection
    // is refused with a 503 status line, and counted.
    let before = handle.listener_stats().expect("stats");
    let mut stalled = Vec::new();
    for _ in 0..CAP {
        stalled.push(stalled_scrape(addr).await);
    }
    stats_when(&handle, "8 requests received", LIMIT, |s| {
        s.received == before.received + CAP as u64
    })
    .await;
    for i in 0..REFUSED {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let mut raw = Vec::new();
        let read = tokio::time::timeout(LIMIT, stream.read_to_end(&mut raw)).await;
        assert!(
            read.is_ok(),
            "refused connection {i}: no answer within {LIMIT:?}"
        );
        let (status, body) = status_and_body(&raw);
        assert_eq!(status, 503, "refused connection {i}: {body}");
        assert!(body.contains("max_connections"), "{body}");
    }
    let stats = handle.listener_stats().expect("stats");
    assert_eq!(stats.refused, before.refused + REFUSED as u64, "{stats:?}");
    assert_eq!(
        stats.evicted, before.evicted,
        "nothing busy was evicted: {stats:?}"
    );

    // The send timeout frees them, and scrapes are answered again.
    let stats = stats_when(
        &handle,
        "the stalled clients cut",
        LIMIT + SEND_TIMEOUT,
        |s| s.send_timeouts == before.send_timeouts + CAP as u64,
    )
    .await;
    assert_eq!(stats.open, 0, "{stats:?}");
    let (status, _) = scrape(addr).await;
    assert_eq!(status, 200);
    drop(stalled);
}
