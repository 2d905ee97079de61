//! [`Server::shutdown`] in process: idle and half-sent connections close at once, a stream
//! that outlives the grace is cancelled and recorded once, one that ends within it succeeds.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::json;
use tokenmeter::Outcome;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{eventually, post, server};
use crate::Config;

fn slow_engine(grace: Duration) -> Config {
    Config {
        decode_table: vec![(1, Duration::from_millis(20))],
        max_batch: 16,
        shutdown_grace: grace,
        ..Config::default()
    }
}

fn stream_body(max_tokens: u32) -> serde_json::Value {
    json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": max_tokens, "stream": true})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_cancels_the_stream_once_and_closes_half_sent_requests_at_once() {
    let handle = server(slow_engine(Duration::from_millis(200))).await;
    let sink = handle.record_sink().expect("records kept");
    // A stream of 10,000 tokens at 20 ms each: it cannot end within the grace.
    let response = post(&handle, "/v1/chat/completions", &stream_body(5_000)).await;
    let mut body = response.bytes_stream();
    let first = body.next().await.expect("a first chunk").expect("bytes");
    assert!(!first.is_empty());
    let mut half_head = TcpStream::connect(handle.local_addr())
        .await
        .expect("connect");
    half_head
        .write_all(b"POST /v1/completions HTTP/1.1\r\nHost:")
        .await
        .expect("send");
    let mut half_body = TcpStream::connect(handle.local_addr())
        .await
        .expect("connect");
    half_body
        .write_all(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{")
        .await
        .expect("send");
    eventually("the stream to run", || {
        (handle.engine().batch_size() == 1).then_some(())
    })
    .await;
    // The server accepts connections in the order they came: once a later one is answered,
    // both half-sent ones are in its hands (not still in the kernel's backlog).
    let mut later = TcpStream::connect(handle.local_addr())
        .await
        .expect("connect");
    later
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("send");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), later.read_to_end(&mut answer))
        .await
        .expect("an answer to a later connection")
        .expect("read");
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
    let started = Instant::now();
    let stopped = handle.shutdown().await.expect("a clean shutdown");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "stopped after {took:?}");
    assert_eq!(stopped.cancelled, 1, "{stopped:?}");
    assert!(stopped.closed >= 2, "{stopped:?}");
    for mut half in [half_head, half_body] {
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_secs(1), half.read(&mut buf)).await;
        assert!(matches!(read, Ok(Ok(0) | Err(_))), "{read:?}");
    }
    // The stream ends for the client (no `[DONE]`), and the server recorded it once, cancelled.
    let rest = tokio::time::timeout(Duration::from_secs(2), async {
        let mut text = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        text
    })
    .await
    .expect("the stream ends");
    assert!(!rest.contains("[DONE]"));
    let records = sink.records();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].outcome, Outcome::Cancelled);
    assert!(records[0].output_tokens >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_ends_within_the_grace_succeeds() {
    let handle = server(slow_engine(Duration::from_secs(3))).await;
    let sink = handle.record_sink().expect("records kept");
    let response = post(&handle, "/v1/chat/completions", &stream_body(10)).await;
    let mut body = response.bytes_stream();
    let _ = body.next().await.expect("a first chunk");
    let reading = tokio::spawn(async move {
        let mut text = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        text
    });
    let stopped = handle.shutdown().await.expect("a clean shutdown");
    assert_eq!((stopped.drained, stopped.cancelled), (1, 0), "{stopped:?}");
    assert!(reading.await.expect("read").contains("[DONE]"));
    let records = sink.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, Outcome::Success);
}
