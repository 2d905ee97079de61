//! Batched completion prompts (`"prompt": ["a", "b"]`, or token-id lists), answered as vLLM
//! answers them: `n` choices per prompt, choice `p × n + i` for choice `i` of prompt `p`,
//! `usage` summed over the prompts, streamed or whole.

use serde_json::{Value, json};
use tokenmeter::Outcome;

use super::{events, json, post, server};
use crate::Config;

const MODEL: &str = tokenmeter_sim::DEFAULT_MODEL;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_batch_has_n_choices_per_prompt_and_usage_summed() {
    let handle = server(Config::default()).await;
    // 2 and 1 tokens by the estimate, and 3 token ids.
    for (prompt, tokens) in [
        (json!(["abcdefgh", "abc"]), 3),
        (json!([[1, 2, 3], [4]]), 4),
    ] {
        let body = json!({"model": MODEL, "prompt": prompt, "max_tokens": 2, "n": 2});
        let response = post(&handle, "/v1/completions", &body).await;
        assert_eq!(response.status(), 200);
        let whole = json(&response.text().await.expect("body"));
        let choices = whole["choices"].as_array().expect("choices");
        assert_eq!(choices.len(), 4, "{whole}");
        for (index, choice) in choices.iter().enumerate() {
            assert_eq!(choice["index"], index);
            assert_eq!(choice["finish_reason"], "length");
            assert!(!choice["text"].as_str().expect("text").is_empty());
        }
        assert_eq!(whole["usage"]["prompt_tokens"], tokens, "{whole}");
        assert_eq!(whole["usage"]["completion_tokens"], 8);
    }
    // One engine request per choice of each prompt, all delivered.
    let records = handle.records();
    assert_eq!(records.len(), 8);
    assert!(records.iter().all(|r| r.outcome == Outcome::Success));
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_batch_interleaves_its_prompts_choices() {
    let handle = server(Config::default()).await;
    let body = json!({"model": MODEL, "prompt": ["one", "two", "three"], "max_tokens": 3,
        "stream": true, "stream_options": {"include_usage": true}});
    let response = post(&handle, "/v1/completions", &body).await;
    assert_eq!(response.status(), 200);
    let events = events(&response.text().await.expect("body"));
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1].iter().map(|e| json(e)).collect();
    // 3 prompts × 3 tokens, the last of each with its finish reason; then one usage chunk.
    assert_eq!(chunks.len(), 3 * 3 + 1, "{chunks:#?}");
    for index in 0..3 {
        let mine: Vec<&Value> = chunks
            .iter()
            .filter(|c| c["choices"][0]["index"] == index)
            .collect();
        assert_eq!(mine.len(), 3, "{index}: {chunks:#?}");
        assert_eq!(mine[2]["choices"][0]["finish_reason"], "length");
    }
    let usage = &chunks[9]["usage"];
    assert_eq!(
        usage["prompt_tokens"],
        1 + 1 + 2,
        "ceil(characters / 4) each: {usage}"
    );
    assert_eq!(usage["completion_tokens"], 9);
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_or_empty_batch_is_a_400_naming_prompt() {
    let handle = server(Config::default()).await;
    for prompt in [json!([]), json!(["a", [1]]), json!([[1], []])] {
        let body = json!({"model": MODEL, "prompt": prompt});
        let response = post(&handle, "/v1/completions", &body).await;
        assert_eq!(response.status(), 400, "{prompt}");
        let error = json(&response.text().await.expect("body"));
        assert_eq!(error["error"]["param"], "prompt", "{error}");
        assert_eq!(error["error"]["code"], 400);
    }
    handle.shutdown().await.expect("clean shutdown");
}
