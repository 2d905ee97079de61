//! End to end against a real Prometheus server (Debian package `prometheus`): a server streams
//! metered tokens over HTTP on loopback, a known workload runs against it (successes, slow
//! first tokens, clients that hang up, engine errors), Prometheus scrapes `/metrics` in both
//! profiles every second, and its HTTP API must show every request (cancelled ones included)
//! and the exact SLO attainment the in-memory sink computes from the same run.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use support::prometheus::{Job, Prometheus};
use support::server::App;
use tokenmeter::{ErrorClass, Outcome};

/// The SLO threshold on TTFT, added as a bucket edge: "TTFT <= 50 ms".
const EDGE: f64 = 0.05;
/// How long Prometheus may take to show a value.
const SCRAPE_WAIT: Duration = Duration::from_secs(15);

/// Reads a whole response (an engine error may cut it short: that is fine here).
fn complete(addr: SocketAddr, path: &str) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut sink = Vec::new();
    let _ = stream.read_to_end(&mut sink);
}

/// Reads until the first token arrived, then hangs up: the server sees a cancellation.
fn hang_up_after_first_token(addr: SocketAddr, path: &str) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("tok") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => panic!("the stream ended before its first token"),
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

#[test]
fn prometheus_sees_every_request_and_the_exact_attainment_at_an_added_slo_edge() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let app = App::new(EDGE);
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    let router = app.router();
    runtime.spawn(async move { axum::serve(listener, router).await });

    let prometheus = Prometheus::start(&[
        Job {
            name: "semconv",
            target: addr,
            path: "/metrics",
        },
        Job {
            name: "vllm",
            target: addr,
            path: "/vllm/metrics",
        },
    ]);
    // A first scrape at zero, so rate() over the window sees every request of the workload.
    let count = "sum(gen_ai_server_request_duration_seconds_count)";
    let vllm_count = "sum(vllm:e2e_request_latency_seconds_count)";
    prometheus.wait_for_value(count, 0.0, SCRAPE_WAIT);
    prometheus.wait_for_value(vllm_count, 0.0, SCRAPE_WAIT);

    // The workload: 8 fast, 6 slow first tokens, 3 clients that hang up, 2 engine errors.
    let fast = "/generate?tokens=5&ttft_ms=5";
    let slow = "/generate?tokens=3&ttft_ms=150";
    let long = "/generate?tokens=400&ttft_ms=5";
    let failing = "/generate?tokens=3&ttft_ms=5&fail=1";
    let run = 8 + 6 + 3 + 2;
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| complete(addr, fast));
        }
        for _ in 0..6 {
            scope.spawn(|| complete(addr, slow));
        }
        for _ in 0..3 {
            scope.spawn(|| hang_up_after_first_token(addr, long));
        }
        for _ in 0..2 {
            scope.spawn(|| complete(addr, failing));
        }
    });

    // The server notices hang-ups on its next write: wait until every request has ended.
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.memory.len() < run {
        assert!(
            Instant::now() < deadline,
            "only {} of {run} requests ended on the server",
            app.memory.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let records = app.memory.records();
    assert_eq!(records.len(), run);
    let cancelled = records
        .iter()
        .filter(|r| r.outcome == Outcome::Cancelled)
        .count();
    let errors = records
        .iter()
        .filter(|r| r.outcome == Outcome::Error(ErrorClass::ServerError))
        .count();
    assert_eq!((cancelled, errors), (3, 2), "the workload ran as scripted");

    // Nothing lost: every request is in the duration histogram and the outcome counters.
    let run = run as f64;
    prometheus.wait_for_value(count, run, SCRAPE_WAIT);
    // Both profiles publish tokenmeter_requests_total: one job each.
    for job in ["semconv", "vllm"] {
        let total = format!(r#"sum(tokenmeter_requests_total{{job="{job}"}})"#);
        prometheus.wait_for_value(&total, run, SCRAPE_WAIT);
        let cancels =
            format!(r#"sum(tokenmeter_requests_total{{job="{job}",outcome="cancelled"}})"#);
        prometheus.wait_for_value(&cancels, cancelled as f64, SCRAPE_WAIT);
    }
    prometheus.wait_for_value(
        r#"sum(gen_ai_server_request_duration_seconds_count{error_type="server_error"})"#,
        errors as f64,
        SCRAPE_WAIT,
    );
    prometheus.wait_for_value(vllm_count, run, SCRAPE_WAIT);
    prometheus.wait_for_value(
        r#"sum(vllm:request_success_total{finished_reason="abort"})"#,
        cancelled as f64,
        SCRAPE_WAIT,
    );
    prometheus.wait_for_value("sum(tokenmeter_requests_waiting)", 0.0, SCRAPE_WAIT);
    prometheus.wait_for_value("sum(tokenmeter_requests_running)", 0.0, SCRAPE_WAIT);

    // The attainment at the added edge, exactly as the in-memory sink computes it.
    let ttfts: Vec<f64> = records
        .iter()
        .filter_map(|r| r.ttft)
        .map(|d| d.as_secs_f64())
        .collect();
    let good = ttfts.iter().filter(|&&t| t <= EDGE).count();
    let exact = good as f64 / ttfts.len() as f64;
    assert!(
        good > 0 && good < ttfts.len(),
        "the edge splits the workload: {ttfts:?}"
    );
    for histogram in [
        "gen_ai_server_time_to_first_token_seconds",
        "vllm:time_to_first_token_seconds",
    ] {
        let bucket = format!(r#"sum({histogram}_bucket{{le="{EDGE}"}})"#);
        let total = format!("sum({histogram}_count)");
        prometheus.wait_for_value(&total, ttfts.len() as f64, SCRAPE_WAIT);
        let cumulative = prometheus.value(&format!("{bucket} / {total}"));
        assert_eq!(
            cumulative,
            Some(exact),
            "{histogram}: cumulative attainment"
        );
        let rate = prometheus
            .value(&format!(
                r#"sum(rate({histogram}_bucket{{le="{EDGE}"}}[1m])) / sum(rate({histogram}_count[1m]))"#
            ))
            .expect("a rate over the window");
        assert!(
            (rate - exact).abs() < 1e-9,
            "{histogram}: rate attainment {rate} != exact {exact}"
        );
    }
}
