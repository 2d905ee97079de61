//! OpenAI's response shapes: SSE chunks, whole responses and the error event of a stream.
//!
//! Chat streams send a role-only frame (`"delta":{"role":"assistant","content":""}`), one
//! content chunk per token, the last one carrying the `finish_reason` (as vLLM sends it, so
//! that a client counts n − 1 gaps for n tokens; a chunk with an empty delta only when the
//! last token frees no text, at a stop sequence), then (with `stream_options.include_usage`)
//! a chunk with `"choices":[]` and the `usage`, and `[DONE]`.
//! With `include_usage` every other chunk carries `"usage":null`, as OpenAI's do. Completion
//! streams are the same without the role frame, with `text` instead of `delta`. With `n` > 1
//! each choice has its role frame and its chunks, interleaved as its tokens
//! come, each with its `index`; the `usage` chunk comes once, after every choice finished. A
//! chunk carries `logprobs` when they were asked for (see `logprobs.rs`), else `null`.

use bytes::Bytes;
use serde_json::{Value, json};
use tokenmeter::FinishReason;
use tokenmeter_sim::Operation;

use super::api_error::error_body;

/// The SSE terminator.
pub(crate) const DONE: &[u8] = b"data: [DONE]\n\n";

/// Renders every frame of one response. The per-token chunk is a precomputed prefix, the
/// choice's index, the token's JSON string, and a precomputed suffix.
#[derive(Debug, Clone)]
pub(crate) struct Frames {
    operation: Operation,
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
    /// `--enable-per-request-metrics`: the final usage chunk and whole answers carry `metrics`.
    per_request_metrics: bool,
    head: String,
    choice: &'static str,
    tail: String,
}

