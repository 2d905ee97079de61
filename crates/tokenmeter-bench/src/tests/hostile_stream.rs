//! Servers that stream too much, too long or too fast: each request ends with its class within
//! `--timeout` plus a margin, and keeps bounded memory (the hostile-server matrix of the SSE
//! reader; the other faults are in `faults.rs`).

use std::time::{Duration, Instant};

use tokenmeter::Meter;

use super::server::{self, Step};
use super::spec;
use crate::api::Api;
use crate::client::{Client, Target};
use crate::clock::BenchClock;
use crate::trace::Trace;

/// What a request may take past its deadline on a loaded 2-core machine. Well under the
/// deadline itself: a request running 2x past it fails.
const MARGIN: Duration = Duration::from_millis(700);

/// The start of a content delta whose text the script then writes.
const OPEN_CONTENT: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"";

/// The resident set of this process, in bytes (nextest runs each test in its own process).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Runs one request of `steps` with `timeout` and `max_event_size`: its trace, how long it
/// took and how much the process grew.
async fn run(steps: Vec<Step>, timeout: Duration, max_event_size: usize) -> (Trace, Duration, u64) {
    let addr = server::start(move |_| steps.clone()).await;
    let clock = BenchClock::start();
    let target = Target {
        url: reqwest::Url::parse(&format!("http://{addr}/v1/chat/completions")).unwrap(),
        api: Api::Chat,
        model: "m".into(),
        ignore_eos: false,
        timeout,
        max_event_size,
        tls: crate::tls::Tls::default(),
        shape: crate::request_shape::RequestShape::default(),
        tokenizer: None,
        follow_redirects: false,
    };
    let client = Client::new(target, None, clock, Meter::builder()).unwrap();
    let before = rss();
    let start = Instant::now();
    let trace = Trace::of(&client.send(&spec(0)).await);
    (trace, start.elapsed(), rss().saturating_sub(before))
}

fn assert_within(elapsed: Duration, timeout: Duration, trace: &Trace) {
    assert!(
        elapsed < timeout + MARGIN,
        "took {elapsed:?} with --timeout {timeout:?}: {trace:?}"
    );
}

const MIB: usize = 1 << 20;
const DEFAULT: usize = tokenmeter_openai::DEFAULT_MAX_EVENT_SIZE;

fn one_line(bytes: usize, piece: usize, gap: Duration) -> Vec<Step> {
    vec![
        Step::StreamHead,
        Step::Raw(OPEN_CONTENT.to_vec()),
        Step::Line { bytes, piece, gap },
        Step::Raw(b"\"}}]}\n\ndata: [DONE]\n\n".to_vec()),
        Step::End,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_30_mb_event_ends_at_the_size_limit_naming_the_flag() {
    let timeout = Duration::from_secs(2);
    let (trace, elapsed, grew) = run(
        one_line(30 * MIB, 64 * 1024, Duration::ZERO),
        timeout,
        DEFAULT,
    )
    .await;
    assert_eq!(trace.error_class.as_deref(), Some("transport"), "{trace:?}");
    let error = trace.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("limit of 4194304 bytes") && error.contains("--max-event-size (now 4MiB)"),
        "{error}"
    );
    assert_within(elapsed, timeout, &trace);
    assert!(grew < 48 * MIB as u64, "the process grew {grew} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_30_mb_event_under_a_raised_limit_holds_the_deadline() {
    let timeout = Duration::from_secs(2);
    let (trace, elapsed, _) = run(
        one_line(30 * MIB, 64 * 1024, Duration::ZERO),
        timeout,
        64 * MIB,
    )
    .await;
    // Linear decoding reads it well within 2 s; what matters is that it never runs past.
    assert!(
        matches!(trace.outcome.as_str(), "success")
            || trace.error_class.as_deref() == Some("timeout"),
        "{trace:?}"
    );
    assert_within(elapsed, timeout, &trace);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_small_events_ends_at_the_deadline() {
    let timeout = Duration::from_secs(1);
    // Zero-token frames, up to 20M (far more than a second's worth): only the deadline stops
    // the request.
    let steps = vec![
        Step::StreamHead,
        Step::Flood(r#"{"choices":[]}"#.into(), 20_000_000),
        Step::End,
    ];
    let (trace, elapsed, grew) = run(steps, timeout, DEFAULT).await;
    assert_eq!(trace.error_class.as_deref(), Some("timeout"), "{trace:?}");
    assert!(
        trace
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("--timeout 1s")
    );
    assert_within(elapsed, timeout, &trace);
    // Zero-token frames keep nothing: the core keeps the time of token-bearing chunks only.
    assert!(trace.chunks.is_empty(), "{}", trace.chunks.len());
    assert!(grew < 32 * MIB as u64, "the process grew {grew} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_that_never_ends_is_refused_or_times_out() {
    // Fast: refused at the size limit, long before the deadline.
    let timeout = Duration::from_secs(5);
    let (trace, elapsed, _) = run(
        one_line(64 * MIB, 64 * 1024, Duration::ZERO),
        timeout,
        DEFAULT,
    )
    .await;
    assert_eq!(trace.error_class.as_deref(), Some("transport"), "{trace:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    // Slow (1 KiB a millisecond): the deadline.
    let timeout = Duration::from_secs(1);
    let slow = one_line(64 * MIB, 1024, Duration::from_millis(1));
    let (trace, elapsed, _) = run(slow, timeout, DEFAULT).await;
    assert_eq!(trace.error_class.as_deref(), Some("timeout"), "{trace:?}");
    assert_within(elapsed, timeout, &trace);
}

fn done_then(after: Vec<Step>) -> Vec<Step> {
    let mut steps = vec![
        Step::StreamHead,
        Step::Data(r#"{"choices":[{"delta":{"content":"a"}}]}"#.into()),
        Step::Data("[DONE]".into()),
    ];
    steps.extend(after);
    steps
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_left_open_after_done_is_a_prompt_success() {
    let timeout = Duration::from_secs(5);
    let (trace, elapsed, _) = run(done_then(vec![Step::Stall]), timeout, DEFAULT).await;
    assert_eq!(trace.outcome, "success", "{trace:?}");
    assert_eq!(trace.output_tokens, 1);
    // Ended at [DONE], plus at most the 100 ms spent draining: far from the deadline.
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_and_garbage_after_done_are_ignored() {
    let after = vec![
        Step::Raw(b"data: \xff\xfe\n\n".to_vec()),
        Step::Data("{not json".into()),
        Step::End,
    ];
    let (trace, _, _) = run(done_then(after), Duration::from_secs(5), DEFAULT).await;
    assert_eq!(trace.outcome, "success", "{trace:?}");
    assert_eq!(trace.error, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_million_tiny_chunks_are_bounded() {
    let timeout = Duration::from_secs(10);
    let steps = vec![
        Step::StreamHead,
        Step::Flood(
            r#"{"choices":[{"delta":{"content":"a"}}]}"#.into(),
            2_000_000,
        ),
        Step::Data("[DONE]".into()),
        Step::End,
    ];
    let (trace, elapsed, grew) = run(steps, timeout, DEFAULT).await;
    // max_tokens 5: at most 1024 token-bearing chunks are kept, then the request is stopped.
    assert_eq!(trace.error_class.as_deref(), Some("transport"), "{trace:?}");
    assert!(
        trace
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("more than 1024 token-bearing chunks"),
        "{:?}",
        trace.error
    );
    // The core kept the chunk past the bound too: the request ended right after it.
    assert_eq!(trace.chunks.len(), 1024 + 1);
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert!(grew < 32 * MIB as u64, "the process grew {grew} bytes");
}
