//! Load and soak: a real `tokenmeter serve` under a real `tokenmeter bench` at high concurrency
//! for a fixed time, while a real Prometheus scrapes it every 2 s and this test scrapes it
//! every 250 ms. Every scrape is self-consistent, counters never go down, the server's final
//! counts equal the requests the bench sent, and the server's memory stays flat after warm-up.
//!
//! The load lasts `TOKENMETER_SOAK_SECS` seconds (default 30, so the test takes about 45 s).
//! A longer soak by hand, printing the memory samples:
//!
//! ```sh
//! TOKENMETER_SOAK_SECS=600 cargo nextest run -p tokenmeter-cli --test soak --no-capture
//! ```

// The real `tokenmeter serve` process: a soak of the command as operators run it.
#[path = "serve_support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use support::{
    Exposition, ScrapeChecker, Serve, StopOnDrop, bench, check_scrape, never_decrease,
    steady_engine,
};
use tokenmeter_tests::prometheus::{Job, Prometheus};

/// Requests per second, sent at constant spacing.
const RATE: u64 = 30;
/// Output tokens per request.
const OUTPUT_TOKENS: u64 = 100;
/// Every decode step takes 50 ms whatever the batch, so a request streams for about
/// 100 × 50 ms = 5 s and about RATE × 5 s = 150 requests are in flight at once, while the
/// token rate (3,000/s) stays within what two cores carry for both debug-build processes.
fn serve_args() -> Vec<String> {
    steady_engine(
        "50ms",
        &[
            "--error-rate",
            "0.02",
            "--seed",
            "7",
            "--default-max-tokens",
            "100",
        ],
    )
}
/// Prometheus scrapes every this many seconds, with a timeout of as long: a debug-build
/// server with about 150 streams in flight on a 2-core machine that is also running the bench
/// can take over a second to render a scrape (1.36 s measured with other builds running).
const SCRAPE_SECS: u64 = 2;
/// Allowed growth of the peak RSS from the middle third of the run to the last third: a
/// ratio for allocator noise that scales with the heap, plus a constant for page-granular
/// noise. A leak of a fixed size per request grows the peak in proportion to the requests sent.
const RSS_GROWTH_RATIO: f64 = 1.10;
const RSS_GROWTH_KIB: u64 = 4 * 1024;

fn soak_secs() -> u64 {
    match std::env::var("TOKENMETER_SOAK_SECS") {
        Ok(text) => text
            .trim()
            .parse()
            .ok()
            .filter(|s| *s >= 6)
            .unwrap_or_else(|| {
                panic!("TOKENMETER_SOAK_SECS={text:?}: give whole seconds, at least 6")
            }),
        Err(_) => 30,
    }
}

