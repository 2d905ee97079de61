//! Hostile clients of the simulated server (in process), on raw loopback sockets: clients that
//! hang up after k tokens, that stop reading and then read some and hang up, that stop past the
//! stall limit, non-streaming clients that hang up before their answer, and normal clients
//! alongside. `/metrics` must count each request exactly once, with the outcome and the tokens
//! the client got, and the server's memory must stay bounded (measured on a real `tokenmeter
//! serve` process, whose resident memory is the server's alone).
//!
//! What the server counts is what its response bodies handed to hyper; what a client counts
//! is the token frames it read in full. Frames handed over but not read by a client that hangs
//! up sit in hyper's buffer (at most 16 buffers), the server's socket send buffer and the
//! client's receive buffer ([`client::RECV_BUFFER`]), so for every client that hangs up the
//! server's count is at least the client's and at most the client's plus what those buffers
//! hold ([`IN_FLIGHT`]); for every client that reads to the end the two are equal.

#[path = "serve_support/mod.rs"]
mod support;

#[path = "serve_hangups/client.rs"]
mod client;

use std::time::{Duration, Instant};

use client::Client;
use support::{Hosted, Serve, Target, check_scrape, requests_ended};
use tokenmeter_server::Config;

/// The server's socket send buffer (`Config::send_buffer`, `--send-buffer`; the kernel
/// doubles it).
const SEND_BUFFER: u32 = 4096;

/// The fewest bytes a token frame takes on the wire (about 190 with its chunk header).
const MIN_FRAME: u32 = 150;

/// The most token frames one connection may have in flight when its client hangs up: what
/// both kernels' socket buffers hold, plus hyper's 16 buffers.
const IN_FLIGHT: f64 = ((2 * SEND_BUFFER + 2 * client::RECV_BUFFER) / MIN_FRAME + 16) as f64;

/// The server's configuration here: a small send buffer.
fn config() -> Config {
    Config::default().send_buffer(SEND_BUFFER).seed(3)
}

fn metric(serve: &impl Target, name: &str, labels: &[(&str, &str)]) -> f64 {
    let mut all = vec![("role", "server")];
    all.extend_from_slice(labels);
    serve.metric(name, &all)
}

fn outcome(serve: &impl Target, outcome: &str) -> f64 {
    metric(serve, "tokenmeter_requests_total", &[("outcome", outcome)])
}

fn in_flight<T: Target>(serve: &T) -> f64 {
    metric(serve, "tokenmeter_requests_waiting", &[])
        + metric(serve, "tokenmeter_requests_running", &[])
}

/// Waits until no request is in flight, then checks the scrape on its own (histogram
/// `_count` equal to `+Inf`) and that `sent` requests have ended.
fn settle(serve: &impl Target, sent: usize) {
    serve.wait_for(
        "requests in flight",
        0.0,
        Duration::from_secs(20),
        in_flight,
    );
    let (exposition, _) = check_scrape(&serve.scrape()).expect("a consistent scrape");
    assert_eq!(
        requests_ended(&exposition),
        sent as f64,
        "each request ended once"
    );
}

/// The results of client threads, in order.
fn join<T>(handles: Vec<std::thread::ScopedJoinHandle<'_, T>>) -> Vec<T> {
    handles
        .into_iter()
        .map(|h| h.join().expect("a client thread"))
        .collect()
}

/// Streams `n` normal requests of `max_tokens` to their end; each must arrive whole within
/// `within` of `started`.
fn normal_clients<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
    addr: std::net::SocketAddr,
    n: usize,
    max_tokens: usize,
    within: Duration,
) -> Vec<std::thread::ScopedJoinHandle<'s, usize>> {
    let started = Instant::now();
    (0..n)
        .map(|_| {
            scope.spawn(move || {
                let mut client = Client::send(addr, max_tokens as u32, true);
                client.read_to_end(within);
                assert_eq!((client.tokens, client.done), (max_tokens, true));
                let elapsed = started.elapsed();
                assert!(elapsed < within, "took {elapsed:?}, not within {within:?}");
                client.tokens
            })
        })
        .collect()
}

/// Checks that the server counted between `received` and `received` plus `hung_up` times
/// [`IN_FLIGHT`] output tokens since `before`; returns the difference.
fn counted_since(serve: &impl Target, before: f64, received: usize, hung_up: usize) -> f64 {
    let counted = metric(serve, "tokenmeter_output_tokens_total", &[]) - before;
    let received = received as f64;
    assert!(
        counted >= received,
        "the server counted {counted} tokens, the clients got {received}"
    );
    assert!(
        counted <= received + hung_up as f64 * IN_FLIGHT,
        "the server counted {counted} tokens, the clients got {received}: more than {IN_FLIGHT} per hang-up in flight"
    );
    counted - received
}

