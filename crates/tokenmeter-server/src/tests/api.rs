//! The OpenAI surface clients notice, as vLLM answers it: model names (404 for an unknown one,
//! `--served-model-name`, `--accept-any-model`, `GET /v1/models/{id}`), 400s that name the
//! field, `stop`, `n`, `logprobs`, and unknown routes and methods.

use serde_json::{Value, json};
use tokenmeter::{ErrorClass, FinishReason, Outcome};

use super::{events, get, json, post, server};
use crate::Config;

const MODEL: &str = tokenmeter_sim::DEFAULT_MODEL;

fn chat(extra: Value) -> Value {
    let mut body = json!({
        "model": MODEL,
        "messages": [{"role": "user", "content": "hi"}],
    });
    for (key, value) in extra.as_object().expect("an object") {
        body[key] = value.clone();
    }
    body
}

fn completion(extra: Value) -> Value {
    let mut body = json!({"model": MODEL, "prompt": "Once upon a time"});
    for (key, value) in extra.as_object().expect("an object") {
        body[key] = value.clone();
    }
    body
}

/// The chunks of an SSE body, `[DONE]` checked and left out.
fn chunks(body: &str) -> Vec<Value> {
    let events = events(body);
    assert_eq!(
        events.last().map(String::as_str),
        Some("[DONE]"),
        "{events:#?}"
    );
    events[..events.len() - 1].iter().map(|e| json(e)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_models_are_404s_and_served_names_are_listed() {
    let handle = server(Config {
        served_model_name: vec!["llama-8b".into(), "org/llama".into()],
        ..Config::default()
    })
    .await;
    let refused = post(
        &handle,
        "/v1/chat/completions",
        &chat(json!({"model": MODEL})),
    )
    .await;
    assert_eq!(refused.status(), 404);
    let body = json(&refused.text().await.expect("body"));
    assert_eq!(
        body,
        json!({"error": {"message": format!("The model `{MODEL}` does not exist."),
            "type": "NotFoundError", "param": "model", "code": 404}})
    );
    // Either name is served; responses report the first.
    for name in ["llama-8b", "org/llama"] {
        let answer = post(
            &handle,
            "/v1/completions",
            &completion(json!({"model": name, "max_tokens": 2})),
        )
        .await;
        assert_eq!(answer.status(), 200);
        assert_eq!(
            json(&answer.text().await.expect("body"))["model"],
            "llama-8b"
        );
    }
    let (status, list) = get(&handle, "/v1/models").await;
    assert_eq!(status, 200);
    let list = json(&list);
    let ids: Vec<&str> = list["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(ids, ["llama-8b", "org/llama"]);
    assert_eq!(list["data"][0]["root"], MODEL);
    let (status, one) = get(&handle, "/v1/models/org/llama").await;
    assert_eq!(status, 200);
    let one = json(&one);
    assert_eq!(
        (&one["id"], &one["object"]),
        (&json!("org/llama"), &json!("model"))
    );
    assert_eq!(one["max_model_len"], tokenmeter_sim::DEFAULT_MAX_MODEL_LEN);
    let (status, missing) = get(&handle, "/v1/models/gpt-4o").await;
    assert_eq!(status, 404);
    assert_eq!(
        json(&missing)["error"]["message"],
        "The model `gpt-4o` does not exist."
    );
    // The refusal is recorded, as a client error.
    let records = handle.records();
    assert_eq!(records.len(), 3);
    assert_eq!(
        records
            .iter()
            .filter(|r| r.outcome == Outcome::Error(ErrorClass::ClientError))
            .count(),
        1
    );
    handle.shutdown().await.expect("stops");

    let any = server(Config {
        accept_any_model: true,
        ..Config::default()
    })
    .await;
    let answer = post(
        &any,
        "/v1/chat/completions",
        &chat(json!({"model": "whatever", "max_tokens": 1})),
    )
    .await;
    assert_eq!(answer.status(), 200);
    assert_eq!(json(&answer.text().await.expect("body"))["model"], MODEL);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_values_are_400s_that_name_the_field() {
    let handle = server(Config::default()).await;
    for (path, body, param) in [
        (
            "/v1/chat/completions",
            chat(json!({"temperature": "hot"})),
            "temperature",
        ),
        ("/v1/chat/completions", chat(json!({"top_p": 1.5})), "top_p"),
        ("/v1/chat/completions", chat(json!({"n": 1000})), "n"),
        (
            "/v1/chat/completions",
            chat(json!({"logprobs": true, "top_logprobs": 21})),
            "top_logprobs",
        ),
        (
            "/v1/chat/completions",
            chat(json!({"stop": ["a", "b", "c", "d", "e"]})),
            "stop",
        ),
        (
            "/v1/chat/completions",
            chat(json!({"max_completion_tokens": -3})),
            "max_completion_tokens",
        ),
        (
            "/v1/completions",
            completion(json!({"frequency_penalty": 9})),
            "frequency_penalty",
        ),
        ("/v1/completions", completion(json!({"seed": "x"})), "seed"),
        (
            "/v1/completions",
            completion(json!({"logprobs": true})),
            "logprobs",
        ),
    ] {
        let response = post(&handle, path, &body).await;
        assert_eq!(response.status(), 400, "{body}");
        let error = json(&response.text().await.expect("body"));
        assert_eq!(error["error"]["type"], "BadRequestError", "{error}");
        assert_eq!(error["error"]["param"], param, "{error}");
        assert_eq!(error["error"]["code"], 400, "{error}");
        let message = error["error"]["message"].as_str().expect("message");
        assert!(message.contains(param), "{message}");
    }
    // The model is checked after the body, as vLLM does.
    let both = post(
        &handle,
        "/v1/chat/completions",
        &chat(json!({"model": "x", "temperature": -1})),
    )
    .await;
    assert_eq!(both.status(), 400);
    assert_eq!(handle.records().len(), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_sequences_end_the_text_before_them() {
    let handle = server(Config::default()).await;
    // Most of the simulator's words hold an `e`: 60 tokens without one are all but impossible.
    let stop = json!({"stop": ["e", "zzz"], "max_tokens": 60});
    let whole = post(&handle, "/v1/chat/completions", &chat(stop.clone())).await;
    let id = whole.headers()["x-request-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let whole = json(&whole.text().await.expect("body"));
    let choice = &whole["choices"][0];
    assert_eq!(choice["finish_reason"], "stop", "{whole}");
    let text = choice["message"]["content"].as_str().expect("text");
    assert!(!text.contains('e'), "{text:?}");
    let used = whole["usage"]["completion_tokens"].as_u64().expect("usage");
    assert!((1..60).contains(&used), "{whole}");
    let record = handle.record_for(&id).expect("recorded");
    assert_eq!(
        (record.outcome, record.output_tokens),
        (Outcome::Success, used)
    );
    assert_eq!(record.finish_reason, Some(FinishReason::Stop));

    let mut streamed = completion(stop);
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let response = post(&handle, "/v1/completions", &streamed).await;
    let chunks = chunks(&response.text().await.expect("body"));
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["text"].as_str())
        .collect();
    assert!(!text.contains('e'), "{text:?}");
    let finish = &chunks[chunks.len() - 2]["choices"][0];
    assert_eq!(finish["finish_reason"], "stop", "{chunks:#?}");
    let used = chunks[chunks.len() - 1]["usage"]["completion_tokens"]
        .as_u64()
        .expect("usage");
    assert!(used < 60, "{chunks:#?}");
    // Every request ended, none cancelled; the engine freed the stopped ones at once.
    super::eventually("the batch to empty", || {
        (handle.engine().snapshot().running == 0).then_some(())
    })
    .await;
    assert!(
        handle
            .records()
            .iter()
            .all(|r| r.outcome == Outcome::Success)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_choices_come_with_their_index_and_usage_sums_them() {
    let handle = server(Config::default()).await;
    let whole = post(
        &handle,
        "/v1/chat/completions",
        &chat(json!({"n": 3, "max_tokens": 4})),
    )
    .await;
    let whole = json(&whole.text().await.expect("body"));
    let choices = whole["choices"].as_array().expect("choices");
    assert_eq!(choices.len(), 3);
    for (index, choice) in choices.iter().enumerate() {
        assert_eq!(choice["index"], index);
        assert_eq!(choice["finish_reason"], "length");
    }
    assert_eq!(whole["usage"]["completion_tokens"], 12);
    assert_eq!(
        whole["usage"]["total_tokens"],
        whole["usage"]["prompt_tokens"].as_u64().expect("prompt") + 12
    );

    let body = chat(
        json!({"n": 2, "max_tokens": 3, "stream": true, "stream_options": {"include_usage": true}}),
    );
    let response = post(&handle, "/v1/chat/completions", &body).await;
    let chunks = chunks(&response.text().await.expect("body"));
    // Per choice: role, 3 tokens (the last with the finish reason); then usage.
    assert_eq!(chunks.len(), 2 * 4 + 1, "{chunks:#?}");
    for index in 0..2 {
        let mine: Vec<&Value> = chunks
            .iter()
            .filter(|c| c["choices"][0]["index"] == index)
            .collect();
        assert_eq!(mine.len(), 4, "{chunks:#?}");
        assert_eq!(mine[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(mine[3]["choices"][0]["finish_reason"], "length");
    }
    assert_eq!(chunks[8]["usage"]["completion_tokens"], 6);
    // One engine request per choice, as vLLM runs n sequences.
    let records = handle.records();
    assert_eq!(records.len(), 5);
    assert!(records.iter().all(|r| r.outcome == Outcome::Success));
    // `n` is published once per client request (3, then 2), `max_tokens` once per choice
    let mut choices: Vec<u32> = records.iter().filter_map(|r| r.choices).collect();
    choices.sort_unstable();
    assert_eq!(choices, [2, 3]);
    assert!(records.iter().all(|r| r.max_tokens.is_some()));
    let metrics = handle.metrics_text();
    // summed over the series (chat and text_completion, in the exporter's own order)
    let sum: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("tokenmeter_request_choices_sum"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(sum, 5.0, "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logprobs_have_openais_shape() {
    let handle = server(Config::default()).await;
    let whole = post(
        &handle,
        "/v1/chat/completions",
        &chat(json!({"logprobs": true, "top_logprobs": 2, "max_tokens": 3})),
    )
    .await;
    let whole = json(&whole.text().await.expect("body"));
    let content = whole["choices"][0]["logprobs"]["content"]
        .as_array()
        .expect("content");
    assert_eq!(content.len(), 3);
    let text: String = content.iter().filter_map(|t| t["token"].as_str()).collect();
    assert_eq!(whole["choices"][0]["message"]["content"], text.as_str());
    for token in content {
        assert!(token["logprob"].as_f64().expect("logprob") <= 0.0);
        assert_eq!(token["top_logprobs"].as_array().map(Vec::len), Some(2));
        assert_eq!(token["top_logprobs"][0]["token"], token["token"]);
    }
    let plain = post(
        &handle,
        "/v1/chat/completions",
        &chat(json!({"max_tokens": 1})),
    )
    .await;
    assert_eq!(
        json(&plain.text().await.expect("body"))["choices"][0]["logprobs"],
        Value::Null
    );

    let streamed = completion(json!({"logprobs": 2, "max_tokens": 3, "stream": true}));
    let response = post(&handle, "/v1/completions", &streamed).await;
    let chunks = chunks(&response.text().await.expect("body"));
    let mut offset = 0;
    for chunk in &chunks[..3] {
        let choice = &chunk["choices"][0];
        let logprobs = &choice["logprobs"];
        assert_eq!(logprobs["tokens"][0], choice["text"]);
        assert_eq!(logprobs["text_offset"][0], offset);
        assert_eq!(
            logprobs["top_logprobs"][0].as_object().map(|m| m.len()),
            Some(2)
        );
        offset += choice["text"].as_str().expect("text").len();
    }
    // The last token's chunk carries the finish reason (as vLLM's): no chunk without a token.
    assert_eq!(chunks.len(), 3, "{chunks:#?}");
    assert_eq!(chunks[2]["choices"][0]["finish_reason"], "length");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_routes_and_methods_answer_error_json() {
    let handle = server(Config::default()).await;
    let (status, body) = get(&handle, "/v1/nope").await;
    assert_eq!(status, 404);
    assert_eq!(json(&body)["error"]["code"], 404);
    assert_eq!(json(&body)["error"]["type"], "Not Found");
    let response = crate::tests::client()
        .delete(format!("{}/v1/chat/completions", handle.url()))
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "POST");
    let body = json(&response.text().await.expect("body"));
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("DELETE")
    );
    let (status, _) = {
        let response = crate::tests::client()
            .post(format!("{}/v1/models", handle.url()))
            .send()
            .await
            .expect("answered");
        (response.status(), response.headers()["allow"].clone())
    };
    assert_eq!(status, 405);
}