impl Frames {
    pub(crate) fn new(
        operation: Operation,
        id: String,
        created: u64,
        model: &str,
        include_usage: bool,
    ) -> Self {
        let model_json = Value::from(model).to_string();
        let id_json = Value::from(id.as_str()).to_string();
        let (object, choice) = match operation {
            Operation::TextCompletion => ("text_completion", r#","text":"#),
            _ => ("chat.completion.chunk", r#","delta":"#),
        };
        let head = format!(
            r#"data: {{"id":{id_json},"object":"{object}","created":{created},"model":{model_json},"choices":[{{"index":"#
        );
        let usage = if include_usage {
            r#","usage":null"#
        } else {
            ""
        };
        let tail = format!("{usage}}}\n\n");
        Self {
            operation,
            id,
            created,
            model: model.to_owned(),
            include_usage,
            per_request_metrics: false,
            head,
            choice,
            tail,
        }
    }

    /// Adds the server's `metrics` object to the final usage chunk and to whole answers
    /// (`--enable-per-request-metrics`, `request_metrics.rs`).
    pub(crate) fn per_request_metrics(mut self, on: bool) -> Self {
        self.per_request_metrics = on;
        self
    }

    /// Whether the answer carries the server's `metrics` object.
    pub(crate) fn wants_metrics(&self) -> bool {
        self.per_request_metrics
    }

    pub(crate) fn is_chat(&self) -> bool {
        self.operation != Operation::TextCompletion
    }

    fn object(&self) -> &'static str {
        if self.is_chat() {
            "chat.completion.chunk"
        } else {
            "text_completion"
        }
    }

    /// A chunk of choice `index`: `choice` is its `delta` (chat) or `text`, `logprobs` the
    /// JSON of its `logprobs`.
    fn frame(
        &self,
        index: u32,
        choice: &str,
        logprobs: Option<&[u8]>,
        finish: Option<FinishReason>,
    ) -> Bytes {
        use std::io::Write as _;
        let extra = logprobs.map_or(0, <[u8]>::len);
        let mut out = Vec::with_capacity(self.head.len() + choice.len() + extra + 96);
        out.extend_from_slice(self.head.as_bytes());
        let _ = write!(out, "{index}");
        out.extend_from_slice(self.choice.as_bytes());
        out.extend_from_slice(choice.as_bytes());
        out.extend_from_slice(br#","logprobs":"#);
        out.extend_from_slice(logprobs.unwrap_or(b"null"));
        out.extend_from_slice(br#","finish_reason":"#);
        match finish {
            Some(reason) => {
                let _ = write!(out, r#""{}""#, reason.as_str());
            }
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b"}]");
        out.extend_from_slice(self.tail.as_bytes());
        Bytes::from(out)
    }

    /// The chat stream's first frame of choice `index`: the role, no content. `None` for
    /// completions.
    pub(crate) fn role(&self, index: u32) -> Option<Bytes> {
        self.is_chat()
            .then(|| self.frame(index, r#"{"role":"assistant","content":""}"#, None, None))
    }

    /// One token's chunk of choice `index`, with the JSON of its `logprobs` if asked for, and
    /// the choice's `finish` reason on its last token; a chat `reasoning` token goes in
    /// `reasoning_content`, as vLLM's reasoning parsers send it.
    pub(crate) fn token(
        &self,
        index: u32,
        text: &str,
        logprobs: Option<&[u8]>,
        reasoning: bool,
        finish: Option<FinishReason>,
    ) -> Bytes {
        let text = Value::from(text).to_string();
        if self.is_chat() {
            let key = if reasoning {
                "reasoning_content"
            } else {
                "content"
            };
            self.frame(index, &format!(r#"{{"{key}":{text}}}"#), logprobs, finish)
        } else {
            self.frame(index, &text, logprobs, finish)
        }
    }

    /// The chunk of choice `index` that carries the finish reason and no text: when its last
    /// token freed none (held back by a stop sequence).
    pub(crate) fn finish(&self, index: u32, reason: FinishReason) -> Bytes {
        let empty = if self.is_chat() { "{}" } else { r#""""# };
        self.frame(index, empty, None, Some(reason))
    }

    /// The `usage` chunk (`"choices":[]`), when `include_usage` was asked for, with the
    /// server's `metrics` object when given; without `include_usage`, a chunk of `metrics`
    /// alone when given.
    pub(crate) fn usage(
        &self,
        prompt: u32,
        completion: u32,
        cached: u32,
        metrics: Option<Value>,
    ) -> Option<Bytes> {
        if !self.include_usage && metrics.is_none() {
            return None;
        }
        let mut body = json!({
            "id": self.id,
            "object": self.object(),
            "created": self.created,
            "model": self.model,
            "choices": [],
        });
        if self.include_usage {
            body["usage"] = usage(prompt, completion, cached);
        }
        if let Some(metrics) = metrics {
            body["metrics"] = metrics;
        }
        Some(Bytes::from(format!("data: {body}\n\n")))
    }

    /// How a whole (non-streaming) answer starts, up to its first choice:
    /// `{"id":…,"object":…,"created":…,"model":…,"choices":[`.
    pub(crate) fn whole_head(&self) -> Vec<u8> {
        let object = if self.is_chat() {
            "chat.completion"
        } else {
            "text_completion"
        };
        let mut head = json!({
            "id": self.id,
            "object": object,
            "created": self.created,
            "model": self.model,
        })
        .to_string()
        .into_bytes();
        head.pop(); // the closing brace
        head.extend_from_slice(br#","choices":["#);
        head
    }

    /// How a whole answer ends, after its last choice: `],"usage":{…}` (counting the tokens
    /// of every choice), the server's `metrics` when given, and `}`.
    pub(crate) fn whole_tail(
        &self,
        prompt: u32,
        completion: u32,
        cached: u32,
        metrics: Option<Value>,
    ) -> Vec<u8> {
        let mut tail = format!(r#"],"usage":{}"#, usage(prompt, completion, cached));
        if let Some(metrics) = metrics {
            tail.push_str(&format!(r#","metrics":{metrics}"#));
        }
        tail.push('}');
        tail.into_bytes()
    }
}

fn usage(prompt: u32, completion: u32, cached: u32) -> Value {
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": u64::from(prompt) + u64::from(completion),
        "prompt_tokens_details": {"cached_tokens": cached},
    })
}

/// An error sent as an SSE event in the middle of a stream: vLLM's error body with status 500.
pub(crate) fn error_event(message: &str) -> Bytes {
    let body = error_body(axum::http::StatusCode::INTERNAL_SERVER_ERROR, message);
    Bytes::from(format!("data: {body}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(frame: &Bytes) -> Value {
        let text = std::str::from_utf8(frame).expect("utf-8");
        let body = text
            .strip_prefix("data: ")
            .and_then(|t| t.strip_suffix("\n\n"))
            .expect("one SSE data frame");
        serde_json::from_str(body).expect("valid JSON")
    }

    #[test]
    fn chat_chunks_have_openais_shape() {
        let frames = Frames::new(Operation::Chat, "chatcmpl-1".into(), 42, "m\"x", true);
        let role = parse(&frames.role(0).expect("chat"));
        assert_eq!(
            role,
            json!({"id":"chatcmpl-1","object":"chat.completion.chunk","created":42,"model":"m\"x",
                "choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],
                "usage":null})
        );
        let token = parse(&frames.token(0, " a\"b", None, false, None));
        assert_eq!(token["choices"][0]["delta"], json!({"content": " a\"b"}));
        let last = parse(&frames.token(0, " end", None, false, Some(FinishReason::Stop)));
        assert_eq!(last["choices"][0]["delta"], json!({"content": " end"}));
        assert_eq!(last["choices"][0]["finish_reason"], "stop");
        let thinking = parse(&frames.token(0, " hmm", None, true, None));
        assert_eq!(
            thinking["choices"][0]["delta"],
            json!({"reasoning_content": " hmm"})
        );
        let finish = parse(&frames.finish(0, FinishReason::Length));
        assert_eq!(finish["choices"][0]["delta"], json!({}));
        assert_eq!(finish["choices"][0]["finish_reason"], "length");
        let usage = parse(&frames.usage(10, 3, 8, None).expect("asked"));
        assert!(usage.get("metrics").is_none());
        let with = parse(
            &frames
                .usage(10, 3, 8, Some(json!({"queue_time_ms": 1.5})))
                .unwrap(),
        );
        assert_eq!(with["metrics"], json!({"queue_time_ms": 1.5}));
        assert_eq!(with["usage"]["completion_tokens"], 3);
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(
            usage["usage"],
            json!({"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,
                "prompt_tokens_details":{"cached_tokens":8}})
        );
    }

    #[test]
    fn completion_chunks_have_openais_shape() {
        let frames = Frames::new(Operation::TextCompletion, "cmpl-1".into(), 1, "m", false);
        assert!(frames.role(0).is_none());
        assert!(frames.usage(1, 1, 0, None).is_none());
        let alone = parse(
            &frames
                .usage(1, 1, 0, Some(json!({"mean_itl_ms": 2.0})))
                .unwrap(),
        );
        assert_eq!(alone["choices"], json!([]));
        assert!(alone.get("usage").is_none(), "not asked for");
        assert_eq!(alone["metrics"]["mean_itl_ms"], 2.0);
        let token = parse(&frames.token(0, " hi", None, false, None));
        assert_eq!(
            token,
            json!({"id":"cmpl-1","object":"text_completion","created":1,"model":"m",
                "choices":[{"index":0,"text":" hi","logprobs":null,"finish_reason":null}]})
        );
        let finish = parse(&frames.finish(2, FinishReason::Stop));
        assert_eq!(finish["choices"][0]["index"], 2);
        assert_eq!(finish["choices"][0]["text"], "");
        assert_eq!(finish["choices"][0]["finish_reason"], "stop");
        let mut whole = frames.whole_head();
        whole.extend_from_slice(b"{}");
        whole.extend(frames.whole_tail(4, 2, 0, Some(json!({"mean_itl_ms": 2.0}))));
        let whole: Value = serde_json::from_slice(&whole).expect("valid JSON");
        assert_eq!(whole["object"], "text_completion");
        assert_eq!(whole["choices"], json!([{}]));
        assert_eq!(whole["usage"]["total_tokens"], 6);
        assert_eq!(whole["metrics"]["mean_itl_ms"], 2.0);
    }

    #[test]
    fn errors_mid_stream_have_vllms_shape() {
        let event = parse(&error_event("boom"));
        assert_eq!(event["error"]["type"], "InternalServerError");
        assert_eq!(event["error"]["code"], 500);
    }
}
