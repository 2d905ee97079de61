//! ShareGPT datasets: a JSON array of `{"conversations": [{"from": "human", "value": ...},
//! {"from": "gpt", "value": ...}, ...]}`, read with `vllm bench serve`'s rules:
//!
//! - conversations with fewer than 2 messages are dropped; the rest are shuffled with `--seed`;
//! - a request is the first human message, its output length the length of the reply after it;
//! - pairs with a prompt or an output under 4 tokens, a prompt over 1,024 tokens or a total over
//!   2,048 are dropped.
//!
//! Lengths are counted with `--tokenizer`, else estimated from words (and said to be estimates).
//! With `--multi-turn`, a conversation is one request per human message, each sent with the
//! conversation before it (the dataset's own replies as the assistant's turns); the length
//! rules then apply to each turn's new message and reply.

use std::path::Path;

use rand::SeedableRng as _;
use rand::rngs::StdRng;
use rand::seq::SliceRandom as _;
use serde::Deserialize;
use serde_json::json;

use super::entry::{DatasetError, Entry, Options};
use super::{Prompt, PromptTokenizer};

/// vLLM's bounds on a ShareGPT pair.
const MIN_LEN: u64 = 4;
const MAX_PROMPT_LEN: u64 = 1024;
const MAX_TOTAL_LEN: u64 = 2048;

#[derive(Deserialize)]
struct Conversation {
    #[serde(default)]
    conversations: Vec<Message>,
}

#[derive(Deserialize)]
struct Message {
    from: String,
    value: String,
}

/// Reads a ShareGPT file.
pub(crate) fn parse(
    text: &str,
    path: &Path,
    options: Options<'_>,
) -> Result<Vec<Entry>, DatasetError> {
    let fail = |why: String| DatasetError::ShareGpt {
        path: path.to_owned(),
        why,
    };
    let mut conversations: Vec<Conversation> =
        serde_json::from_str(text).map_err(|e| fail(e.to_string()))?;
    conversations.retain(|c| c.conversations.len() >= 2);
    conversations.shuffle(&mut StdRng::seed_from_u64(options.seed));
    let count = |text: &str| length(text, options.tokenizer);
    let mut entries = Vec::new();
    for conversation in &conversations {
        let messages = &conversation.conversations;
        let mut history: Vec<serde_json::Value> = Vec::new();
        let mut history_tokens = 0_u64;
        let mut turns: Vec<Entry> = Vec::new();
        for pair in messages.chunks_exact(2) {
            let (ask, reply) = (&pair[0], &pair[1]);
            if ask.from != "human" || reply.from != "gpt" {
                break;
            }
            let (prompt_len, output_len) = (count(&ask.value), count(&reply.value));
            let valid = prompt_len >= MIN_LEN
                && output_len >= MIN_LEN
                && prompt_len <= MAX_PROMPT_LEN
                && prompt_len + output_len <= MAX_TOTAL_LEN;
            if !valid {
                break;
            }
            history.push(json!({"role": "user", "content": ask.value}));
            let prompt = if options.multi_turn {
                Prompt::Messages(history.clone())
            } else {
                Prompt::Text(ask.value.clone())
            };
            let exact = options.tokenizer.is_some();
            turns.push(Entry::single(
                prompt,
                history_tokens + prompt_len,
                exact,
                Some(output_len),
            ));
            if !options.multi_turn {
                break;
            }
            history.push(json!({"role": "assistant", "content": reply.value}));
            history_tokens += prompt_len + output_len;
        }
        let mut turns = turns.into_iter();
        if let Some(mut first) = turns.next() {
            first.next = turns.collect();
            entries.push(first);
        }
    }
    if entries.is_empty() {
        return Err(fail(format!(
            "no conversation has a human message and a reply within vLLM's bounds ({MIN_LEN} to \
             {MAX_PROMPT_LEN} prompt tokens, at least {MIN_LEN} output tokens, at most \
             {MAX_TOTAL_LEN} in all)"
        )));
    }
    Ok(entries)
}

fn length(text: &str, tokenizer: Option<&PromptTokenizer>) -> u64 {
    match tokenizer {
        Some(t) => t.count(text),
        None => Prompt::Text(text.to_owned()).estimate_tokens(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::entry::Format;

    fn options(multi_turn: bool) -> Options<'static> {
        Options {
            format: Format::Sharegpt,
            tokenizer: None,
            multi_turn,
            seed: 0,
        }
    }

    const FIXTURE: &str = r#"[
      {"id": "a", "conversations": [
        {"from": "human", "value": "what is the time to first token please"},
        {"from": "gpt", "value": "it is the time from the send to the first token"},
        {"from": "human", "value": "and the inter token latency then"},
        {"from": "gpt", "value": "the gap between two tokens of the stream"}]},
      {"id": "short", "conversations": [
        {"from": "human", "value": "hi"},
        {"from": "gpt", "value": "hello there how are you"}]},
      {"id": "alone", "conversations": [{"from": "human", "value": "one message only here"}]},
      {"id": "b", "conversations": [
        {"from": "human", "value": "name four phases of a request"},
        {"from": "gpt", "value": "queue prefill decode and the end"}]}
    ]"#;

    #[test]
    fn single_turn_keeps_vllms_pairs() {
        let entries = parse(FIXTURE, Path::new("s.json"), options(false)).unwrap();
        // "short" has a 1-word prompt and "alone" one message: dropped.
        assert_eq!(entries.len(), 2);
        let mut lengths: Vec<(u64, Option<u64>)> = entries
            .iter()
            .map(|e| (e.input_tokens, e.output_tokens))
            .collect();
        lengths.sort();
        assert_eq!(lengths, [(6, Some(6)), (8, Some(11))]);
        assert!(entries.iter().all(|e| e.next.is_empty() && !e.input_exact));
    }

    #[test]
    fn multi_turn_carries_the_history() {
        let entries = parse(FIXTURE, Path::new("s.json"), options(true)).unwrap();
        let a = entries
            .iter()
            .find(|e| !e.next.is_empty())
            .expect("the two-turn conversation");
        let second = &a.next[0];
        let Prompt::Messages(messages) = &second.prompt else {
            panic!("a multi-turn prompt is messages")
        };
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(
            messages[1]["content"],
            "it is the time from the send to the first token"
        );
        // The second turn's input: the first exchange (8 + 11) and its own message (6).
        assert_eq!(second.input_tokens, 25);
        assert_eq!(second.output_tokens, Some(8));
    }

    #[test]
    fn errors_name_the_format() {
        let err = parse(
            "{\"not\": \"an array\"}",
            Path::new("s.json"),
            options(false),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("s.json") && err.contains("conversations"),
            "{err}"
        );
        let err = parse(
            r#"[{"conversations": [{"from": "human", "value": "x"}, {"from": "gpt", "value": "y"}]}]"#,
            Path::new("s.json"),
            options(false),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("vLLM's bounds"), "{err}");
    }
}
