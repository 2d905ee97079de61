//! One SSE data event of an OpenAI-compatible stream, parsed into what the meter needs.
//!
//! ```
//! use tokenmeter::ErrorClass;
//! use tokenmeter_openai::chunk::{self, ChunkError};
//!
//! let usage = chunk::parse(r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}"#)?;
//! assert_eq!(usage.usage.and_then(|u| u.completion_tokens), Some(7));
//! match chunk::parse(r#"{"error":{"message":"slow down","code":429}}"#) {
//!     Err(ChunkError::Server(e)) => assert_eq!(e.class, ErrorClass::RateLimited),
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), ChunkError>(())
//! ```

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use tokenmeter::{ErrorClass, FinishReason};

/// Token counts from a stream's final `usage` object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
}

/// What one data event carried.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// Token-bearing deltas (content, reasoning or tool calls), one per choice that has one.
    pub tokens: u32,
    /// The finish reason, if a choice gave one.
    pub finish: Option<FinishReason>,
    /// The `usage` object, if present.
    pub usage: Option<Usage>,
    /// The response `id`, if present.
    pub id: Option<String>,
}

/// An error the server put in the stream (`{"error": {...}}`).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerError {
    /// Its class: from a numeric `code` when there is one, else `server_error`.
    pub class: ErrorClass,
    /// Its message.
    pub message: String,
}

/// Why a data event was not usable.
#[derive(Clone, Debug, PartialEq)]
pub enum ChunkError {
    /// Not JSON of the expected shape.
    Malformed(String),
    /// An error object.
    Server(ServerError),
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the server sent an error ({}): {}",
            self.class.as_str(),
            self.message
        )
    }
}

impl std::fmt::Display for ChunkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChunkError::Malformed(message) => f.write_str(message),
            ChunkError::Server(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for ChunkError {}

#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<IgnoredAny>>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

fn filled(s: &Option<Cow<'_, str>>) -> bool {
    s.as_deref().is_some_and(|s| !s.is_empty())
}

/// Parses one data event (not `[DONE]`).
pub fn parse(data: &str) -> Result<Parsed, ChunkError> {
    let wire: Wire<'_> = serde_json::from_str(data).map_err(|e| {
        ChunkError::Malformed(format!(
            "event is not a completion chunk ({e}): {}",
            excerpt(data)
        ))
    })?;
    if let Some(error) = wire.error {
        return Err(ChunkError::Server(server_error(&error)));
    }
    let mut parsed = Parsed {
        usage: wire.usage.map(|u| Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
        }),
        id: wire.id.map(Cow::into_owned),
        ..Parsed::default()
    };
    for choice in wire.choices.iter().flatten() {
        let delta_tokens = choice.delta.as_ref().is_some_and(|d| {
            filled(&d.content)
                || filled(&d.reasoning_content)
                || filled(&d.reasoning)
                || d.tool_calls.as_ref().is_some_and(|t| !t.is_empty())
        });
        if delta_tokens || filled(&choice.text) {
            parsed.tokens += 1;
        }
        if let Some(reason) = choice.finish_reason.as_deref() {
            parsed.finish = Some(FinishReason::parse(reason));
        }
    }
    Ok(parsed)
}

/// The class and message of an error object (OpenAI or vLLM shape): the value of an `error`
/// field, or a whole vLLM error body. A bare string is its own message.
///
/// The class comes from a numeric `code` (an HTTP status), else from a `code` or `type` that
/// names a rate limit, an overload or a timeout, else it is `server_error`.
///
/// ```
/// use tokenmeter::ErrorClass;
/// use tokenmeter_openai::chunk::server_error;
///
/// let error = serde_json::json!({"message": "busy", "type": "overloaded_error"});
/// assert_eq!(server_error(&error).class, ErrorClass::Overloaded);
/// assert_eq!(server_error(&serde_json::json!("boom")).message, "boom");
/// ```
pub fn server_error(error: &serde_json::Value) -> ServerError {
    let message = match error.as_str() {
        Some(text) => text.to_owned(),
        None => error
            .get("message")
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned),
    };
    ServerError {
        class: error_class(error).unwrap_or(ErrorClass::ServerError),
        message: excerpt(&message),
    }
}

