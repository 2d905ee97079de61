//! The OpenAI request bodies this server reads and the chunks it writes: `/v1/completions`
//! (`prompt`: a string) and `/v1/chat/completions` (`messages`: their text contents, a string
//! or OpenAI's `text` parts, one after the other), `max_tokens` (or `max_completion_tokens`), `stream` and
//! `stream_options.include_usage`. Other fields (temperature, ...) are accepted and ignored:
//! decoding is greedy.

use serde_json::{Value, json};

/// Which API a request came on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `/v1/completions`.
    Completions,
    /// `/v1/chat/completions`.
    Chat,
}

/// A parsed request.
#[derive(Debug)]
pub struct Ask {
    /// The prompt's text.
    pub prompt: String,
    /// The most output tokens.
    pub max_tokens: usize,
    /// A streamed answer.
    pub stream: bool,
    /// A final usage chunk in the stream.
    pub include_usage: bool,
}

/// The default `max_tokens` when a request gives none (vLLM's default is the context's rest;
/// a small fixed number keeps an unbounded request from holding the batch).
pub const DEFAULT_MAX_TOKENS: usize = 16;

/// Reads a body; the error names the field and what to send instead.
pub fn parse(api: Api, body: &[u8], model: &str) -> Result<Ask, String> {
    let body: Value =
        serde_json::from_slice(body).map_err(|e| format!("invalid JSON request body: {e}"))?;
    if let Some(asked) = body.get("model").and_then(Value::as_str)
        && asked != model
    {
        return Err(format!(
            "the model `{asked}` does not exist: this server serves `{model}` (see /v1/models)"
        ));
    }
    let prompt = match api {
        Api::Completions => match body.get("prompt") {
            Some(Value::String(text)) => text.clone(),
            _ => return Err("`prompt` must be a string".into()),
        },
        Api::Chat => {
            let Some(Value::Array(messages)) = body.get("messages") else {
                return Err("`messages` must be an array of {role, content}".into());
            };
            let mut texts = Vec::new();
            for message in messages {
                message_texts(message.get("content"), &mut texts)?;
            }
            texts.join("\n")
        }
    };
    let max_tokens = match body
        .get("max_completion_tokens")
        .or_else(|| body.get("max_tokens"))
    {
        None | Some(Value::Null) => DEFAULT_MAX_TOKENS,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => n as usize,
            _ => return Err(format!("`max_tokens` must be a whole number ≥ 1, not {v}")),
        },
    };
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let include_usage = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(Ask {
        prompt,
        max_tokens,
        stream,
        include_usage,
    })
}

/// The texts of one message's `content`: a string, or OpenAI's array of parts whose `text`
/// parts are read (what vLLM's benchmark client and the `openai` SDK send); a missing or null
/// content (an assistant's tool call) has none.
fn message_texts<'a>(content: Option<&'a Value>, texts: &mut Vec<&'a str>) -> Result<(), String> {
    match content {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => texts.push(text),
        Some(Value::Array(parts)) => {
            for part in parts {
                match (part.get("type").and_then(Value::as_str), part.get("text")) {
                    (Some("text"), Some(Value::String(text))) => texts.push(text),
                    (Some("text"), _) => {
                        return Err("a `text` part of `content` must have a string `text`".into());
                    }
                    (kind, _) => {
                        return Err(format!(
                            "this server reads only `text` parts of `content`, not {}",
                            kind.map_or("a part without a `type`".into(), |k| format!("`{k}`"))
                        ));
                    }
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "a message's `content` must be a string or an array of parts, not {other}"
            ));
        }
    }
    Ok(())
}

/// The fields every chunk and answer of one request share.
#[derive(Debug)]
pub struct Answer {
    /// Which API.
    pub api: Api,
    /// The response id.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The served model.
    pub model: String,
}

