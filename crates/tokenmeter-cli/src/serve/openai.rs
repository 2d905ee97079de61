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

use serde::Deserialize;
use serde_json::Value;
use serde_json::error::Category;
use tokenmeter::FinishReason;
use tokenmeter_sim::{GenerateRequest, Operation};

use crate::tokenizer::PromptTokenizer;

/// A request the server cannot serve, answered with HTTP 400.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadRequest {
    /// The body is not the JSON the endpoint expects.
    #[error("invalid request body: {}", describe(.0))]
    Json(#[from] serde_json::Error),
    /// A field has a value the server does not support.
    #[error("{0}")]
    Unsupported(String),
}

/// What is wrong with a body, in words that never quote it: serde's own text for a value of
/// the wrong type quotes the value (`invalid type: string "…", expected u32`), and that value
/// can be an API key or a prompt a client put in the wrong field. Only the position and what
/// was expected (which comes from this file's types) are kept.
fn describe(error: &serde_json::Error) -> String {
    let at = format!("at line {} column {}", error.line(), error.column());
    match error.classify() {
        Category::Data => {
            let text = error.to_string();
            let text = text
                .rsplit_once(" at line ")
                .map_or(text.as_str(), |(t, _)| t);
            if text.starts_with("missing field `") {
                format!("{text} {at}")
            } else if let Some((_, expected)) = text.rsplit_once(", expected ") {
                format!("a value of the wrong type {at}: expected {expected}")
            } else {
                format!("a value the endpoint does not accept {at}")
            }
        }
        Category::Syntax => format!("not valid JSON {at}"),
        Category::Eof => "the JSON ends early: send the whole object".to_owned(),
        Category::Io => format!("the body could not be read {at}"),
    }
}

#[derive(Debug, Default, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    content: Value,
}

#[derive(Debug, Deserialize)]
struct ChatBody {
    messages: Vec<Message>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    max_completion_tokens: Option<u32>,
    #[serde(default)]
    n: Option<u32>,
}

#[derive(Debug, Deserialize)]
struct CompletionBody {
    prompt: Value,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    n: Option<u32>,
}

/// What the server needs from a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    /// The generation to run.
    pub(crate) generate: GenerateRequest,
    /// Stream the answer as SSE.
    pub(crate) stream: bool,
    /// Send a final `usage` chunk (`stream_options.include_usage`).
    pub(crate) include_usage: bool,
}

/// Parses a `/v1/chat/completions` body.
pub(crate) fn chat(
    body: &[u8],
    default_max_tokens: u32,
    counter: &Counter,
) -> Result<Parsed, BadRequest> {
    let body: ChatBody = serde_json::from_slice(body)?;
    check_n(body.n)?;
    if body.messages.is_empty() {
        return Err(BadRequest::Unsupported(
            "`messages` is empty: send at least one message".to_owned(),
        ));
    }
    let prompt = body
        .messages
        .iter()
        .map(|m| 3 + content_tokens(&m.content, counter))
        .fold(3u64, u64::saturating_add);
    let max = body.max_completion_tokens.or(body.max_tokens);
    let generate = generation(Operation::Chat, prompt, max, default_max_tokens)?;
    Ok(Parsed {
        generate,
        stream: body.stream,
        include_usage: body.stream_options.is_some_and(|o| o.include_usage),
    })
}

/// Parses a `/v1/completions` body.
pub(crate) fn completion(
    body: &[u8],
    default_max_tokens: u32,
    counter: &Counter,
) -> Result<Parsed, BadRequest> {
    let body: CompletionBody = serde_json::from_slice(body)?;
    check_n(body.n)?;
    let prompt = prompt_tokens(&body.prompt, counter)?;
    let generate = generation(
        Operation::TextCompletion,
        prompt,
        body.max_tokens,
        default_max_tokens,
    )?;
    Ok(Parsed {
        generate,
        stream: body.stream,
        include_usage: body.stream_options.is_some_and(|o| o.include_usage),
    })
}

fn check_n(n: Option<u32>) -> Result<(), BadRequest> {
    match n {
        None | Some(1) => Ok(()),
        Some(n) => Err(BadRequest::Unsupported(format!(
            "n = {n} is not supported: the simulator generates one choice; send n = 1"
        ))),
    }
}

