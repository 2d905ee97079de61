//! Many connections holding a large body minus its last byte: the server's resident memory
//! stays under the `--max-body-memory` budget plus a stated margin, and the bodies past the
//! budget get a counted 503.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::serve_support::Serve;
use super::serve_support::http::{self, Response};
use super::{CHAT, assert_overloaded, chat, closed, post_head, read_response, responses};

/// Bytes queued on the established loopback sockets of `port` (either end), from
/// `/proc/net/tcp`: sent and not yet delivered, or delivered and not yet read. 0 once the
/// server has read every byte of the connections it keeps open.
fn unread_bytes(port: u16) -> u64 {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("read /proc/net/tcp");
    let port = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let ours = fields.get(1)?.ends_with(&port) || fields.get(2)?.ends_with(&port);
            let established = *fields.get(3)? == "01";
            let (tx, rx) = fields.get(4)?.split_once(':')?;
            let queued = u64::from_str_radix(tx, 16).ok()? + u64::from_str_radix(rx, 16).ok()?;
            (ours && established).then_some(queued)
        })
        .sum()
}

/// What a client sending a body minus its last byte got.
#[derive(Debug)]
enum Held {
    /// Every byte but the last was read by the server and no answer came: it holds the body.
    Held(TcpStream),
    /// Answered before the body was whole.
    Answered(Response),
}

/// The clients of [`hold_bodies`] and when the server has settled.
#[derive(Debug, Default)]
struct Holding {
    /// Clients done sending (every byte but the last, or cut off by an answer).
    sent: AtomicUsize,
    /// Set once the server has read every byte still open to it: an answer not in by then is
    /// not coming.
    settled: AtomicBool,
}

/// `clients` connections at once each send a body of `length` bytes minus its last byte;
/// once the server has read all it will read (nothing left unread on its sockets), `measure`
/// runs; then what each client got. Bounded: 30 s for the sending, 30 s for the server.
fn hold_bodies<T>(
    addr: SocketAddr,
    clients: usize,
    length: usize,
    measure: impl FnOnce() -> T,
) -> (T, Vec<Result<Held, String>>) {
    let holding = Arc::new(Holding::default());
    let start = Arc::new(Barrier::new(clients));
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (start, holding) = (start.clone(), holding.clone());
            std::thread::spawn(move || hold_body(addr, length, &start, &holding))
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while holding.sent.load(Ordering::Relaxed) < clients {
        assert!(
            Instant::now() < deadline,
            "the clients did not send within 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while unread_bytes(addr.port()) > 0 {
        assert!(
            Instant::now() < deadline,
            "the server left bytes unread for 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let measured = measure();
    holding.settled.store(true, Ordering::Relaxed);
    let outcomes = threads
        .into_iter()
        .map(|t| t.join().expect("a client thread"))
        .collect();
    (measured, outcomes)
}

fn hold_body(
    addr: SocketAddr,
    length: usize,
    start: &Barrier,
    holding: &Holding,
) -> Result<Held, String> {
    let connected = http::connect(addr);
    start.wait();
    let sent = connected.and_then(|mut stream| {
        stream
            .set_write_timeout(Some(Duration::from_secs(20)))
            .map_err(|e| e.to_string())?;
        let head = post_head("/v1/completions", length, false);
        let body = vec![b'x'; length - 1];
        let sent = stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(&body));
        Ok((stream, sent.is_ok()))
    });
    holding.sent.fetch_add(1, Ordering::Relaxed);
    let (mut stream, whole) = sent?;
    if !whole {
        // Refused before the body was read: the answer is in the receive buffer.
        return read_response(&mut stream, Duration::from_secs(10)).map(Held::Answered);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !holding.settled.load(Ordering::Relaxed) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Settled: an answer is already here, or none is coming.
    match read_response(&mut stream, Duration::from_millis(200)) {
        Ok(response) => Ok(Held::Answered(response)),
        Err(_) => Ok(Held::Held(stream)),
    }
}

/// 96 connections each send a 2 MiB body minus its last byte to a server with a 32 MiB body
/// budget: 16 bodies are held, the other 80 are answered 503 at once and counted, and the
/// server's resident memory grows by less than the budget plus 32 MiB (the connections' own
/// buffers; before the budget it grew by the whole 192 MiB sent, and more).
#[test]
fn held_bodies_stay_within_the_body_memory_budget() {
    const CLIENTS: usize = 96;
    const BODY: usize = 2 * 1024 * 1024;
    const BUDGET: usize = 32 * 1024 * 1024;
    const MARGIN_KIB: u64 = 32 * 1024;
    // The real process: the resident memory measured is the server's alone.
    let server = Serve::start(&[
        "--max-connections",
        "128",
        "--max-body-memory",
        "32MiB",
        "--body-timeout",
        "60s",
        "--keep-alive-timeout",
        "60s",
    ]);
    let warm = http::request(server.addr, "POST", CHAT, &[], &chat(2, false)).expect("answer");
    assert_eq!(warm.status, 200, "{}", warm.text());
    let before = server.rss_kib();
    let (after, outcomes) = hold_bodies(server.addr, CLIENTS, BODY, || server.rss_kib());
    let mut held = Vec::new();
    let mut refused = 0;
    for outcome in outcomes {
        match outcome {
            Ok(Held::Held(stream)) => held.push(stream),
            Ok(Held::Answered(response)) => {
                assert_overloaded(&response);
                refused += 1;
            }
            Err(e) => panic!("a client got no status line: {e}"),
        }
    }
    eprintln!(
        "held bodies: {} held, {refused} refused; RSS {before} KiB before, {after} KiB after (+{} KiB)",
        held.len(),
        after.saturating_sub(before)
    );
    assert_eq!(held.len(), BUDGET / BODY, "bodies held");
    assert!(
        after.saturating_sub(before) < (BUDGET / 1024) as u64 + MARGIN_KIB,
        "RSS grew from {before} KiB to {after} KiB"
    );
    assert_eq!(closed(&server, "body_budget"), refused as f64);
    let counted = responses(
        &server,
        &[
            ("http_route", "/v1/completions"),
            ("http_response_status_class", "5xx"),
        ],
    );
    assert_eq!(counted, refused as f64);
    drop(held);
}