#[test]
fn hang_ups_and_stalled_readers_are_counted_as_what_they_received() {
    let serve = Hosted::start(config());
    let addr = serve.addr;
    let (hangups, stalled, normal) = (16, 16, 8);

    // Hang-ups after 1, 4, ..., 46 of 200 tokens, with normal clients alongside.
    let (cut, full) = std::thread::scope(|scope| {
        let cut: Vec<_> = (0..hangups)
            .map(|i| {
                scope.spawn(move || {
                    let mut client = Client::send(addr, 200, true);
                    client.read_tokens(1 + 3 * i, Duration::from_secs(20));
                    client.hang_up()
                })
            })
            .collect();
        // 100 steps of at most 12 ms (a batch of up to 24), with room for a loaded machine.
        let full = normal_clients(scope, addr, normal, 100, Duration::from_secs(5));
        (join(cut), join(full))
    });
    settle(&serve, hangups + normal);
    assert_eq!(outcome(&serve, "success"), normal as f64);
    assert_eq!(outcome(&serve, "cancelled"), hangups as f64);
    let received = cut.iter().chain(&full).sum();
    let extra = counted_since(&serve, 0.0, received, hangups);
    eprintln!(
        "hang-ups: the clients got {received} tokens ({cut:?}), the server counted {extra} more"
    );

    // Readers that stop for 3 s (the engine makes ~375 tokens in that time), then read 20 and
    // hang up, with normal clients alongside that finish on schedule.
    let before = metric(&serve, "tokenmeter_output_tokens_total", &[]);
    let (stall, full) = std::thread::scope(|scope| {
        let stall: Vec<_> = (0..stalled)
            .map(|_| {
                scope.spawn(move || {
                    let mut client = Client::send(addr, 2_000, true);
                    client.read_tokens(2, Duration::from_secs(20));
                    // Stops reading (the behaviour under test, not a wait for an event).
                    std::thread::sleep(Duration::from_secs(3));
                    let got = client.tokens;
                    client.read_tokens(got + 20, Duration::from_secs(20));
                    client.hang_up()
                })
            })
            .collect();
        let full = normal_clients(scope, addr, normal, 100, Duration::from_secs(5));
        (join(stall), join(full))
    });
    let sent = 2 * (hangups + normal) + stalled;
    settle(&serve, sent - hangups);
    assert_eq!(outcome(&serve, "success"), (2 * normal) as f64);
    assert_eq!(outcome(&serve, "cancelled"), (hangups + stalled) as f64);
    let received = stall.iter().chain(&full).sum();
    let extra = counted_since(&serve, before, received, stalled);
    eprintln!(
        "stalled: the clients got {received} tokens ({stall:?}), the server counted {extra} more"
    );
}

#[test]
fn the_stall_limit_cancels_a_reader_that_stopped_and_it_gets_what_was_counted() {
    let serve = Hosted::start(config().stall_limit(Duration::from_secs(1)));
    let addr = serve.addr;
    let (stalled, normal) = (8, 4);
    let (stall, full) = std::thread::scope(|scope| {
        let stall: Vec<_> = (0..stalled)
            .map(|_| {
                scope.spawn(move || {
                    let mut client = Client::send(addr, 2_000, true);
                    client.read_tokens(2, Duration::from_secs(20));
                    // Stops reading for longer than the buffers (~60 tokens) take to fill
                    // plus the stall limit.
                    std::thread::sleep(Duration::from_secs(3));
                    client.read_to_end(Duration::from_secs(20));
                    assert!(client.error && client.done, "an error event, then [DONE]");
                    client.tokens
                })
            })
            .collect();
        let full = normal_clients(scope, addr, normal, 100, Duration::from_secs(5));
        (join(stall), join(full))
    });
    settle(&serve, stalled + normal);
    assert_eq!(outcome(&serve, "success"), normal as f64);
    assert_eq!(outcome(&serve, "cancelled"), stalled as f64);
    for tokens in &stall {
        assert!((2..2_000).contains(tokens), "cut before its end: {tokens}");
    }
    // Every reader read to the end: what the server counted is exactly what they got.
    let received = stall.iter().chain(&full).sum();
    assert_eq!(counted_since(&serve, 0.0, received, 0), 0.0);
}

