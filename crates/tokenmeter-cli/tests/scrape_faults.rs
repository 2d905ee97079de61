//! Scrape faults: Prometheus-style scrapers that read `/metrics` slowly, stall in the middle of
//! a response, never finish their request, or come many at once must not slow the token
//! streams of the simulated server (in process, scraped and benchmarked over loopback). The
//! same bench runs once alone and once with the faulty scrapers: it finishes in about the same
//! time, no gap between tokens comes near the stall, every request has an outcome on both
//! sides, and every scrape that completes is self-consistent.

#[path = "serve_support/mod.rs"]
mod support;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use support::http::{self, parse_response, pipelined_scrapes};
use support::{BenchRun, Hosted, ScrapeChecker, StopOnDrop, bench, check_scrape, steady_config};
use tokenmeter_server::Config;

/// Decode steps of 20 ms whatever the batch: 40 tokens stream in about 0.8 s.
fn server_config() -> Config {
    steady_config(Duration::from_millis(20)).seed(11)
}
/// Requests per bench run, at 40 per second: about 8 s of arrivals.
const REQUESTS: u64 = 320;
/// Scrapers that scrape at the same instant, round after round.
const CONCURRENT_SCRAPERS: usize = 12;
/// Scrapes pipelined on one connection whose reader stalls: about 100 × 115 KB, far more than
/// the loopback socket buffers hold, so the server's write to it blocks.
const PIPELINED: usize = 100;

fn run_bench(server: &Hosted) -> BenchRun {
    bench(
        &server.url(),
        &[
            "--rate",
            "40",
            "--arrival",
            "constant",
            "-n",
            &REQUESTS.to_string(),
            "--input-tokens",
            "16",
            "--output-tokens",
            "40",
            "--seed",
            "11",
        ],
    )
}

