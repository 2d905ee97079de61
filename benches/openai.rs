//! Per-chunk cost of reading an OpenAI-compatible stream, in memory (no socket, no HTTP): a
//! response of [`CHUNKS`] chat-completion chunks, one SSE event per body frame as a paced
//! server sends them, read (a) `frames`: frame by frame, each scanned for its event's end
//! (the least any SSE reader does); (b) `sse`: through `SseChunks` (events decoded, each JSON
//! chunk parsed, stamped on the clock), not metered; (c) `metered`: the same through
//! `SseChunks::meter` on a meter with the in-memory sink that keeps every chunk's time (what
//! `tokenmeter bench` does per chunk). Prints b÷a, c÷a and c÷b.
//!
//! ```text
//! cargo bench -p tokenmeter-benches --bench openai
//! ```

use std::convert::Infallible;
use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, Throughput};
use futures_util::{Stream, stream};
use tokenmeter::sink::InMemorySink;
use tokenmeter::{Clock, Labels, Meter};
use tokenmeter_benches::{drain, print_ratio};
use tokenmeter_openai::SseChunks;

const CHUNKS: usize = 1_000;
const GROUP: &str = "openai_per_chunk";

/// The frames of one response: a role chunk, `CHUNKS` one-token content chunks, a finish
/// chunk with `usage`, `[DONE]`.
fn frames() -> Vec<Bytes> {
    let head = r#"{"id":"chatcmpl-bench-0001","object":"chat.completion.chunk","created":1733140000,"model":"paced","choices":[{"index":0,"delta":"#;
    let event = |data: String| Bytes::from(format!("data: {data}\n\n"));
    let mut frames = vec![event(format!(
        r#"{head}{{"role":"assistant","content":""}},"finish_reason":null}}]}}"#
    ))];
    for i in 0..CHUNKS {
        frames.push(event(format!(
            r#"{head}{{"content":" tok{i}"}},"logprobs":null,"finish_reason":null}}]}}"#
        )));
    }
    frames.push(event(format!(
        r#"{head}{{}},"finish_reason":"length"}}],"usage":{{"prompt_tokens":64,"completion_tokens":{CHUNKS},"total_tokens":{}}}}}"#,
        CHUNKS + 64
    )));
    frames.push(event("[DONE]".into()));
    frames
}

fn body(frames: &[Bytes]) -> impl Stream<Item = Result<Bytes, Infallible>> + '_ {
    stream::iter(frames.iter().cloned().map(Ok))
}

fn per_chunk(c: &mut Criterion) {
    let frames = frames();
    let mut group = c.benchmark_group(GROUP);
    group.throughput(Throughput::Elements(CHUNKS as u64));
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_secs(1));

    group.bench_function("frames", |b| {
        b.iter(|| {
            drain(body(&frames), |frame| {
                let Ok(frame) = frame;
                black_box(frame.windows(2).position(|w| w == b"\n\n"));
            })
        });
    });

    let clock = Clock::monotonic();
    group.bench_function("sse", |b| {
        b.iter(|| {
            drain(SseChunks::new(body(&frames), clock.clone()), |chunk| {
                black_box(chunk.ok());
            })
        });
    });

    let memory = InMemorySink::new();
    let meter = Meter::builder()
        .clock(clock.clone())
        .sink(memory.clone())
        .build();
    let series = meter.series(&Labels::client("chat").request_model("paced"));
    group.bench_function("metered", |b| {
        b.iter(|| {
            let chunks = SseChunks::new(body(&frames), clock.clone()).meter(series.start());
            drain(chunks, |chunk| {
                black_box(chunk.ok());
            });
            memory.clear();
        })
    });
    group.finish();
    print_ratio(GROUP, "sse/frames", "sse", "frames");
    print_ratio(GROUP, "metered/frames", "metered", "frames");
    print_ratio(GROUP, "metered/sse", "metered", "sse");
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    per_chunk(&mut criterion);
    criterion.final_summary();
}
