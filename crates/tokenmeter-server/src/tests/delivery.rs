//! The response bodies count what they hand to hyper: [`SseBody`] a token when its frame goes
//! out and the success with `[DONE]`, [`WholeBody`] the success when the JSON goes out; a body
//! dropped before (the client went away) leaves the request cancelled with what was handed.

use std::pin::Pin;

use bytes::Bytes;
use futures_util::StreamExt;
use tokenmeter::sink::InMemorySink;
use tokenmeter::{Clock, Meter, Outcome};
use tokenmeter_sim::{Engine, GenerateRequest, Operation, TokenStream};

use crate::choices::{Choices, Event};
use crate::chunks::Frames;
use crate::sse::{SseBody, WholeBody};

fn engine() -> (Engine, InMemorySink) {
    let memory = InMemorySink::new();
    let meter = Meter::builder()
        .clock(Clock::tokio())
        .sink(memory.clone())
        .build();
    let engine = Engine::builder().meter(meter).build().expect("an engine");
    (engine, memory)
}

fn frames() -> Frames {
    Frames::new(Operation::Chat, "chatcmpl-t".into(), 0, "m", true)
}

async fn sse(engine: &Engine, output: u32) -> SseBody {
    let tokens = engine
        .submit(GenerateRequest::chat(10, output))
        .expect("accepted");
    let mut choices = Choices::new(vec![tokens], None, None);
    assert!(choices.first().await.is_ok());
    SseBody::new(choices, frames(), 10)
}

/// The record of the one request, once it ended.
fn only(memory: &InMemorySink) -> (Outcome, u64) {
    let records = memory.records();
    assert_eq!(records.len(), 1, "{records:?}");
    (records[0].outcome, records[0].output_tokens)
}

#[tokio::test]
async fn an_sse_body_dropped_by_hyper_is_cancelled_with_the_frames_it_handed_over() {
    let (engine, memory) = engine();
    let mut body = sse(&engine, 10).await;
    // The role frame, then 3 token frames.
    for _ in 0..4 {
        body.next().await.expect("a frame").expect("infallible");
    }
    // The engine has produced (and queued) more than were handed over.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while engine.snapshot().kv_used_tokens < 10 + 6 {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            engine.snapshot()
        );
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    drop(body);
    assert_eq!(only(&memory), (Outcome::Cancelled, 3));
}

#[tokio::test]
async fn an_sse_body_succeeds_when_done_is_handed_over() {
    let (engine, memory) = engine();
    let mut body = sse(&engine, 3).await;
    // role, 3 tokens (the last with the finish reason), usage: everything but [DONE].
    for _ in 0..5 {
        body.next().await.expect("a frame").expect("infallible");
    }
    assert!(memory.records().is_empty(), "no outcome before [DONE]");
    let done = body.next().await.expect("[DONE]").expect("infallible");
    assert_eq!(&done[..], b"data: [DONE]\n\n");
    assert_eq!(only(&memory), (Outcome::Success, 3));
    assert!(body.next().await.is_none());
}

async fn whole(engine: &Engine) -> WholeBody {
    let tokens: TokenStream = engine
        .submit(GenerateRequest::chat(10, 5))
        .expect("accepted");
    let mut choices = Choices::new(vec![tokens], None, None);
    while let Some(event) = choices.next().await {
        assert!(matches!(event, Event::Piece(_)), "{event:?}");
    }
    WholeBody::new(
        vec![Bytes::from_static(b"{"), Bytes::from_static(b"}")],
        choices,
    )
}

#[tokio::test]
async fn a_whole_answer_succeeds_when_hyper_takes_it_and_is_cancelled_if_dropped_before() {
    let (engine, memory) = engine();
    drop(whole(&engine).await);
    assert_eq!(only(&memory), (Outcome::Cancelled, 5));

    memory.clear();
    let mut body = whole(&engine).await;
    assert!(memory.records().is_empty(), "held until written");
    let mut next = async || {
        std::future::poll_fn(|cx| http_body::Body::poll_frame(Pin::new(&mut body), cx))
            .await
            .expect("a part")
            .expect("infallible")
            .into_data()
            .expect("data")
    };
    assert_eq!(next().await, Bytes::from_static(b"{"));
    assert!(
        memory.records().is_empty(),
        "held until the last part is written"
    );
    assert_eq!(next().await, Bytes::from_static(b"}"));
    assert_eq!(only(&memory), (Outcome::Success, 5));
}
