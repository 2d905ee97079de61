//! Response shapes: SSE chunks (chat and completions, with and without usage) and whole JSON
//! responses, and the server-side record of each.

use std::time::Instant;

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokenmeter::{FinishReason, Outcome};

use super::{events, json, post, server};
use crate::Config;
use crate::openai::estimate;

fn chat_body(stream: bool, include_usage: bool, max_tokens: Option<u32>) -> Value {
    let mut body = json!({
        "model": "sim-llama-3-8b",
        "messages": [{"role": "user", "content": "Say hello to the simulator, please."}],
        "stream": stream,
    });
    if include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    if let Some(max) = max_tokens {
        body["max_tokens"] = json!(max);
    }
    body
}

/// 3 + (3 + ceil(35 / 4)).
const CHAT_PROMPT_TOKENS: u64 = 15;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_stream_has_openais_shape_with_usage() {
    let handle = server(Config::default()).await;
    let response = post(
        &handle,
        "/v1/chat/completions",
        &chat_body(true, true, Some(5)),
    )
    .await;
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "text/event-stream");
    let id = headers["x-request-id"].to_str().expect("ascii").to_owned();
    assert!(id.starts_with("chatcmpl-"), "{id}");
    let events = events(&response.text().await.expect("body"));

    // role, 5 tokens (the last with the finish reason, as vLLM's), usage, [DONE]
    assert_eq!(events.len(), 8, "{events:#?}");
    assert_eq!(events[7], "[DONE]");
    let chunks: Vec<Value> = events[..7].iter().map(|e| json(e)).collect();
    for chunk in &chunks {
        assert_eq!(chunk["id"], id.as_str());
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "sim-llama-3-8b");
        assert!(chunk["created"].as_u64().is_some());
    }
    let role = &chunks[0]["choices"][0];
    assert_eq!(role["delta"], json!({"role": "assistant", "content": ""}));
    assert_eq!(role["finish_reason"], Value::Null);
    let mut text = String::new();
    for (at, chunk) in chunks[1..6].iter().enumerate() {
        let choice = &chunk["choices"][0];
        let finish = if at == 4 {
            json!("length")
        } else {
            Value::Null
        };
        assert_eq!(choice["finish_reason"], finish);
        text.push_str(choice["delta"]["content"].as_str().expect("content"));
        assert_eq!(chunk["usage"], Value::Null);
        assert!(chunk.as_object().expect("object").contains_key("usage"));
    }
    assert_eq!(text.split_whitespace().count(), 5, "{text:?}");
    assert_eq!(chunks[6]["choices"], json!([]));
    assert_eq!(
        chunks[6]["usage"],
        json!({"prompt_tokens": CHAT_PROMPT_TOKENS, "completion_tokens": 5, "total_tokens": CHAT_PROMPT_TOKENS + 5,
            "prompt_tokens_details": {"cached_tokens": 0}})
    );

    let record = handle.record_for(&id).expect("the server recorded it");
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(record.output_tokens, 5);
    assert_eq!(record.input_tokens, Some(CHAT_PROMPT_TOKENS));
    assert_eq!(record.finish_reason, Some(FinishReason::Length));
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_stream_without_usage_has_no_usage_field() {
    let handle = server(Config::default()).await;
    let response = post(
        &handle,
        "/v1/chat/completions",
        &chat_body(true, false, Some(3)),
    )
    .await;
    let events = events(&response.text().await.expect("body"));
    // role, 3 tokens (the last with the finish reason), [DONE]
    assert_eq!(events.len(), 5, "{events:#?}");
    for event in &events[..4] {
        let chunk = json(event);
        assert!(!chunk.as_object().expect("object").contains_key("usage"));
    }
    assert_eq!(json(&events[3])["choices"][0]["finish_reason"], "length");
    assert_eq!(events[4], "[DONE]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_stream_has_openais_shape() {
    let handle = server(Config::default()).await;
    let body = json!({
        "model": "sim-llama-3-8b", "prompt": "Once upon a time", "max_tokens": 4, "stream": true,
        "stream_options": {"include_usage": true},
    });
    let response = post(&handle, "/v1/completions", &body).await;
    assert_eq!(response.status(), 200);
    let events = events(&response.text().await.expect("body"));
    // 4 tokens, the last with the finish reason (as vLLM's: no chunk without text), usage,
    // [DONE]: no role frame
    assert_eq!(events.len(), 6, "{events:#?}");
    for (at, event) in events[..4].iter().enumerate() {
        let chunk = json(event);
        assert_eq!(chunk["object"], "text_completion");
        assert!(
            chunk["choices"][0]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        );
        let finish = if at == 3 {
            json!("length")
        } else {
            Value::Null
        };
        assert_eq!(chunk["choices"][0]["finish_reason"], finish);
    }
    let usage = json(&events[4]);
    assert_eq!(
        usage["usage"]["prompt_tokens"],
        estimate("Once upon a time")
    );
    assert_eq!(usage["usage"]["completion_tokens"], 4);
    assert_eq!(events[5], "[DONE]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streaming_answers_carry_usage() {
    let args = Config {
        default_max_tokens: 6,
        ..Config::default()
    };
    let handle = server(args).await;

    let response = post(
        &handle,
        "/v1/chat/completions",
        &chat_body(false, false, None),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body = json(&response.text().await.expect("body"));
    assert_eq!(body["object"], "chat.completion");
    let choice = &body["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    let content = choice["message"]["content"].as_str().expect("content");
    assert_eq!(content.split_whitespace().count(), 6, "{content:?}");
    assert_eq!(choice["finish_reason"], "stop"); // no max_tokens: the default, ending with stop
    assert_eq!(body["usage"]["completion_tokens"], 6);
    assert_eq!(body["usage"]["total_tokens"], CHAT_PROMPT_TOKENS + 6);

    let body = json!({"prompt": [1, 2, 3, 4, 5, 6, 7], "max_tokens": 2});
    let response = post(&handle, "/v1/completions", &body).await;
    let body = json(&response.text().await.expect("body"));
    assert_eq!(body["object"], "text_completion");
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    assert_eq!(body["usage"]["prompt_tokens"], 7);
    assert_eq!(body["usage"]["completion_tokens"], 2);
    let id = body["id"].as_str().expect("id");
    assert!(id.starts_with("cmpl-"));
    assert_eq!(
        handle.record_for(id).expect("recorded").outcome,
        Outcome::Success
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_ttft_is_never_below_the_servers() {
    let handle = server(Config::default()).await;
    for _ in 0..5 {
        let sent = Instant::now();
        let response = post(
            &handle,
            "/v1/chat/completions",
            &chat_body(true, true, Some(8)),
        )
        .await;
        let id = response.headers()["x-request-id"]
            .to_str()
            .expect("ascii")
            .to_owned();
        let mut body = response.bytes_stream();
        let mut client_ttft = None;
        let mut seen = String::new();
        while let Some(bytes) = body.next().await {
            seen.push_str(std::str::from_utf8(&bytes.expect("bytes")).expect("utf-8"));
            if client_ttft.is_none() && seen.contains(r#""delta":{"content":"#) {
                client_ttft = Some(sent.elapsed());
            }
        }
        let client_ttft = client_ttft.expect("a content chunk");
        let record = handle.record_for(&id).expect("recorded");
        let server_ttft = record.ttft.expect("server ttft");
        assert!(
            client_ttft >= server_ttft,
            "client {client_ttft:?} < server {server_ttft:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_models_answer() {
    let handle = server(Config {
        model: "my-model".to_owned(),
        ..Config::default()
    })
    .await;
    let (status, body) = super::get(&handle, "/health").await;
    assert_eq!(
        (status.as_u16(), json(&body)),
        (200, json!({"status": "ok"}))
    );
    let (status, body) = super::get(&handle, "/v1/models").await;
    assert_eq!(status, 200);
    assert_eq!(json(&body)["data"][0]["id"], "my-model");
    assert!(handle.local_addr().ip().is_loopback());
}
