//! A scripted workload on a manual clock that exercises every metric of both profiles, engine
//! steps included.

use std::time::Duration;

use tokenmeter::sink::{AdmissionReason, CacheConfig, Step, StepKind, WaitingReason};
use tokenmeter::{Clock, Degradation, ErrorClass, FinishReason, Labels, ManualClock, Meter};
use tokenmeter_prometheus::{Builder, Metric, Profile};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Runs the workload against a local exporter of `profile` (with a 0.35 s TTFT edge) and
/// returns the exposition, rendered while two requests are still open (one waiting, one
/// running).
pub(crate) fn render(profile: Profile) -> String {
    let time = ManualClock::new();
    let (sink, handle) = Builder::new(profile)
        .add_edges(Metric::Ttft, &[0.35])
        .and_then(|b| b.add_edges(Metric::InputTokens, &[12.0]))
        .and_then(Builder::build_recorder)
        .expect("a local exporter");
    let meter = Meter::builder()
        .clock(Clock::manual(&time))
        .sink(sink)
        .max_series(2)
        .build();
    // KV-cache usage and preemptions go through the core's engine recorder, as steps do.
    let engine = meter.engine(
        &Labels::server("chat")
            .provider("vllm")
            .request_model("llama-3-8b"),
    );
    let server = meter.series(
        &Labels::server("chat")
            .provider("vllm")
            .request_model("llama-3-8b")
            .server_port(8000),
    );
    let client = meter.series(
        &Labels::client("chat")
            .provider("openai")
            .request_model("gpt-4o")
            .response_model("gpt-4o-2024-08-06"),
    );
    // Past the cap of two series: folded into `_OTHER`.
    let folded = meter.series(&Labels::server("embeddings").request_model("e5"));

    // A success: queued 10 ms, prefill 40 ms, three tokens 20 ms apart, ends at 100 ms; 8 of
    // its 12 prompt tokens came from the prefix cache; max_tokens 16, one choice.
    let mut r = server.start();
    r.set_input_tokens(12);
    r.set_cached_input_tokens(8);
    r.set_max_tokens(16);
    r.set_choices(1);
    time.advance(ms(10));
    r.mark_scheduled();
    time.advance(ms(40));
    r.record_tokens(1);
    time.advance(ms(20));
    r.record_tokens(1);
    time.advance(ms(20));
    r.record_tokens(1);
    time.advance(ms(10));
    r.set_finish_reason(FinishReason::Stop);
    r.succeed();

    // Cancelled after its first token, which came exactly on the 0.35 s edge.
    let mut r = server.start();
    time.advance(ms(350));
    r.record_tokens(1);
    time.advance(ms(50));
    drop(r);

    // Rate limited before any token.
    let mut r = server.start();
    time.advance(ms(5));
    r.fail(ErrorClass::RateLimited);

    // Degraded (a fallback model answered), cut by the token limit: two chunks of two tokens.
    let mut r = server.start();
    r.set_input_tokens(30);
    r.mark_degraded(Degradation::OtherModel);
    time.advance(ms(600));
    r.record_tokens(2);
    time.advance(ms(30));
    r.record_tokens(2);
    r.set_finish_reason(FinishReason::Length);
    r.succeed();

    // Still open at render: one running (past its first token), one waiting.
    let mut running = server.start();
    time.advance(ms(20));
    running.record_tokens(1);
    let waiting = server.start();

    // A client request: usage known, three chunks of 2, 3 and 1 tokens, the first chunk
    // reasoning.
    let mut r = client.start();
    r.set_input_tokens(100);
    time.advance(ms(200));
    r.record_reasoning_tokens(2);
    time.advance(ms(40));
    r.record_tokens(3);
    time.advance(ms(60));
    r.record_tokens(1);
    r.succeed();

    // A client request that failed on the wire after one chunk.
    let mut r = client.start();
    time.advance(ms(300));
    r.record_tokens(1);
    time.advance(ms(100));
    r.fail(ErrorClass::Transport);

    // A request on the folded series.
    let mut r = folded.start();
    time.advance(ms(70));
    r.record_tokens(1);
    r.succeed();

    engine.set_kv_cache_usage(0.25);
    engine.add_preemptions(3);
    engine.add_prefix_cache(12, 8);
    engine.add_speculation(2, 6, 4);
    // The model-server protocol's signals; the LoRA set replaced by the second call reads 0.
    engine.set_cache_config(CacheConfig::new(16, 1000));
    engine.set_waiting_by_reason(WaitingReason::Capacity, 2);
    engine.add_admission_rejections(AdmissionReason::QueueFull, 1);
    engine.set_lora_adapters(2, ["sql-lora"], []);
    engine.set_lora_adapters(2, ["sql-lora", "chat-lora"], ["sum-lora"]);

    // The engine's steps: a prefill of two prompts, decodes of 8 sequences in 8 ms (exactly on
    // an edge) and of 9 in 9 ms, and a mixed step (chunked prefill).
    let steps = meter.engine(
        &Labels::server("")
            .provider("vllm")
            .request_model("llama-3-8b"),
    );
    for step in [
        Step::new(StepKind::Prefill, 2, 42, ms(30)),
        Step::new(StepKind::Decode, 8, 8, ms(8)),
        Step::new(StepKind::Decode, 8, 8, ms(8)),
        Step::new(StepKind::Decode, 9, 9, ms(9)),
        Step::new(StepKind::Mixed, 5, 260, ms(40)),
    ] {
        steps.record(&step);
    }

    let text = handle.render();
    drop((running, waiting));
    text
}
