//! Reading OpenAI requests: the fields the simulator needs, and a deterministic prompt-token
//! estimate.
//!
//! # Token estimate
//!
//! The simulator has no tokenizer. A text counts `ceil(characters / 4)` tokens (characters are
//! Unicode scalar values; OpenAI's rule of thumb for English). A chat request adds 3 tokens per
//! message and 3 for the reply's priming, as OpenAI's cookbook counts them. A completion prompt
//! given as token ids counts one token per id.

use std::sync::Arc;

use serde_json::Value;
use serde_json::error::Category;
use tokenmeter::FinishReason;
use tokenmeter_sim::{GenerateRequest, Operation, prompt_blocks};

use super::api_error::ApiError;
use super::fields::{Fields, type_name};
use super::sampling::{self, Options};
use crate::tokenizer::PromptTokenizer;

/// What is wrong with a body that is not JSON, in words that never quote it (only the
/// position).
fn describe(error: &serde_json::Error) -> String {
    let at = format!("at line {} column {}", error.line(), error.column());
    match error.classify() {
        Category::Syntax | Category::Data => format!("not valid JSON {at}"),
        Category::Eof => "the JSON ends early: send the whole object".to_owned(),
        Category::Io => format!("the body could not be read {at}"),
    }
}

/// What the server needs from a request.
#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    /// The generation to run (for each choice): of the only prompt, or the first of a batch.
    pub(crate) generate: GenerateRequest,
    /// The generations of the other prompts of a batched completion (`"prompt": ["a", "b"]`),
    /// in order: each its own engine request with `n` choices, as vLLM runs them.
    pub(crate) rest: Vec<GenerateRequest>,
    /// The options: model, streaming, `n`, stop sequences, logprobs.
    pub(crate) options: Options,
}

impl Parsed {
    /// Every prompt's generation, in order.
    pub(crate) fn prompts(&self) -> impl Iterator<Item = &GenerateRequest> {
        std::iter::once(&self.generate).chain(&self.rest)
    }

    /// The choices of the answer: `n` for each prompt.
    pub(crate) fn choices(&self) -> u32 {
        let prompts = u32::try_from(1 + self.rest.len()).unwrap_or(u32::MAX);
        self.options.n.max(1).saturating_mul(prompts)
    }

    /// The prompt tokens of every prompt (`usage.prompt_tokens`).
    pub(crate) fn prompt_tokens(&self) -> u32 {
        self.prompts()
            .fold(0u32, |sum, g| sum.saturating_add(g.prompt_tokens))
    }
}

/// The JSON of a body, as [`Fields`] read it.
fn json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(None, format!("invalid request body: {}", describe(&e))))
}

/// Parses a `/v1/chat/completions` body.
pub(crate) fn chat(
    body: &[u8],
    default_max_tokens: u32,
    counter: &Counter,
) -> Result<Parsed, ApiError> {
    let body = json(body)?;
    let fields = Fields::of(&body)?;
    let messages = match fields.required("messages")? {
        Value::Array(messages) => messages,
        other => {
            return Err(ApiError::bad_request(
                Some("messages"),
                format!(
                    "`messages` must be an array of messages, not {}",
                    type_name(other)
                ),
            ));
        }
    };
    if messages.is_empty() {
        return Err(ApiError::bad_request(
            Some("messages"),
            "`messages` is empty: send at least one message",
        ));
    }
    let mut prompt = 3u64;
    let mut text = String::new();
    for message in messages {
        let Value::Object(message) = message else {
            return Err(ApiError::bad_request(
                Some("messages"),
                format!(
                    "each of `messages` must be an object, not {}",
                    type_name(message)
                ),
            ));
        };
        let content = message.get("content").unwrap_or(&Value::Null);
        prompt = prompt.saturating_add(3 + content_tokens(content, counter));
        push_text(content, &mut text);
    }
    let options = sampling::read(fields, Operation::Chat)?;
    let generate = generation(
        Operation::Chat,
        prompt,
        options.max_tokens,
        default_max_tokens,
    )
    .prompt_blocks(prompt_blocks(&text, generate_prompt(prompt)));
    Ok(Parsed {
        generate,
        rest: Vec::new(),
        options,
    })
}

/// Parses a `/v1/completions` body: one prompt, or a batch of them.
pub(crate) fn completion(
    body: &[u8],
    default_max_tokens: u32,
    counter: &Counter,
) -> Result<Parsed, ApiError> {
    let body = json(body)?;
    let fields = Fields::of(&body)?;
    let batch = batch(fields.required("prompt")?)?;
    let options = sampling::read(fields, Operation::TextCompletion)?;
    let mut generations = batch.into_iter().map(|prompt_value| {
        let prompt = prompt_tokens(prompt_value, counter);
        let mut text = String::new();
        push_text(prompt_value, &mut text);
        generation(
            Operation::TextCompletion,
            prompt,
            options.max_tokens,
            default_max_tokens,
        )
        .prompt_blocks(prompt_blocks(&text, generate_prompt(prompt)))
    });
    let generate = generations.next().ok_or_else(no_prompt)?;
    Ok(Parsed {
        generate,
        rest: generations.collect(),
        options,
    })
}

