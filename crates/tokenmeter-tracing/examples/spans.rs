//! Each request's span carries its TTFT, tokens and outcome, next to the metrics.
//!
//! `cargo run -p tokenmeter-tracing --example spans` prints one line per closed span with
//! `gen_ai.response.time_to_first_chunk`, `gen_ai.usage.output_tokens`, `tokenmeter.outcome`, ….

use std::time::Duration;

use futures_util::{StreamExt as _, stream};
use tokenmeter::sink::{FanOut, InMemorySink};
use tokenmeter::{Labels, Meter, MeterExt as _};
use tokenmeter_tracing::{TracingSink, request_span};
use tracing::Instrument as _;
use tracing_subscriber::fmt::format::FmtSpan;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    tracing_subscriber::fmt()
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false)
        .init();

    let memory = InMemorySink::new();
    let meter = Meter::builder()
        .sink(FanOut::new().with(memory.clone()).with(TracingSink::new()))
        .build();
    let series = meter.series(&Labels::client("chat").request_model("llama-3-8b"));

    for (i, words) in [["Hello", "there"], ["Good", "bye"]]
        .into_iter()
        .enumerate()
    {
        let span = request_span!(
            tracing::Level::INFO,
            "chat",
            gen_ai.request.model = "llama-3-8b",
            request = i
        );
        async {
            // A model that takes 30 ms to its first token and 10 ms per token after it.
            let request = series.start();
            tokio::time::sleep(Duration::from_millis(20)).await;
            let tokens = stream::iter(words).then(|word| async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                word
            });
            let text: Vec<_> = tokens.meter(request).collect().await;
            tracing::info!(text = text.join(" "), "answered");
        }
        .instrument(span)
        .await;
    }
    let report = memory.report();
    println!("{report}");
}