/// The class an error object names, if it names one (see [`server_error`]).
pub(crate) fn error_class(error: &serde_json::Value) -> Option<ErrorClass> {
    let code = error.get("code").and_then(|c| {
        c.as_u64()
            .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
    });
    let named = |field: &str| error.get(field).and_then(serde_json::Value::as_str);
    let by_name = [named("code"), named("type")]
        .into_iter()
        .flatten()
        .find_map(|name| match name {
            "rate_limit_exceeded" | "rate_limit_error" => Some(ErrorClass::RateLimited),
            "overloaded" | "overloaded_error" => Some(ErrorClass::Overloaded),
            "timeout" | "request_timeout" => Some(ErrorClass::Timeout),
            _ => None,
        });
    code.and_then(|c| u16::try_from(c).ok())
        .and_then(ErrorClass::from_http_status)
        .or(by_name)
}

/// The text a data event carried: its content, reasoning and completion text deltas, in order,
/// or an empty string (a role frame, a usage chunk, or an event that is not a chunk).
///
/// The meter never needs it (it counts with [`parse`]); it is here for programs that also show
/// the answer.
///
/// ```
/// let data = r#"{"choices":[{"delta":{"content":"Hel"}},{"delta":{"reasoning_content":"lo"}}]}"#;
/// assert_eq!(tokenmeter_openai::chunk::text(data), "Hello");
/// assert_eq!(tokenmeter_openai::chunk::text("not json"), "");
/// ```
pub fn text(data: &str) -> String {
    let Ok(wire) = serde_json::from_str::<Wire<'_>>(data) else {
        return String::new();
    };
    let mut out = String::new();
    for choice in wire.choices.iter().flatten() {
        if let Some(delta) = &choice.delta {
            for part in [&delta.reasoning_content, &delta.reasoning, &delta.content] {
                out.push_str(part.as_deref().unwrap_or_default());
            }
        }
        out.push_str(choice.text.as_deref().unwrap_or_default());
    }
    out
}

/// At most 200 characters of `text`.
pub fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_token_bearing_deltas_only() {
        let role =
            r#"{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
        assert_eq!(parse(role).unwrap().tokens, 0);
        assert_eq!(parse(role).unwrap().id.as_deref(), Some("c1"));
        let content = r#"{"choices":[{"delta":{"content":"Hel\"lo"}}]}"#;
        assert_eq!(parse(content).unwrap().tokens, 1);
        let reasoning = r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#;
        assert_eq!(parse(reasoning).unwrap().tokens, 1);
        let tools =
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}"#;
        assert_eq!(parse(tools).unwrap().tokens, 1);
        let text = r#"{"choices":[{"text":" world","finish_reason":"length"}]}"#;
        let parsed = parse(text).unwrap();
        assert_eq!(
            (parsed.tokens, parsed.finish),
            (1, Some(FinishReason::Length))
        );
        let usage =
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}"#;
        let parsed = parse(usage).unwrap();
        assert_eq!(parsed.tokens, 0);
        assert_eq!(parsed.usage.unwrap().completion_tokens, Some(7));
    }

    #[test]
    fn classifies_errors_and_garbage() {
        let e = parse(r#"{"error":{"message":"slow down","code":429}}"#).unwrap_err();
        assert_eq!(
            e,
            ChunkError::Server(ServerError {
                class: ErrorClass::RateLimited,
                message: "slow down".into()
            })
        );
        let e = parse(r#"{"error":{"message":"boom","type":"internal"}}"#).unwrap_err();
        assert!(matches!(
            e,
            ChunkError::Server(ServerError {
                class: ErrorClass::ServerError,
                ..
            })
        ));
        let e = parse(r#"{"error":{"message":"m","type":"x","code":"rate_limit_exceeded"}}"#);
        assert!(matches!(
            e,
            Err(ChunkError::Server(ServerError {
                class: ErrorClass::RateLimited,
                ..
            }))
        ));
        assert!(matches!(parse("{not json"), Err(ChunkError::Malformed(_))));
        assert!(matches!(
            parse(r#"{"choices":"x"}"#),
            Err(ChunkError::Malformed(_))
        ));
    }

    #[test]
    fn excerpts_are_bounded() {
        assert_eq!(excerpt("short"), "short");
        assert_eq!(excerpt(&"é".repeat(300)).chars().count(), 201);
    }
}