/// The generation: `max_tokens` tokens ending with `length`, or the default ending with `stop`.
fn generation(
    operation: Operation,
    prompt: u64,
    max_tokens: Option<u32>,
    default_max_tokens: u32,
) -> GenerateRequest {
    let prompt = generate_prompt(prompt);
    let (output, finish) = match max_tokens {
        Some(n) => (n.max(1), FinishReason::Length),
        None => (default_max_tokens.max(1), FinishReason::Stop),
    };
    let request = GenerateRequest::new(operation, prompt, output).finish_reason(finish);
    match max_tokens {
        Some(n) => request.max_tokens(n),
        None => request,
    }
}

/// The prompt length as the engine takes it.
fn generate_prompt(prompt: u64) -> u32 {
    u32::try_from(prompt).unwrap_or(u32::MAX)
}

/// Appends the text of a message `content` or completion `prompt` (a string, text parts, or
/// token ids spelled as numbers), so that equal prompts give equal prefix-cache blocks.
fn push_text(value: &Value, out: &mut String) {
    match value {
        Value::String(text) => out.push_str(text),
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Number(id) => {
                        out.push_str(&id.to_string());
                        out.push(' ');
                    }
                    Value::Object(part) => {
                        if let Some(text) = part.get("text").and_then(Value::as_str) {
                            out.push_str(text);
                        }
                    }
                    other => push_text(other, out),
                }
            }
        }
        _ => {}
    }
}

