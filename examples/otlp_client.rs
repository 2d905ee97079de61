//! OTLP client: an application measures a (simulated) provider's streaming responses as its
//! users feel them, and exports the GenAI metrics to an OpenTelemetry collector over OTLP.
//!
//! ```text
//! # with a collector on 127.0.0.1:4318 (HTTP/protobuf, the default) or :4317 (gRPC):
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 \
//!   cargo run -p tokenmeter-examples --example otlp_client -- 30
//! # gRPC, with an API key:
//! OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317 \
//!   OTEL_EXPORTER_OTLP_HEADERS=x-api-key=$KEY cargo run -p tokenmeter-examples --example otlp_client
//! ```
//!
//! Each simulated response is an OpenAI-style stream: a role-only frame (no token), deltas of
//! one to three tokens, a finish reason and a final `usage` chunk. Some requests are refused
//! with HTTP 429 before any token, some lose their connection mid-stream, and one in eight is
//! abandoned by its consumer half-way (cancelled). The collector receives
//! `gen_ai.client.inference.duration`, `…time_to_first_chunk`, `…time_per_output_chunk`, the
//! `gen_ai.client.inference.usage.*` counters and `…operation.*_tokens` histograms, and the
//! `tokenmeter.*` counters (the superseded `gen_ai.client.operation.*` and
//! `gen_ai.client.token.usage` only when asked for, see `OtelSinkBuilder::conventions`).
//! Without a collector the program still ends normally: failed exports are counted and
//! reported.

use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};
use tokenmeter::{ErrorClass, FinishReason, Labels, Meter, MeterExt, Observation, Request};
use tokenmeter_otel::OtlpConfig;

/// What the simulated provider streams.
#[derive(Debug)]
enum Chunk {
    /// The first frame: a role, no token.
    Role,
    /// A content delta carrying `tokens` tokens.
    Delta(u32),
    /// The finish reason.
    Finish(FinishReason),
    /// The final usage object.
    Usage { prompt: u64, completion: u64 },
}

/// A failed response, with its HTTP status when there was one.
#[derive(Debug)]
struct ProviderError {
    status: Option<u16>,
}

impl ProviderError {
    fn class(&self) -> ErrorClass {
        self.status
            .and_then(ErrorClass::from_http_status)
            .unwrap_or(ErrorClass::Transport)
    }
}

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

/// The simulated provider's response to request `seed`.
fn respond(seed: u64) -> impl Stream<Item = Result<Chunk, ProviderError>> {
    let mut rng = Lcg(seed);
    let ttft = Duration::from_millis(80 + rng.next(220));
    let deltas = 10 + rng.next(30);
    let prompt = 200 + rng.next(800);
    let mut script: Vec<(Duration, Result<Chunk, ProviderError>)> = Vec::new();
    if seed % 9 == 4 {
        script.push((ttft / 4, Err(ProviderError { status: Some(429) })));
    } else {
        script.push((Duration::ZERO, Ok(Chunk::Role)));
        let mut completion = 0;
        for i in 0..deltas {
            let tokens = 1 + rng.next(3) as u32;
            completion += u64::from(tokens);
            let gap = if i == 0 {
                ttft
            } else {
                Duration::from_millis(10 + rng.next(20))
            };
            script.push((gap, Ok(Chunk::Delta(tokens))));
            if seed % 13 == 5 && i == deltas / 2 {
                script.push((gap, Err(ProviderError { status: None })));
                break;
            }
        }
        script.push((Duration::ZERO, Ok(Chunk::Finish(FinishReason::Stop))));
        script.push((Duration::ZERO, Ok(Chunk::Usage { prompt, completion })));
    }
    stream::iter(script).then(|(wait, item)| async move {
        tokio::time::sleep(wait).await;
        item
    })
}

/// What one chunk means to the meter.
fn observe(item: &Result<Chunk, ProviderError>) -> Observation {
    match item {
        Ok(Chunk::Delta(tokens)) => Observation::tokens(*tokens),
        Ok(Chunk::Finish(reason)) => Observation::frame().with_finish(*reason),
        Ok(Chunk::Role | Chunk::Usage { .. }) => Observation::frame(),
        Err(error) => Observation::error(error.class()),
    }
}

/// Sends request `seed` (the request starts now: the send) and reads its stream.
async fn call(request: Request, seed: u64) {
    let mut response = std::pin::pin!(respond(seed).meter(request).with_observer(observe));
    let mut deltas = 0;
    while let Some(item) = response.next().await {
        match item {
            Ok(Chunk::Usage { prompt, completion }) => {
                let request = response.as_mut().request_pin_mut();
                request.set_input_tokens(prompt);
                request.set_output_tokens(completion);
            }
            Ok(Chunk::Delta(_)) => deltas += 1,
            Err(_) => break, // the request already ended with the error's class
            _ => {}
        }
        if seed % 8 == 7 && deltas == 5 {
            break; // this user gave up: dropping the stream records a cancellation
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let requests: u64 = match std::env::args().nth(1) {
        Some(n) => n
            .parse()
            .map_err(|_| format!("not a number of requests: {n}"))?,
        None => 30,
    };
    let service =
        std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "otlp-client-example".into());
    let otlp = OtlpConfig::new()
        .service_name(service)
        .interval(Duration::from_secs(5))
        .timeout(Duration::from_secs(3))
        .install()?;

    let meter = Meter::builder().sink(otlp.sink()).build();
    let series = meter.series(
        &Labels::client("chat")
            .provider("openai")
            .request_model("gpt-4o-mini")
            .server_address("api.example.invalid")
            .server_port(443),
    );
    let calls = (0..requests).map(|seed| call(series.start(), seed + 1));
    futures_util::future::join_all(calls).await;

    // Send what is left, waiting at most 5 s (off the async threads: it blocks).
    let (flushed, stats, shutdown) = tokio::task::spawn_blocking(move || {
        let flushed = otlp.flush(Duration::from_secs(5));
        let stats = otlp.stats();
        (flushed, stats, otlp.shutdown(Duration::from_secs(5)))
    })
    .await?;
    println!(
        "{requests} requests measured; OTLP exports: {} sent, {} failed",
        stats.succeeded, stats.failed
    );
    if let Err(error) = flushed.and(shutdown) {
        println!("the last export did not go through: {error}");
        println!("is a collector listening? set OTEL_EXPORTER_OTLP_ENDPOINT to its URL");
    }
    Ok(())
}