#[test]
fn slow_stalled_and_concurrent_scrapers_block_no_stream() {
    let server = Hosted::start(server_config());
    let alone = run_bench(&server);
    let addr = server.addr;

    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(CONCURRENT_SCRAPERS);
    let decided = AtomicBool::new(false);
    let started = Instant::now();
    let (faulty, stall, stalled, trickled, concurrent) = std::thread::scope(|scope| {
        let stopper = StopOnDrop(&stop);
        // Sends PIPELINED scrapes and reads nothing until the bench is over.
        let stalled = scope.spawn(|| pipelined_reader(addr, &stop, None));
        // The same, reading one byte every 2 ms meanwhile.
        let trickled =
            scope.spawn(|| pipelined_reader(addr, &stop, Some(Duration::from_millis(2))));
        // Starts a request and never finishes it.
        let half = scope.spawn(|| {
            let mut stream = http::connect(addr).expect("connect");
            stream
                .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                .expect("send half a request");
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let scrapers: Vec<_> = (0..CONCURRENT_SCRAPERS)
            .map(|_| {
                scope.spawn(|| {
                    let mut checker = ScrapeChecker::default();
                    loop {
                        // Every thread makes the same decision to go on, then all scrape at once.
                        if barrier.wait().is_leader() {
                            decided.store(stop.load(Ordering::Relaxed), Ordering::Relaxed);
                        }
                        barrier.wait();
                        if decided.load(Ordering::Relaxed) {
                            return checker;
                        }
                        checker.scrape(addr);
                        std::thread::sleep(Duration::from_millis(200));
                    }
                })
            })
            .collect();
        // Let the faulty scrapers get going: the stalled connection's socket buffers fill up.
        std::thread::sleep(Duration::from_secs(1));
        let faulty = run_bench(&server);
        let stall = started.elapsed();
        drop(stopper);
        half.join().expect("the half-request thread");
        let concurrent: Vec<ScrapeChecker> = scrapers
            .into_iter()
            .map(|s| s.join().expect("a scraper thread"))
            .collect();
        (
            faulty,
            stall,
            stalled.join().expect("the stalled reader"),
            trickled.join().expect("the trickling reader"),
            concurrent,
        )
    });

    let summary = |name: &str, run: &BenchRun| {
        println!(
            "{name}: {} requests in {:.2} s, TTFT p99 {:.3} s max {:.3} s, ITL p99 {:.3} s max {:.3} s, outcomes {}",
            run.requests(),
            run.number("duration_s"),
            run.number("ttft/p99"),
            run.number("ttft/max"),
            run.number("itl/p99"),
            run.number("itl/max"),
            run.summary["outcomes"],
        );
    };
    summary("bench alone", &alone);
    summary("bench with faulty scrapers", &faulty);
    for run in [&alone, &faulty] {
        assert_eq!(run.requests(), REQUESTS);
        assert_eq!(run.with_outcome(), REQUESTS, "every request has an outcome");
        assert_eq!(run.number("outcomes/success"), REQUESTS as f64);
    }
    let (before, after) = (alone.number("duration_s"), faulty.number("duration_s"));
    assert!(
        after <= before * 1.5 + 3.0,
        "the bench took {after:.2} s with the faulty scrapers, {before:.2} s without"
    );
    // The stalled reader held its connection for the whole run (the server's socket send
    // buffer full, its write pending); had that reached the streams, some gap between tokens
    // would be about as long as the run.
    let stall_s = stall.as_secs_f64();
    for what in ["itl/max", "ttft/max"] {
        let worst = faulty.number(what);
        assert!(
            worst < 2.0 && worst < stall_s / 4.0,
            "{what} was {worst:.3} s while a scraper stalled for {stall_s:.1} s"
        );
    }

    let passed: usize = concurrent.iter().map(|c| c.passed).sum();
    for (i, checker) in concurrent.iter().enumerate() {
        checker.assert_clean(&format!("concurrent scraper {i}"));
    }
    println!(
        "{CONCURRENT_SCRAPERS} concurrent scrapers: {passed} consistent scrapes; stall {stall_s:.1} s; pipelined: {} after a stall, {} after a trickle",
        stalled.passed, trickled.passed
    );
    assert!(
        passed >= CONCURRENT_SCRAPERS * 5,
        "only {passed} concurrent scrapes completed"
    );
    for (name, checker) in [("stalled", &stalled), ("trickling", &trickled)] {
        checker.assert_clean(&format!("the {name} pipelined reader"));
        assert_eq!(
            checker.passed, PIPELINED,
            "the {name} reader got every response"
        );
    }

    let text = http::scrape(addr).expect("a final scrape");
    let (last, _) = check_scrape(&text).expect("the final scrape is consistent");
    assert_eq!(
        support::requests_ended(&last),
        // Each run sends its test request first: a request like the others, counted.
        2.0 * (REQUESTS + 1) as f64,
        "serve counted every request of both runs"
    );
}

/// Pipelines [`PIPELINED`] scrapes on one connection; until `stop`, reads nothing (`None`) or
/// one byte per `trickle`; then reads the rest and checks every response in order.
fn pipelined_reader(
    addr: SocketAddr,
    stop: &AtomicBool,
    trickle: Option<Duration>,
) -> ScrapeChecker {
    let mut stream = http::connect(addr).expect("connect");
    stream
        .write_all(pipelined_scrapes(addr, PIPELINED).as_bytes())
        .expect("send the pipelined scrapes");
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !stop.load(Ordering::Relaxed) {
        match trickle {
            Some(pause) => {
                let n = stream.read(&mut byte).expect("read one byte");
                raw.extend_from_slice(&byte[..n]);
                std::thread::sleep(pause);
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    stream.read_to_end(&mut raw).expect("read the rest");
    let mut checker = ScrapeChecker::default();
    let mut rest = &raw[..];
    loop {
        match parse_response(rest) {
            Ok(Some((response, used))) => {
                if response.status == 200 {
                    checker.check(&response.text());
                } else {
                    checker.problems.push(format!("status {}", response.head));
                }
                rest = &rest[used..];
            }
            Ok(None) if rest.is_empty() => return checker,
            Ok(None) => {
                checker
                    .problems
                    .push(format!("{} bytes of an incomplete response", rest.len()));
                return checker;
            }
            Err(e) => {
                checker.problems.push(e);
                return checker;
            }
        }
    }
}