/// Estimated tokens of a text: `ceil(chars / 4)`.
pub(crate) fn estimate(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// How prompt tokens are counted: estimated from characters, or with `--tokenizer`.
#[derive(Clone, Debug, Default)]
pub(crate) enum Counter {
    /// `ceil(chars / 4)`.
    #[default]
    Estimate,
    /// Exactly, with the model's tokenizer (no special tokens; a chat message adds 3 and the
    /// conversation 3, as an estimate of the template).
    Tokenizer(Arc<PromptTokenizer>),
}

impl Counter {
    fn count(&self, text: &str) -> u64 {
        match self {
            Counter::Estimate => estimate(text),
            Counter::Tokenizer(tokenizer) => tokenizer.count(text),
        }
    }
}

/// Tokens of a chat message's content: a string, or an array of parts whose `text` counts.
fn content_tokens(content: &Value, counter: &Counter) -> u64 {
    match content {
        Value::String(text) => counter.count(text),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .map(|text| counter.count(text))
            .sum(),
        _ => 0,
    }
}

/// The prompts of a completion's `prompt`, as vLLM takes them: a string or an array of token
/// ids (one prompt), or a non-empty array of strings, or of non-empty token-id arrays (a
/// batch: one prompt each).
fn batch(prompt: &Value) -> Result<Vec<&Value>, ApiError> {
    let ids = |value: &Value| matches!(value, Value::Array(ids) if ids.iter().all(Value::is_u64));
    match prompt {
        Value::String(_) => Ok(vec![prompt]),
        Value::Array(items) if items.is_empty() => Err(no_prompt()),
        Value::Array(_) if ids(prompt) => Ok(vec![prompt]),
        Value::Array(items)
            if items.iter().all(Value::is_string)
                || items
                    .iter()
                    .all(|item| ids(item) && item.as_array().is_some_and(|a| !a.is_empty())) =>
        {
            Ok(items.iter().collect())
        }
        _ => Err(ApiError::bad_request(
            Some("prompt"),
            "`prompt` must be a string, an array of token ids, or a batch: an array of strings or of token-id arrays",
        )),
    }
}

fn no_prompt() -> ApiError {
    ApiError::bad_request(
        Some("prompt"),
        "`prompt` is an empty array: send a string, token ids, or at least one prompt",
    )
}

/// Tokens of one completion prompt (of [`batch`]): a string, or token ids.
fn prompt_tokens(prompt: &Value, counter: &Counter) -> u64 {
    match prompt {
        Value::String(text) => counter.count(text),
        Value::Array(ids) => ids.len() as u64,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_four_characters_per_token() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("abc"), 1);
        assert_eq!(estimate("abcd"), 1);
        assert_eq!(estimate("abcde"), 2);
        assert_eq!(estimate("héllo wörld!"), 3); // 12 characters, not 14 bytes
    }

    #[test]
    fn chat_counts_messages_and_reads_the_limits() {
        let body = br#"{"model":"x","messages":[
            {"role":"system","content":"You are terse."},
            {"role":"user","content":[{"type":"text","text":"Hello there"}]}],
            "max_completion_tokens":7,"max_tokens":99,"stream":true,
            "stream_options":{"include_usage":true},"temperature":0.2}"#;
        let parsed = chat(body, 128, &Counter::Estimate).expect("valid");
        // 3 + (3 + 4) + (3 + 3)
        assert_eq!(parsed.generate.prompt_tokens, 16);
        assert_eq!(parsed.generate.output_tokens, 7);
        assert_eq!(parsed.generate.finish, FinishReason::Length);
        assert!(parsed.options.stream && parsed.options.include_usage);

        let plain = chat(
            br#"{"messages":[{"role":"user","content":"hi"}]}"#,
            128,
            &Counter::Estimate,
        )
        .expect("ok");
        assert_eq!(plain.generate.output_tokens, 128);
        assert_eq!(plain.generate.finish, FinishReason::Stop);
        assert!(!plain.options.stream && !plain.options.include_usage);
    }

    #[test]
    fn completion_prompts_in_every_shape() {
        let tokens = |prompt: &str| {
            let body = format!(r#"{{"prompt":{prompt},"max_tokens":3,"n":2}}"#);
            completion(body.as_bytes(), 16, &Counter::Estimate).map(|p| {
                assert_eq!(p.choices(), 2 * (1 + p.rest.len() as u32), "{prompt}");
                p.prompts().map(|g| g.prompt_tokens).collect::<Vec<_>>()
            })
        };
        assert_eq!(tokens(r#""abcdefgh""#).expect("string"), [2]);
        assert_eq!(tokens("[1,2,3,4,5]").expect("ids"), [5]);
        assert_eq!(tokens(r#"["abcdefgh"]"#).expect("one string"), [2]);
        assert_eq!(tokens("[[1,2,3]]").expect("one id list"), [3]);
        // Batches, as vLLM takes them: one prompt each.
        assert_eq!(tokens(r#"["a","bcdef"]"#).expect("strings"), [1, 2]);
        assert_eq!(tokens("[[1,2,3],[4]]").expect("id lists"), [3, 1]);
        for bad in [
            "42",
            "[]",
            r#"["a",[1]]"#,
            "[[1],[]]",
            r#"[{"a":1}]"#,
            "[[1.5]]",
        ] {
            let error = tokens(bad).expect_err(bad);
            assert_eq!(error.param(), Some("prompt"), "{bad}");
        }
    }

    #[test]
    fn bad_requests_say_what_to_change() {
        for (body, param) in [
            (&b"not json"[..], None),
            (br#"{"messages":[]}"#, Some("messages")),
            (
                br#"{"messages":[{"role":"user","content":"x"}],"n":0}"#,
                Some("n"),
            ),
            (
                br#"{"messages":[{"role":"user","content":"x"}],"max_tokens":0}"#,
                Some("max_tokens"),
            ),
            (br#"{"messages":[7]}"#, Some("messages")),
            (br#"{"prompt":"x"#, None),
            (b"[]", None),
        ] {
            let error = chat(body, 16, &Counter::Estimate).expect_err("refused");
            assert_eq!(error.param(), param, "{error}");
            assert!(!error.message().is_empty());
        }
        let error =
            completion(br#"{"max_tokens":3}"#, 16, &Counter::Estimate).expect_err("no prompt");
        assert_eq!(error.param(), Some("prompt"));
    }

    #[test]
    fn bad_requests_never_quote_the_body() {
        let secret = "sk-secret\\\", expected a fake";
        for (body, says) in [
            (
                format!(r#"{{"messages":"{secret}"}}"#),
                "`messages` must be an array of messages, not a string",
            ),
            (
                format!(r#"{{"messages":[{{"content":"x"}}],"max_tokens":"{secret}"}}"#),
                "`max_tokens` must be a whole number, not a string",
            ),
            (
                format!(r#"{{"messages":[{{"content":"x"}}],"stream":"{secret}"}}"#),
                "`stream` must be a boolean, not a string",
            ),
            (
                format!(r#"{{"model":"{secret}"}}"#),
                "`messages` is required",
            ),
            (format!(r#"{{"model":"{secret}""#), "ends early"),
            (secret.to_owned(), "not valid JSON at line 1 column 1"),
        ] {
            let text = chat(body.as_bytes(), 16, &Counter::Estimate)
                .expect_err("refused")
                .to_string();
            assert!(text.contains(says), "{body}: {text}");
            assert!(!text.contains("sk-secret"), "{body}: {text}");
        }
        let text = completion(br#"{"prompt":"x","n":"sk-secret"}"#, 16, &Counter::Estimate)
            .expect_err("refused")
            .to_string();
        assert!(
            text.contains("`n` must be a whole number") && !text.contains("sk-secret"),
            "{text}"
        );
    }
}