#[test]
fn a_non_streaming_client_that_hangs_up_before_its_answer_is_cancelled() {
    let serve = Hosted::start(config());
    let addr = serve.addr;
    let (hangups, normal) = (8, 4);
    let bodies = std::thread::scope(|scope| {
        let cut: Vec<_> = (0..hangups)
            .map(|_| {
                scope.spawn(move || {
                    let client = Client::send(addr, 300, false);
                    // Hangs up while its 300 tokens (~2.4 s) are being generated.
                    std::thread::sleep(Duration::from_millis(200));
                    client.hang_up()
                })
            })
            .collect();
        let whole: Vec<_> = (0..normal)
            .map(|_| {
                scope.spawn(move || {
                    let mut client = Client::send(addr, 50, false);
                    String::from_utf8_lossy(client.read_to_end(Duration::from_secs(10)))
                        .into_owned()
                })
            })
            .collect();
        join(cut);
        join(whole)
    });
    for body in &bodies {
        assert!(body.contains(r#""completion_tokens":50"#), "{body}");
    }
    settle(&serve, hangups + normal);
    assert_eq!(outcome(&serve, "success"), normal as f64);
    assert_eq!(outcome(&serve, "cancelled"), hangups as f64);
    // The answers' tokens, and those the handlers had gathered for the ones that hung up
    // (taken from the engine, never written: at most 300 each).
    let counted = metric(&serve, "tokenmeter_output_tokens_total", &[]);
    let whole = (normal * 50) as f64;
    assert!(
        (whole..whole + (hangups * 300) as f64).contains(&counted),
        "{counted}"
    );
}

#[test]
fn stalled_readers_keep_the_server_memory_bounded() {
    // A fast engine: ~5 steps per millisecond, so 64 requests could make ~300,000 tokens a
    // second if nothing held them back.
    // The KV cache holds all 64 at once.
    let extra = [
        "--send-buffer",
        "4096",
        "--kv-capacity",
        "10000000",
        "--max-model-len",
        "200000",
    ];
    let args = support::steady_engine("200us", &extra);
    // The real process: the resident memory measured is the server's alone.
    let serve = Serve::start(&args);
    let addr = serve.addr;
    let readers = 64;
    let mut clients: Vec<_> = (0..readers)
        .map(|_| {
            let mut client = Client::send(addr, 100_000, true);
            client.read_tokens(1, Duration::from_secs(20));
            client
        })
        .collect();
    let baseline = serve.rss_kib();
    // The readers have stopped; sample the memory for 4 s (bounded: 20 samples).
    let mut peak = baseline;
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(200));
        peak = peak.max(serve.rss_kib());
    }
    eprintln!("RSS with {readers} stalled readers: {baseline} KiB, then at most {peak} KiB");
    assert!(
        peak <= baseline + 16 * 1024,
        "RSS grew from {baseline} KiB to {peak} KiB with {readers} stalled readers"
    );
    // Each read a little more, then all hang up: counted as what they got.
    for client in &mut clients {
        let got = client.tokens;
        client.read_tokens(got + 10, Duration::from_secs(20));
    }
    let received = clients.into_iter().map(Client::hang_up).sum();
    settle(&serve, readers);
    assert_eq!(outcome(&serve, "cancelled"), readers as f64);
    let extra = counted_since(&serve, 0.0, received, readers);
    eprintln!("the clients got {received} tokens, the server counted {extra} more");
}

#[test]
fn a_reader_that_never_reads_again_is_closed_at_the_send_timeout_and_cancelled() {
    // The stall limit cuts the request after 1 s; its error event then waits for a client
    // that reads nothing and never closes, until the send timeout closes the connection.
    let serve = Hosted::start(
        config()
            .stall_limit(Duration::from_secs(1))
            .send_timeout(Duration::from_secs(2)),
    );
    let mut client = Client::send(serve.addr, 5_000, true);
    client.read_tokens(2, Duration::from_secs(20));
    let started = Instant::now();
    serve.wait_for(
        "connections closed at the send timeout",
        1.0,
        Duration::from_secs(20),
        |s| {
            s.metric(
                "tokenmeter_http_connections_closed_total",
                &[("reason", "send_timeout")],
            )
        },
    );
    let closed_after = started.elapsed();
    assert!(
        closed_after >= Duration::from_secs(2),
        "not before the send timeout: {closed_after:?}"
    );
    // Still connected from the client's side (it never closed): the server ended it.
    settle(&serve, 1);
    assert_eq!(outcome(&serve, "cancelled"), 1.0);
    assert_eq!(outcome(&serve, "success"), 0.0);
    client.read_to_end(Duration::from_secs(10));
    assert!(!client.done, "cut, not finished");
}
