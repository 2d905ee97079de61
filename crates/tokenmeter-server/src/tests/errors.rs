//! Failures over HTTP: 429 under a tiny queue limit, injected failures (500 before the first
//! token, an SSE error event after it), bad requests, and a client that disconnects.

use futures_util::StreamExt;
use serde_json::json;
use tokenmeter::{ErrorClass, Outcome};

use super::{events, eventually, json, post, server};
use crate::Config;

fn chat(max_tokens: u32, stream: bool) -> serde_json::Value {
    json!({
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": max_tokens,
        "stream": stream,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_answers_429_in_openais_shape() {
    let handle = server(Config {
        max_batch: 1,
        queue_limit: 1,
        ..Config::default()
    })
    .await;
    // One runs (its first chunk has arrived) until its client hangs up below: 1,000 tokens
    // would take 7 s, so the queue cannot drain however slowly this test runs. One waits in
    // the queue...
    let running = post(&handle, "/v1/chat/completions", &chat(1_000, true)).await;
    assert_eq!(running.status(), 200);
    let waiting = tokio::spawn({
        let url = handle.url();
        async move {
            crate::tests::client()
                .post(format!("{url}/v1/chat/completions"))
                .body(chat(5, false).to_string())
                .send()
                .await
                .expect("answered")
                .status()
        }
    });
    eventually("a request in the queue", || {
        (handle.engine().queue_depth() == 1).then_some(())
    })
    .await;
    // ...so the next is refused.
    let refused = post(&handle, "/v1/chat/completions", &chat(5, true)).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body = json(&refused.text().await.expect("body"));
    assert_eq!(body["error"]["type"], "Too Many Requests");
    assert_eq!(body["error"]["code"], 429);
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("queue")
    );

    // The running one's client hangs up: the engine cancels it, which frees the batch for the
    // waiting one (recorded when it ends, before its answer is sent).
    drop(running);
    assert_eq!(waiting.await.expect("task"), 200);
    let records = handle.records();
    let count = |outcome: Outcome| records.iter().filter(|r| r.outcome == outcome).count();
    let limited = count(Outcome::Error(ErrorClass::RateLimited));
    assert_eq!((records.len(), limited), (3, 1), "{records:#?}");
    assert_eq!(
        (count(Outcome::Cancelled), count(Outcome::Success)),
        (1, 1),
        "{records:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_failures_are_500s_or_sse_error_events() {
    let handle = server(Config {
        error_rate: 1.0,
        seed: 7,
        ..Config::default()
    })
    .await;
    let (mut before, mut during) = (0, 0);
    // One at a time, so the seed decides every failure point.
    for _ in 0..12 {
        let response = post(&handle, "/v1/chat/completions", &chat(3, true)).await;
        match response.status().as_u16() {
            500 => {
                let body = json(&response.text().await.expect("body"));
                assert_eq!(body["error"]["type"], "InternalServerError");
                assert_eq!(body["error"]["code"], 500);
                before += 1;
            }
            200 => {
                let events = events(&response.text().await.expect("body"));
                let error = json(&events[events.len() - 2]);
                assert_eq!(error["error"]["type"], "InternalServerError", "{events:#?}");
                assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
                during += 1;
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert!(before > 0 && during > 0, "{before} before, {during} during");
    let response = post(
        &handle,
        "/v1/completions",
        &json!({"prompt": "x", "max_tokens": 2}),
    )
    .await;
    assert_eq!(response.status(), 500, "non-streaming failures are 500s");
    let records = handle.records();
    assert_eq!(records.len(), 13);
    assert!(
        records
            .iter()
            .all(|r| r.outcome == Outcome::Error(ErrorClass::ServerError))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_400s_and_recorded() {
    let handle = server(Config {
        kv_capacity: 100,
        ..Config::default()
    })
    .await;
    let response = crate::tests::client()
        .post(format!("{}/v1/chat/completions", handle.url()))
        .body("{not json")
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), 400);
    let body = json(&response.text().await.expect("body"));
    assert_eq!(body["error"]["type"], "BadRequestError");

    let too_large = post(&handle, "/v1/chat/completions", &chat(500, false)).await;
    assert_eq!(too_large.status(), 400);
    let body = json(&too_large.text().await.expect("body"));
    assert_eq!(body["error"]["type"], "BadRequestError");
    assert_eq!(body["error"]["code"], 400);

    let records = handle.records();
    assert_eq!(records.len(), 2);
    assert!(
        records
            .iter()
            .all(|r| r.outcome == Outcome::Error(ErrorClass::ClientError))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_stream_is_recorded_as_cancelled() {
    let handle = server(Config::default()).await;
    // 1,000 tokens would take 7 s.
    let response = post(&handle, "/v1/chat/completions", &chat(1_000, true)).await;
    let mut body = response.bytes_stream();
    let mut received = 0;
    while received < 3 {
        let bytes = body.next().await.expect("more").expect("bytes");
        received += bytes.windows(5).filter(|w| w == b"data:").count();
    }
    drop(body); // the client goes away
    let record = eventually("the cancelled record", || {
        handle
            .records()
            .into_iter()
            .find(|r| r.outcome == Outcome::Cancelled)
    })
    .await;
    assert!(record.output_tokens >= 2 && record.output_tokens < 1_000);
    eventually("the batch to empty", || {
        (handle.engine().snapshot().running == 0).then_some(())
    })
    .await;
}