#[test]
fn serve_under_load_and_scraping_stays_consistent_exact_and_flat() {
    let secs = soak_secs();
    let requests = RATE * secs;
    let server = Serve::start(&serve_args());
    let prometheus = Prometheus::start_every(
        &[Job {
            name: "serve",
            target: server.addr,
            path: "/metrics",
        }],
        &[],
        SCRAPE_SECS,
    );
    // Prometheus sees the counters at zero before the load starts.
    prometheus.wait_for_value(
        r#"sum(tokenmeter_requests_total{job="serve"})"#,
        0.0,
        Duration::from_secs(20),
    );
    let observed_from = Instant::now();

    let stop = AtomicBool::new(false);
    let (run, checker, rss) = std::thread::scope(|scope| {
        let scraper = scope.spawn(|| {
            let mut checker = ScrapeChecker::default();
            while !stop.load(Ordering::Relaxed) {
                checker.scrape(server.addr);
                std::thread::sleep(Duration::from_millis(250));
            }
            checker
        });
        let memory = scope.spawn(|| {
            let mut samples = Vec::new();
            let start = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                samples.push((start.elapsed().as_secs_f64(), server.rss_kib()));
                std::thread::sleep(Duration::from_secs(1));
            }
            samples
        });
        let stopper = StopOnDrop(&stop);
        let run = bench(
            &server.url(),
            &[
                "--rate",
                &RATE.to_string(),
                "--arrival",
                "constant",
                "--concurrency",
                "400",
                "-n",
                &requests.to_string(),
                "--input-tokens",
                "32",
                "--output-tokens",
                &OUTPUT_TOKENS.to_string(),
                "--seed",
                "7",
            ],
        );
        drop(stopper);
        (
            run,
            scraper.join().expect("the scraper thread"),
            memory.join().expect("the memory thread"),
        )
    });

    // The bench: every request sent has an outcome, and the load lasted the planned time.
    let duration = run.number("duration_s");
    println!(
        "bench: {} requests in {duration:.1} s (process {:.1} s), outcomes {}, TTFT p99 {:.3} s, ITL max {:.3} s",
        run.requests(),
        run.wall.as_secs_f64(),
        run.summary["outcomes"],
        run.number("ttft/p99"),
        run.number("itl/max"),
    );
    assert_eq!(run.requests(), requests, "the bench sent every request");
    assert_eq!(run.with_outcome(), requests, "every request has an outcome");
    let planned = secs as f64 + (OUTPUT_TOKENS as f64) * 0.05;
    assert!(
        duration < planned + 20.0,
        "the server fell behind: {duration:.1} s for a load planned at about {planned:.0} s"
    );

    // Our own scrapes, every 250 ms during the load.
    checker.assert_clean("the 250 ms scraper");
    println!(
        "own scrapes: {} passed, up to {} histogram series each, up to {} requests running",
        checker.passed, checker.histogram_series, checker.max_running
    );
    assert!(
        checker.passed as u64 >= secs,
        "only {} scrapes in {secs} s",
        checker.passed
    );
    assert!(checker.histogram_series >= 10, "too few histograms checked");
    assert!(
        checker.max_running >= 64.0,
        "not a high concurrency: at most {} requests running",
        checker.max_running
    );

    // The final counts equal what the bench sent, outcome by outcome where both sides see it.
    // The server records a request's end once its last frame is written, which can come just
    // after the bench has read `[DONE]` and exited: scrape until it has ended them all (the
    // bench's test request too), within 10 s.
    let deadline = Instant::now() + Duration::from_secs(10);
    let last = loop {
        let text = support::http::scrape(server.addr).expect("a final scrape");
        let (last, _) = check_scrape(&text).expect("the final scrape is consistent");
        if support::requests_ended(&last) >= (requests + 1) as f64 || Instant::now() > deadline {
            break last;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let earlier = checker.latest.as_ref().expect("scrapes passed");
    never_decrease(&earlier.growing(), &last.growing()).expect("nothing fell at the end");
    final_counts_match(&last, &run, requests);

    // The bench's test request comes first: a request like the others, counted by serve.
    prometheus_saw_consistent_scrapes(&prometheus, &last, requests + 1, observed_from);
    memory_stays_flat(&rss, requests);
}

/// Server-side totals against the bench's.
fn final_counts_match(last: &Exposition, run: &support::BenchRun, requests: u64) {
    let ended = support::requests_ended(last);
    let successes = last.sum(
        "tokenmeter_requests_total",
        &[("role", "server"), ("outcome", "success")],
    );
    let durations = last.sum("gen_ai_server_request_duration_seconds_count", &[]);
    println!(
        "serve: {ended} requests ended ({successes} successes), {durations} request durations"
    );
    // The bench's test request comes first: a request like the others, counted.
    let sent = requests + 1;
    assert_eq!(ended, sent as f64, "serve counted every request sent");
    assert_eq!(durations, sent as f64, "one duration per request");
    assert_eq!(
        successes,
        run.number("outcomes/success") + 1.0,
        "both sides agree on the successes"
    );
}

/// Over the whole run, at every sample Prometheus stored: no counter or histogram reset, and
/// every histogram's `_count` equal to its `+Inf` bucket.
fn prometheus_saw_consistent_scrapes(
    prometheus: &Prometheus,
    last: &Exposition,
    requests: u64,
    observed_from: Instant,
) {
    prometheus.wait_for_value(
        r#"sum(tokenmeter_requests_total{job="serve",role="server"})"#,
        requests as f64,
        Duration::from_secs(15),
    );
    let window = observed_from.elapsed().as_secs() + 10;
    let range = format!("{window}s");
    let scrapes = prometheus
        .value(&format!(r#"count_over_time(up{{job="serve"}}[{range}])"#))
        .unwrap_or(0.0);
    let all_up = prometheus.value(&format!(r#"min_over_time(up{{job="serve"}}[{range}])"#));
    let slowest = prometheus.value(&format!(
        r#"max_over_time(scrape_duration_seconds{{job="serve"}}[{range}])"#
    ));
    println!(
        "prometheus: {scrapes} scrapes over the last {range}, every one up: {all_up:?}, slowest {slowest:?} s"
    );
    assert!(
        scrapes >= (window - 12) as f64 / SCRAPE_SECS as f64 * 0.8,
        "Prometheus scraped only {scrapes} times in {range}"
    );
    assert_eq!(all_up, Some(1.0), "every Prometheus scrape succeeded");
    // Every counter, histogram count and bucket, at every stored sample.
    let mut growing: Vec<String> = last
        .types
        .iter()
        .filter(|(_, kind)| kind.as_str() == "counter")
        .map(|(name, _)| name.clone())
        .collect();
    for family in last.histograms() {
        growing.push(format!("{family}_count"));
        growing.push(format!("{family}_bucket"));
    }
    let mut checked = 0.0;
    for name in &growing {
        let selector = format!(r#"{name}{{job="serve"}}"#);
        let series = prometheus
            .value(&format!("count({selector})"))
            .unwrap_or(0.0);
        let resets = prometheus.value(&format!("sum(resets({selector}[{range}]))"));
        assert!(series > 0.0, "Prometheus stored no {name}");
        assert_eq!(resets, Some(0.0), "{name} decreased between two scrapes");
        checked += series;
    }
    println!(
        "prometheus: no reset in {checked} series of {} counters and histogram parts",
        growing.len()
    );
    // A 100 ms subquery step visits every stored sample of a 2 s scrape; a series' `_count`
    // and `+Inf` bucket of one scrape share its timestamp.
    for family in last.histograms() {
        let samples = prometheus
            .value(&format!(
                r#"sum(count_over_time({family}_count{{job="serve"}}[{range}]))"#
            ))
            .unwrap_or(0.0);
        let worst = prometheus.value(&format!(
            r#"max(max_over_time(abs({family}_count{{job="serve"}} - ignoring(le) {family}_bucket{{job="serve",le="+Inf"}})[{range}:100ms]))"#
        ));
        assert!(samples > 0.0, "Prometheus stored no {family}_count");
        assert_eq!(
            worst,
            Some(0.0),
            "{family}: _count and the +Inf bucket differ in a stored scrape"
        );
    }
}

/// The peak RSS of the last third of the run stays within the bound of the middle third's (the
/// first third is warm-up).
fn memory_stays_flat(samples: &[(f64, u64)], requests: u64) {
    let text: Vec<String> = samples
        .iter()
        .map(|(t, kib)| format!("{t:.0}s:{:.1}", *kib as f64 / 1024.0))
        .collect();
    println!("serve VmRSS (MiB) every second: {}", text.join(" "));
    assert!(samples.len() >= 6, "only {} memory samples", samples.len());
    let third = samples.len() / 3;
    let peak = |part: &[(f64, u64)]| part.iter().map(|s| s.1).max().unwrap_or(0);
    let (warm, middle, last) = (
        peak(&samples[..third]),
        peak(&samples[third..2 * third]),
        peak(&samples[2 * third..]),
    );
    let bound = (middle as f64 * RSS_GROWTH_RATIO) as u64 + RSS_GROWTH_KIB;
    println!(
        "serve VmRSS peaks: warm-up {warm} KiB, middle {middle} KiB, last {last} KiB (bound {bound} KiB); {requests} requests",
    );
    assert!(
        last <= bound,
        "serve's memory grew after warm-up: peak {last} KiB in the last third, {middle} KiB in the middle one (bound {bound} KiB)"
    );
}

#[test]
fn the_scrape_checks_catch_what_they_are_for() {
    let good = "# TYPE h histogram\n\
        h_bucket{a=\"x\",le=\"0.1\"} 1\nh_bucket{a=\"x\",le=\"+Inf\"} 3\n\
        h_sum{a=\"x\"} 0.5\nh_count{a=\"x\"} 3\n\
        # TYPE c_total counter\nc_total{q=\"a\\\"b,}\"} 7\n";
    let (parsed, checked) = check_scrape(good).expect("consistent");
    assert_eq!(checked.histogram_series, 1);
    assert_eq!(checked.observations, 3);
    assert_eq!(parsed.sum("c_total", &[("q", "a\"b,}")]), 7.0);

    for (broken, complaint) in [
        (
            good.replace("h_count{a=\"x\"} 3", "h_count{a=\"x\"} 4"),
            "+Inf bucket is 3",
        ),
        (
            good.replace("le=\"0.1\"} 1", "le=\"0.1\"} 5"),
            "le=0.1 holds 5",
        ),
        (good.replace("le=\"+Inf\"", "le=\"1\""), "no +Inf"),
        (good.replace("h_count{a=\"x\"} 3\n", ""), "without a _count"),
    ] {
        let error = check_scrape(&broken).expect_err(complaint);
        assert!(error.contains(complaint), "{error}");
    }

    let before = parsed.growing();
    assert_eq!(
        before.len(),
        4,
        "two buckets, the count, the counter: {before:?}"
    );
    let fell = Exposition::parse(&good.replace("\"} 7", "\"} 6")).expect("parses");
    let error = never_decrease(&before, &fell.growing()).expect_err("fell");
    assert!(error.contains("fell from 7 to 6"), "{error}");
    let gone = Exposition::parse(
        &good
            .replace("\"} 7", "\"} 7\n")
            .replace("c_total", "d_total"),
    )
    .expect("parses");
    let error = never_decrease(&before, &gone.growing()).expect_err("gone");
    assert!(error.contains("disappeared"), "{error}");
    never_decrease(&before, &before).expect("equal is fine");
}
