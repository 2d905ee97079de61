//! `POST /v1/responses`: vLLM's event sequence and usage, the whole answer, the chat
//! endpoint's validation and error body, and the same server-side record as chat.

use serde_json::{Value, json};
use tokenmeter::{FinishReason, Outcome};

use super::{json, post, server};
use crate::Config;

/// The `(event, data)` pairs of a typed SSE body.
fn typed(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|frame| !frame.is_empty())
        .map(|frame| {
            let (event, data) = frame
                .strip_prefix("event: ")
                .and_then(|f| f.split_once("\ndata: "))
                .unwrap_or_else(|| panic!("not an event and a data line: {frame:?}"));
            (event.to_owned(), json(data))
        })
        .collect()
}

const PROMPT: &str = "Say hello to the simulator, please.";
/// 3 + (3 + ceil(35 / 4)), as the chat endpoint counts the same message.
const PROMPT_TOKENS: u64 = 15;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_has_vllms_event_sequence_and_usage() {
    let handle = server(Config::default()).await;
    let body =
        json!({"model": "sim-llama-3-8b", "input": PROMPT, "max_output_tokens": 3, "stream": true});
    let response = post(&handle, "/v1/responses", &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let events = typed(&response.text().await.expect("body"));
    let kinds: Vec<&str> = events.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (n, (kind, data)) in events.iter().enumerate() {
        assert_eq!(data["type"], kind.as_str());
        assert_eq!(data["sequence_number"], n as u64, "{kind}");
    }
    let text: String = events[4..7]
        .iter()
        .map(|(_, d)| d["delta"].as_str().expect("delta").to_owned())
        .collect();
    assert_eq!(events[7].1["text"], text.as_str());
    let done = &events[10].1["response"];
    assert_eq!(done["id"], id.as_str());
    assert_eq!(done["status"], "incomplete", "cut at max_output_tokens");
    assert_eq!(done["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(done["output"][0]["content"][0]["text"], text.as_str());
    assert_eq!(
        done["usage"],
        json!({"input_tokens": PROMPT_TOKENS, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": PROMPT_TOKENS + 3})
    );
    let record = handle.record_for(&id).expect("recorded");
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(
        (record.output_tokens, record.input_tokens),
        (3, Some(PROMPT_TOKENS))
    );
    assert_eq!(record.finish_reason, Some(FinishReason::Length));
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_comes_first_in_its_own_item() {
    let config = Config {
        reasoning_tokens: 2,
        default_max_tokens: 4,
        ..Config::default()
    };
    let handle = server(config).await;
    let body = json!({"input": [{"role": "user", "content": PROMPT}], "stream": true});
    let text = post(&handle, "/v1/responses", &body)
        .await
        .text()
        .await
        .unwrap();
    let events = typed(&text);
    let deltas: Vec<&str> = events
        .iter()
        .map(|(kind, _)| kind.as_str())
        .filter(|kind| kind.ends_with(".delta"))
        .collect();
    assert_eq!(
        deltas,
        [
            "response.reasoning_text.delta",
            "response.reasoning_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
        ]
    );
    let done = &events.last().unwrap().1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][0]["type"], "reasoning");
    assert_eq!(done["output"][1]["type"], "message");
    assert_eq!(
        done["usage"]["output_tokens_details"]["reasoning_tokens"],
        2
    );
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_answer_is_the_response_object() {
    let config = Config {
        default_max_tokens: 6,
        ..Config::default()
    };
    let handle = server(config).await;
    let body = json!({"input": PROMPT, "instructions": "Be terse."});
    let response = post(&handle, "/v1/responses", &body).await;
    assert_eq!(response.status(), 200);
    let body = json(&response.text().await.unwrap());
    assert_eq!(
        (&body["object"], &body["status"]),
        (&json!("response"), &json!("completed"))
    );
    assert_eq!(body["instructions"], "Be terse.");
    let text = body["output"][0]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert_eq!(text.split_whitespace().count(), 6, "{text:?}");
    // The system message counts as in a chat request: 3 + ceil(9 / 4).
    assert_eq!(body["usage"]["input_tokens"], PROMPT_TOKENS + 3 + 3);
    assert_eq!(body["usage"]["output_tokens"], 6);
    let record = handle
        .record_for(body["id"].as_str().unwrap())
        .expect("recorded");
    assert_eq!(record.outcome, Outcome::Success);
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_the_chat_endpoints_error_body() {
    let handle = server(Config::default()).await;
    for (body, status, param) in [
        (json!({"model": "sim-llama-3-8b"}), 400, "input"),
        (
            json!({"input": "x", "max_output_tokens": 0}),
            400,
            "max_output_tokens",
        ),
        (
            json!({"input": "x", "temperature": "hot"}),
            400,
            "temperature",
        ),
        (json!({"input": "x", "model": "gpt-4o"}), 404, "model"),
    ] {
        let response = post(&handle, "/v1/responses", &body).await;
        assert_eq!(response.status(), status, "{body}");
        let error = json(&response.text().await.unwrap());
        assert_eq!(error["error"]["param"], param, "{body}");
        assert_eq!(error["error"]["code"], status, "{body}");
    }
    let response = super::client()
        .post(format!("{}/v1/responses", handle.url()))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let get = super::client()
        .get(format!("{}/v1/responses", handle.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        (get.status().as_u16(), &get.headers()["allow"]),
        (405, &"POST".parse().unwrap())
    );
    handle.shutdown().await.expect("clean shutdown");
}

/// Issue 29, item 5: a Responses request is refused in its own words: `input` and
/// `max_output_tokens`, never the chat endpoint's `messages` and `max_tokens`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_name_the_responses_fields() {
    let handle = server(Config {
        max_answer_size: 8 * 1024,
        max_model_len: 256,
        ..Config::default()
    })
    .await;
    let cases = [
        // Larger than --max-answer-size held whole, streamed or not.
        (
            json!({"input": "x", "max_output_tokens": 2000}),
            "max_output_tokens",
            "--max-answer-size",
        ),
        (
            json!({"input": "x", "max_output_tokens": 2000, "stream": true}),
            "max_output_tokens",
            "--max-answer-size",
        ),
        // Past the context length.
        (
            json!({"input": "x", "max_output_tokens": 300, "stream": true}),
            "",
            "maximum context length",
        ),
    ];
    for (body, param, words) in cases {
        let response = post(&handle, "/v1/responses", &body).await;
        assert_eq!(response.status(), 400, "{body}");
        let error = json(&response.text().await.unwrap());
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(words), "{body}: {message}");
        assert!(message.contains("`max_output_tokens`"), "{body}: {message}");
        for chat in ["max_tokens", "messages", "\"stream\": true"] {
            assert!(!message.contains(chat), "{body}: names `{chat}`: {message}");
        }
        if !param.is_empty() {
            assert_eq!(error["error"]["param"], param, "{body}");
        }
    }
    handle.shutdown().await.expect("clean shutdown");
}