/// The generation: `max_tokens` tokens ending with `length`, or the default ending with `stop`.
fn generation(
    operation: Operation,
    prompt: u64,
    max_tokens: Option<u32>,
    default_max_tokens: u32,
) -> Result<GenerateRequest, BadRequest> {
    let prompt = u32::try_from(prompt).unwrap_or(u32::MAX);
    let (output, finish) = match max_tokens {
        Some(0) => {
            return Err(BadRequest::Unsupported(
                "max_tokens is 0: ask for at least 1 token".to_owned(),
            ));
        }
        Some(n) => (n, FinishReason::Length),
        None => (default_max_tokens.max(1), FinishReason::Stop),
    };
    Ok(GenerateRequest::new(operation, prompt, output).finish_reason(finish))
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

/// Tokens of a completion prompt: a string, token ids, or a one-element array of either.
fn prompt_tokens(prompt: &Value, counter: &Counter) -> Result<u64, BadRequest> {
    let unsupported = || {
        BadRequest::Unsupported(
            "`prompt` must be a string or an array of token ids; send one prompt per request"
                .to_owned(),
        )
    };
    match prompt {
        Value::String(text) => Ok(counter.count(text)),
        Value::Array(items) if items.iter().all(Value::is_u64) => Ok(items.len() as u64),
        Value::Array(items) if items.len() == 1 => match &items[0] {
            Value::Array(_) | Value::String(_) => prompt_tokens(&items[0], counter),
            _ => Err(unsupported()),
        },
        _ => Err(unsupported()),
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
        assert!(parsed.stream && parsed.include_usage);

        let plain = chat(
            br#"{"messages":[{"role":"user","content":"hi"}]}"#,
            128,
            &Counter::Estimate,
        )
        .expect("ok");
        assert_eq!(plain.generate.output_tokens, 128);
        assert_eq!(plain.generate.finish, FinishReason::Stop);
        assert!(!plain.stream && !plain.include_usage);
    }

    #[test]
    fn completion_prompts_in_every_shape() {
        let tokens = |prompt: &str| {
            let body = format!(r#"{{"prompt":{prompt},"max_tokens":3}}"#);
            completion(body.as_bytes(), 16, &Counter::Estimate).map(|p| p.generate.prompt_tokens)
        };
        assert_eq!(tokens(r#""abcdefgh""#).expect("string"), 2);
        assert_eq!(tokens("[1,2,3,4,5]").expect("ids"), 5);
        assert_eq!(tokens(r#"["abcdefgh"]"#).expect("one string"), 2);
        assert_eq!(tokens("[[1,2,3]]").expect("one id list"), 3);
        assert!(tokens(r#"["a","b"]"#).is_err());
        assert!(tokens("42").is_err());
    }

    #[test]
    fn bad_requests_say_what_to_change() {
        let cases: [&[u8]; 5] = [
            b"not json",
            br#"{"messages":[]}"#,
            br#"{"messages":[{"role":"user","content":"x"}],"n":2}"#,
            br#"{"messages":[{"role":"user","content":"x"}],"max_tokens":0}"#,
            br#"{"prompt":"x"#,
        ];
        for body in cases {
            let error = chat(body, 16, &Counter::Estimate).expect_err("refused");
            assert!(!error.to_string().is_empty());
        }
        let n = chat(
            br#"{"messages":[{"role":"user","content":"x"}],"n":2}"#,
            16,
            &Counter::Estimate,
        );
        assert!(n.expect_err("n").to_string().contains("send n = 1"));
    }

    #[test]
    fn bad_requests_never_quote_the_body() {
        let secret = "sk-secret\\\", expected a fake";
        for (body, says) in [
            (
                format!(r#"{{"messages":"{secret}"}}"#),
                "expected a sequence",
            ),
            (
                format!(r#"{{"messages":[{{"content":"x"}}],"max_tokens":"{secret}"}}"#),
                "expected u32",
            ),
            (
                format!(r#"{{"messages":[{{"content":"x"}}],"stream":"{secret}"}}"#),
                "expected a boolean",
            ),
            (
                format!(r#"{{"model":"{secret}"}}"#),
                "missing field `messages`",
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
            text.contains("expected u32") && !text.contains("sk-secret"),
            "{text}"
        );
    }
}
