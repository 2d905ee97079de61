//! The test harness's in-process server ([`support::Hosted`]), which most tests that need a
//! server use instead of a `tokenmeter serve` process: it listens on loopback only, and dropping
//! it stops the server (gracefully: an in-flight stream gets its grace, then its connection is
//! closed), also when it is dropped inside another runtime, where nothing may block.

#[path = "serve_support/mod.rs"]
mod support;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::{Hosted, http, steady_config};

/// Polls until nothing accepts connections on `addr`; panics after 10 s.
fn until_refused(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "{addr} still accepts 10 s after the drop"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn it_serves_on_loopback_and_stops_when_dropped() {
    let server = Hosted::start(tokenmeter_server::Config::default());
    let addr = server.addr;
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
    assert_eq!(server.url(), format!("http://{addr}"));
    let health = http::request(addr, "GET", "/health", &[], b"").expect("an answer");
    assert_eq!(health.status, 200, "{}", health.text());
    drop(server);
    until_refused(addr);
}

#[test]
fn dropping_it_gives_a_stream_in_flight_its_grace_then_closes_it() {
    let grace = Duration::from_millis(300);
    let server = Hosted::start(steady_config(Duration::from_millis(20)).shutdown_grace(grace));
    let addr = server.addr;
    let mut stream = http::connect(addr).expect("connect");
    let body = br#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":5000,"stream":true}"#;
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send");
    stream.write_all(body).expect("send");
    let mut buf = [0u8; 4096];
    let n = stream.read(&mut buf).expect("the stream's first bytes");
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );

    let started = Instant::now();
    drop(server);
    let took = started.elapsed();
    assert!(
        took >= grace,
        "the drop returned after {took:?}, before the grace"
    );
    assert!(
        took < grace + Duration::from_secs(5),
        "the drop took {took:?}"
    );
    // 5,000 tokens at 20 ms take 100 s: the stream was cut, and its connection is closed.
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("a read timeout");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => assert!(
                Instant::now() < deadline,
                "still streaming 5 s after the drop"
            ),
        }
    }
    until_refused(addr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn dropping_it_inside_a_runtime_neither_blocks_nor_panics_and_stops_it() {
    let server = Hosted::start(tokenmeter_server::Config::default());
    let addr = server.addr;
    drop(server);
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(addr).await.is_ok() {
        assert!(
            Instant::now() < deadline,
            "{addr} still accepts 10 s after the drop"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