impl Answer {
    fn object(&self, stream: bool) -> &'static str {
        match (self.api, stream) {
            (Api::Completions, _) => "text_completion",
            (Api::Chat, true) => "chat.completion.chunk",
            (Api::Chat, false) => "chat.completion",
        }
    }

    /// A stream chunk with `text` (and the finish reason on the last one). `role` makes the
    /// chat stream's first frame (a role and no token).
    pub fn chunk(&self, text: Option<&str>, finish: Option<&str>, role: bool) -> String {
        let choice = match self.api {
            Api::Completions => json!({"index": 0, "text": text.unwrap_or(""),
                                       "logprobs": null, "finish_reason": finish}),
            Api::Chat => {
                let delta = if role {
                    json!({"role": "assistant", "content": ""})
                } else {
                    json!({"content": text.unwrap_or("")})
                };
                json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish})
            }
        };
        json!({"id": self.id, "object": self.object(true), "created": self.created,
               "model": self.model, "choices": [choice]})
        .to_string()
    }

    /// The final usage chunk (no choices), with vLLM's per-request `metrics` beside `usage`.
    pub fn usage_chunk(&self, usage: &Value, metrics: Option<&Value>) -> String {
        let mut chunk = json!({"id": self.id, "object": self.object(true),
                               "created": self.created, "model": self.model,
                               "choices": [], "usage": usage});
        if let Some(m) = metrics {
            chunk["metrics"] = m.clone();
        }
        chunk.to_string()
    }

    /// A whole (non-streamed) answer.
    pub fn whole(&self, text: &str, usage: &Value, metrics: Option<&Value>) -> Value {
        let choice = match self.api {
            Api::Completions => {
                json!({"index": 0, "text": text, "logprobs": null, "finish_reason": "length"})
            }
            Api::Chat => json!({"index": 0, "message": {"role": "assistant", "content": text},
                                "logprobs": null, "finish_reason": "length"}),
        };
        let mut answer = json!({"id": self.id, "object": self.object(false),
                                "created": self.created, "model": self.model,
                                "choices": [choice], "usage": usage});
        if let Some(m) = metrics {
            answer["metrics"] = m.clone();
        }
        answer
    }
}

/// `usage` of an answer.
pub fn usage(prompt_tokens: usize, completion_tokens: usize) -> Value {
    json!({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
           "total_tokens": prompt_tokens + completion_tokens})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_apis_and_names_what_is_wrong() {
        let chat = br#"{"model":"m","messages":[{"role":"user","content":"a b c"}],
            "max_completion_tokens":4,"stream":true,"stream_options":{"include_usage":true}}"#;
        let ask = parse(Api::Chat, chat, "m").expect("valid");
        assert_eq!((ask.prompt.as_str(), ask.max_tokens), ("a b c", 4));
        assert!(ask.stream && ask.include_usage);
        let plain = parse(Api::Completions, br#"{"prompt":"x y"}"#, "m").expect("valid");
        assert_eq!(plain.max_tokens, DEFAULT_MAX_TOKENS);
        assert!(!plain.stream);
        let wrong_model = parse(Api::Completions, br#"{"model":"z","prompt":"x"}"#, "m");
        assert!(wrong_model.unwrap_err().contains("serves `m`"));
        let zero = parse(Api::Completions, br#"{"prompt":"x","max_tokens":0}"#, "m");
        assert!(zero.unwrap_err().contains("max_tokens"));
        assert!(parse(Api::Chat, b"{", "m").unwrap_err().contains("JSON"));
    }

    #[test]
    fn chat_content_is_a_string_or_text_parts() {
        let parts = br#"{"messages":[{"role":"system","content":"s"},
            {"role":"user","content":[{"type":"text","text":"a b"},{"type":"text","text":"c"}]},
            {"role":"assistant","content":null}]}"#;
        let ask = parse(Api::Chat, parts, "m").expect("text parts");
        assert_eq!(ask.prompt, "s\na b\nc");
        let image = br#"{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}"#;
        assert!(
            parse(Api::Chat, image, "m")
                .unwrap_err()
                .contains("`image_url`")
        );
        let number = br#"{"messages":[{"role":"user","content":5}]}"#;
        assert!(
            parse(Api::Chat, number, "m")
                .unwrap_err()
                .contains("`content`")
        );
    }
}
