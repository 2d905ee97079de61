//! Quick start: meter simulated token streams and print the report.
//!
//! ```text
//! cargo run -p tokenmeter-examples --example quickstart
//! ```
//!
//! Twenty concurrent requests each wait in a queue, prefill (longer for longer prompts), then
//! stream 40–80 tokens about 20 ms apart, in real time. One in ten is dropped by its consumer
//! half-way (cancelled). tokenmeter wraps each stream and the in-memory sink prints percentiles
//! of TTFT, TPOT, ITL, E2E and the phases next to the token counts they were measured at.

use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};
use tokenmeter::sink::InMemorySink;
use tokenmeter::{Labels, Meter, MeterExt, Request};

/// A tiny deterministic generator, so every run shows the same workload.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// A simulated engine's token stream: `tokens` items, `gap` apart, after `prefill`.
fn generate(prefill: Duration, tokens: u64, gap: Duration) -> impl Stream<Item = String> {
    stream::iter(0..tokens).then(move |i| async move {
        tokio::time::sleep(if i == 0 { prefill } else { gap }).await;
        format!("tok{i} ")
    })
}

async fn serve_one(mut request: Request, seed: u64) -> usize {
    let mut rng = Lcg(seed);
    let input_tokens = 100 + rng.next(900);
    request.set_input_tokens(input_tokens);
    tokio::time::sleep(Duration::from_millis(rng.next(150))).await; // queue
    request.mark_scheduled();
    let prefill = Duration::from_micros(50_000 + input_tokens * 100);
    let output_tokens = 40 + rng.next(40);
    let gap = Duration::from_millis(15 + rng.next(10));
    let tokens = generate(prefill, output_tokens, gap).meter(request);
    if seed % 10 == 3 {
        // This consumer gives up half-way: recorded as cancelled.
        tokens.take(output_tokens as usize / 2).count().await
    } else {
        tokens.count().await
    }
}

#[tokio::main]
async fn main() {
    let memory = InMemorySink::new();
    let meter = Meter::builder().sink(memory.clone()).build();
    let series = meter.series(
        &Labels::server("chat")
            .provider("simulated")
            .request_model("llama-3-8b"),
    );

    let runs = (0..20u64).map(|seed| serve_one(series.start(), seed + 1));
    let streamed: usize = futures_util::future::join_all(runs).await.into_iter().sum();

    println!("streamed {streamed} items\n");
    println!("{}", memory.report());
}
