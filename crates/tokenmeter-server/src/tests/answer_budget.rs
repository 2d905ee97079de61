//! The answer budget (`--max-answer-memory`, `budget.rs`) in process: a whole answer holds its
//! worst case from before the engine, and gives it back on every path: answered, failed, and
//! cancelled by a client that went away. Streams hold nothing.

use std::time::Duration;

use serde_json::{Value, json};
use tokenmeter::Outcome;

use super::{eventually, post, server};
use crate::Config;
use crate::budget::worst_case;

const CHAT: &str = "/v1/chat/completions";

/// 20 ms a decode step: 1,000 tokens take 20 s, far longer than the test.
fn slow_engine() -> Config {
    Config {
        decode_table: vec![(1, Duration::from_millis(20))],
        ..Config::default()
    }
}

fn chat(max_tokens: u32, stream: bool) -> Value {
    json!({
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": max_tokens,
        "stream": stream,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_answer_gives_its_share_back_on_every_path() {
    let handle = server(slow_engine()).await;
    let budget = handle.state.answer_budget.clone();
    let sink = handle.record_sink().expect("records kept");
    let model = handle.model().len();

    // Answered: given back once the body is read.
    let answer = post(&handle, CHAT, &chat(3, false)).await;
    assert_eq!(answer.status(), 200);
    let text = answer.text().await.expect("a body");
    assert!(text.contains(r#""completion_tokens":3"#), "{text}");
    eventually("the answered request's share given back", || {
        (budget.used() == 0).then_some(())
    })
    .await;

    // Cancelled: held while its tokens come, given back when the client goes away.
    let url = format!("{}{CHAT}", handle.url());
    let client = tokio::spawn(async move {
        crate::tests::client()
            .post(url)
            .header("content-type", "application/json")
            .body(chat(1_000, false).to_string())
            .send()
            .await
    });
    let worst = worst_case(true, 1, 1_000, None, model);
    eventually("the whole answer's worst case held", || {
        (budget.used() == worst).then_some(())
    })
    .await;
    // A stream alongside holds nothing.
    let stream = post(&handle, CHAT, &chat(2, true)).await;
    assert_eq!(stream.status(), 200);
    assert!(stream.text().await.expect("a body").contains("[DONE]"));
    assert_eq!(budget.used(), worst, "a stream holds nothing of the budget");
    client.abort();
    eventually("the cancelled request's share given back", || {
        (budget.used() == 0).then_some(())
    })
    .await;
    eventually("the request recorded as cancelled", || {
        sink.records()
            .iter()
            .any(|r| r.outcome == Outcome::Cancelled)
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_answer_gives_its_share_back() {
    let handle = server(Config {
        error_rate: 1.0,
        ..slow_engine()
    })
    .await;
    let answer = post(&handle, CHAT, &chat(5, false)).await;
    assert_eq!(answer.status(), 500);
    let budget = handle.state.answer_budget.clone();
    eventually("the failed request's share given back", || {
        (budget.used() == 0).then_some(())
    })
    .await;
}
