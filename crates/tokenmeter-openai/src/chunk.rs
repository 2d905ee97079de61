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

mod fields;
mod measured;
mod metrics;
mod responses;

#[cfg(feature = "async-openai")]
pub(crate) use responses::incomplete_reason;

pub use metrics::{MAX_METRIC, ServerMetrics};

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use tokenmeter::{ErrorClass, FinishReason};

/// How many characters of a server's message or event the errors keep: enough that a program
/// can redact what it must from the whole of it before cutting it to what it shows.
///
/// Messages ([`ServerError::message`], [`StatusError`](crate::StatusError)'s message, the
/// excerpt of a malformed event) are what the server sent, bounded by this limit and otherwise
/// uncut and unfiltered: they may hold secrets the server echoed and terminal control
/// characters. A program that shows them should redact and strip them first, then cut them
/// (`tokenmeter bench` does, in its sanitiser).
pub const MESSAGE_LIMIT: usize = 4096;

/// Token counts from a stream's final `usage` object.
///
/// A count that is not a non-negative integer that fits in a `u64` (a float, a string, a
/// negative number, an object) does not fail the stream: it is `None`, as if absent, and
/// [`unusable`](Usage::unusable) says the server sent one.
///
/// ```
/// use tokenmeter_openai::chunk;
///
/// let parsed = chunk::parse(r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7.5}}"#)?;
/// let usage = parsed.usage.unwrap();
/// assert_eq!((usage.prompt_tokens, usage.completion_tokens, usage.unusable), (Some(5), None, true));
/// # Ok::<(), chunk::ChunkError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`: prompt tokens the provider served from its
    /// prompt (prefix) cache.
    pub cached_tokens: Option<u64>,
    /// The server sent a count (or a `usage`) that is not a non-negative integer; it was ignored.
    pub unusable: bool,
}

impl Usage {
    /// Puts these counts on `request`: the output tokens, the cached input tokens, and the
    /// input tokens when `input` (the caller did not count the prompt itself). What the
    /// server left out is left as it was. The one place a metered stream's `usage` reaches
    /// its request (the reqwest and async-openai helpers).
    pub(crate) fn record(&self, request: &mut tokenmeter::Request, input: bool) {
        if let Some(tokens) = self.completion_tokens {
            request.set_output_tokens(tokens);
        }
        if let (true, Some(tokens)) = (input, self.prompt_tokens) {
            request.set_input_tokens(tokens);
        }
        if let Some(tokens) = self.cached_tokens {
            request.set_cached_input_tokens(tokens);
        }
    }

    /// Counts from usable values (`unusable` false).
    ///
    /// ```
    /// let usage = tokenmeter_openai::chunk::Usage::new(Some(3), Some(9));
    /// assert_eq!(usage.completion_tokens, Some(9));
    /// ```
    pub fn new(prompt_tokens: Option<u64>, completion_tokens: Option<u64>) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            cached_tokens: None,
            unusable: false,
        }
    }

    /// The `usage` value of a chunk: `None` when it is null; counts from an object's integer
    /// fields; `unusable` for anything else in it or instead of it (a number no float holds,
    /// `1e400`, too). A count given twice: the last one, and `duplicate` set.
    fn from_raw(raw: &RawValue) -> Option<(Self, bool)> {
        const NAMES: &[&str; 3] = &[
            "prompt_tokens",
            "completion_tokens",
            "prompt_tokens_details",
        ];
        Self::named(raw, NAMES)
    }

    /// [`from_raw`](Self::from_raw) with the names of the prompt count, the completion count
    /// and the object holding `cached_tokens` (the Responses API names them otherwise).
    fn named(raw: &RawValue, names: &'static [&'static str; 3]) -> Option<(Self, bool)> {
        if raw.get().trim() == "null" {
            return None;
        }
        let mut usage = Self::default();
        let Some(fields) = fields::fields(raw, names) else {
            usage.unusable = true;
            return Some((usage, false));
        };
        let [prompt, completion, details] = fields.values;
        let mut count = |value: Option<&RawValue>| {
            let count = value.map(fields::count).unwrap_or(Ok(None));
            usage.unusable |= count.is_err();
            count.unwrap_or(None)
        };
        let prompt_tokens = count(prompt);
        let completion_tokens = count(completion);
        usage.prompt_tokens = prompt_tokens;
        usage.completion_tokens = completion_tokens;
        let details = details.and_then(|d| fields::fields(d, &["cached_tokens"]));
        usage.cached_tokens = details
            .as_ref()
            .and_then(|d| d.values[0])
            .and_then(|v| fields::count(v).ok().flatten());
        let duplicate = fields.duplicate || details.is_some_and(|d| d.duplicate);
        Some((usage, duplicate))
    }
}

/// What one data event carried.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// Token-bearing deltas (content, reasoning or tool calls), one per choice that has one;
    /// for a Responses API event, one per text, reasoning or function-call arguments delta
    /// (see [`parse`]).
    pub tokens: u32,
    /// Of [`tokens`](Self::tokens), the deltas that carried only reasoning
    /// (`reasoning_content` or `reasoning`, no content nor tool call).
    pub reasoning: u32,
    /// The finish reason, if a choice gave one.
    pub finish: Option<FinishReason>,
    /// The `usage` object, if present.
    pub usage: Option<Usage>,
    /// The response `id`, if present.
    pub id: Option<String>,
    /// The server's per-request `metrics` object (vLLM's `--enable-per-request-metrics`),
    /// if present and not null; read leniently (see [`ServerMetrics`]).
    pub metrics: Option<ServerMetrics>,
    /// The chunk gave a field [`parse`] reads more than once (`{"choices":[..],"choices":[..]}`,
    /// a `content` twice in a delta, a count twice in `usage`): the last value was read, as
    /// JavaScript's and Python's JSON parsers do, and the chunk was kept.
    pub duplicate_keys: bool,
    /// The event ends the stream, as `[DONE]` ends a chat stream: a Responses API
    /// `response.completed` or `response.incomplete` (a Responses stream has no `[DONE]`; its
    /// failures, `response.failed` and `error`, are errors). What follows it is not part of
    /// the answer.
    pub terminal: bool,
}

/// An error the server put in the stream (`{"error": {...}}`).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerError {
    /// Its class: from a numeric `code` when there is one, else `server_error`.
    pub class: ErrorClass,
    /// Its message, at most [`MESSAGE_LIMIT`] characters as the server sent them (see there
    /// before showing it).
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

/// A chunk as [`parse`] reads it: the choices are folded into what the meter needs as they are
/// read ([`Choices`]), so that a chunk costs no allocation beyond its `id`.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    choices: Option<Choices>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    #[serde(borrow, default)]
    metrics: Option<&'a RawValue>,
    /// A Responses API event's `type` (`responses.rs`).
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    /// A Responses API event's `delta`.
    #[serde(borrow, default)]
    delta: Option<&'a RawValue>,
    /// A Responses API event's `response` object.
    #[serde(borrow, default)]
    response: Option<&'a RawValue>,
    /// `response` for a whole (non-streaming) Responses API answer.
    #[serde(borrow, default)]
    object: Option<Cow<'a, str>>,
}

/// A chunk as [`text`] reads it: every choice, to join their text (or a Responses API
/// event's text `delta`).
#[derive(Deserialize)]
struct TextWire<'a> {
    #[serde(borrow, default)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    delta: Option<&'a RawValue>,
}

/// The `choices` array folded as it is read (no `Vec`): token-bearing choices and the finish
/// reason of the last choice that gave one.
#[derive(Default)]
struct Choices {
    tokens: u32,
    reasoning: u32,
    finish: Option<FinishReason>,
}

impl<'de> Deserialize<'de> for Choices {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(ChoicesVisitor)
    }
}

struct ChoicesVisitor;

impl<'de> serde::de::Visitor<'de> for ChoicesVisitor {
    type Value = Choices;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Choices, A::Error> {
        let mut choices = Choices::default();
        while let Some(choice) = seq.next_element::<Choice<'de>>()? {
            if choice.bears_tokens() {
                choices.tokens += 1;
                choices.reasoning += u32::from(choice.only_reasoning());
            }
            if let Some(reason) = choice.finish_reason.as_deref() {
                choices.finish = Some(FinishReason::parse(reason));
            }
        }
        Ok(choices)
    }
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
    /// Whether the delta has a `role` (any value, null too: the opening frame).
    #[serde(default, deserialize_with = "present")]
    role: bool,
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<IgnoredAny>>,
}

/// True for a field that is there, whatever its value.
fn present<'de, D: serde::Deserializer<'de>>(field: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(field).map(|_| true)
}

fn filled(s: &Option<Cow<'_, str>>) -> bool {
    s.as_deref().is_some_and(|s| !s.is_empty())
}

impl Choice<'_> {
    /// A delta with reasoning and neither content nor tool calls.
    fn only_reasoning(&self) -> bool {
        self.delta.as_ref().is_some_and(|d| {
            (filled(&d.reasoning_content) || filled(&d.reasoning))
                && !filled(&d.content)
                && d.tool_calls.as_ref().is_none_or(|t| t.is_empty())
        })
    }

    /// A content, reasoning or tool-call delta, or completion text. An empty `content`
    /// without a `role` is a token too, as `vllm bench serve` 0.33 counts it: a generated
    /// token that decodes to no text (a special token, or a byte of an incomplete UTF-8
    /// character, which llama.cpp's server sends so); the opening frame has a `role`.
    fn bears_tokens(&self) -> bool {
        let delta_tokens = self.delta.as_ref().is_some_and(|d| {
            filled(&d.content)
                || filled(&d.reasoning_content)
                || filled(&d.reasoning)
                || d.tool_calls.as_ref().is_some_and(|t| !t.is_empty())
                || (d.content.as_deref() == Some("") && !d.role)
        });
        delta_tokens || filled(&self.text)
    }
}

/// Parses one data event (not `[DONE]`): a chat or text completion chunk, or an event of
/// OpenAI's Responses API (told apart by content: a `type` that starts with `response.`, or
/// is `error`). A Responses text, reasoning or function-call arguments delta is one
/// token-bearing delta as a chat delta is; `response.completed` and `response.incomplete`
/// give the finish reason and the `usage` (`input_tokens` as
/// [`prompt_tokens`](Usage::prompt_tokens), `output_tokens` as
/// [`completion_tokens`](Usage::completion_tokens)); `response.failed` and `error` are the
/// server's error; other events carry no token.
///
/// ```
/// use tokenmeter_openai::chunk::{self, ChunkError};
///
/// let delta = chunk::parse(r#"{"type":"response.output_text.delta","delta":"Hi","sequence_number":4}"#)?;
/// assert_eq!(delta.tokens, 1);
/// let done = chunk::parse(r#"{"type":"response.completed","sequence_number":9,
///     "response":{"id":"resp_1","status":"completed","usage":{"input_tokens":8,"output_tokens":3}}}"#)?;
/// assert_eq!(done.usage.and_then(|u| u.completion_tokens), Some(3));
/// assert_eq!(done.id.as_deref(), Some("resp_1"));
/// assert!(matches!(
///     chunk::parse(r#"{"type":"error","code":"rate_limit_exceeded","message":"later"}"#),
///     Err(ChunkError::Server(_))
/// ));
/// # Ok::<(), ChunkError>(())
/// ```
///
/// A field given twice does not fail the chunk: the last value is read and
/// [`Parsed::duplicate_keys`] says so (the chunk is then read a second time, from JSON with
/// each name once: the price of an odd chunk, not of every one).
pub fn parse(data: &str) -> Result<Parsed, ChunkError> {
    match parse_once(data) {
        Err(error) if is_duplicate(&error) => match deduplicated(data).map(|d| parse_once(&d)) {
            Some(Ok(Ok(mut parsed))) => {
                parsed.duplicate_keys = true;
                Ok(parsed)
            }
            Some(Ok(Err(server))) => Err(server),
            Some(Err(again)) => Err(malformed(data, &again)),
            None => Err(malformed(data, &error)),
        },
        Err(error) => Err(malformed(data, &error)),
        Ok(Err(error)) => Err(error),
        Ok(Ok(parsed)) => Ok(parsed),
    }
}

/// Parses one data event whose fields are each given once (serde's error, else the chunk or
/// the error object it carried).
fn parse_once(data: &str) -> Result<Result<Parsed, ChunkError>, serde_json::Error> {
    let wire: Wire<'_> = serde_json::from_str(data)?;
    if let Some(error) = wire.error {
        return Ok(Err(ChunkError::Server(server_error(&error))));
    }
    if let Some(kind) = wire.kind.as_deref().filter(|k| responses::is_event(k)) {
        return Ok(responses::parsed(kind, wire.delta, wire.response, data));
    }
    if wire.object.as_deref() == Some("response") {
        // A whole Responses answer reads as the `response.completed` event that carries it.
        let whole = serde_json::from_str::<&RawValue>(data)?;
        return Ok(responses::parsed(
            "response.completed",
            None,
            Some(whole),
            data,
        ));
    }
    let choices = wire.choices.unwrap_or_default();
    let (usage, duplicate_usage) = match wire.usage.and_then(Usage::from_raw) {
        Some((usage, duplicate)) => (Some(usage), duplicate),
        None => (None, false),
    };
    let (metrics, duplicate_metrics) = match wire.metrics.map(ServerMetrics::from_raw) {
        Some((metrics, duplicate)) => (Some(metrics), duplicate),
        None => (None, false),
    };
    let duplicate_keys = duplicate_usage || duplicate_metrics;
    Ok(Ok(Parsed {
        tokens: choices.tokens,
        reasoning: choices.reasoning,
        finish: choices.finish,
        usage,
        id: wire.id.map(Cow::into_owned),
        metrics,
        duplicate_keys,
        terminal: false,
    }))
}

/// serde's error for a field given twice.
fn is_duplicate(error: &serde_json::Error) -> bool {
    error.is_data() && error.to_string().starts_with("duplicate field")
}

/// `data` with each name of each object once, the last value of each (what a JSON parser
/// that keeps the last value reads); `None` when it is not JSON.
fn deduplicated(data: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(data)
        .ok()
        .map(|value| value.to_string())
}

fn malformed(data: &str, error: &serde_json::Error) -> ChunkError {
    // serde's message quotes the offending value, which may be the whole event: bounded.
    let reason = excerpt(&error.to_string());
    ChunkError::Malformed(format!(
        "event is not a completion chunk ({reason}): {}",
        excerpt(data)
    ))
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

/// The text a data event carried: its content, reasoning and completion text deltas, in order
/// (a Responses API event: its text, refusal or reasoning `delta`), or an empty string (a role
/// frame, a usage chunk, or an event that is not a chunk).
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
    match serde_json::from_str::<TextWire<'_>>(data) {
        Ok(wire) => wire.text(),
        Err(error) if is_duplicate(&error) => deduplicated(data)
            .and_then(|data| {
                serde_json::from_str::<TextWire<'_>>(&data)
                    .ok()
                    .map(|w| w.text())
            })
            .unwrap_or_default(),
        Err(_) => String::new(),
    }
}

impl TextWire<'_> {
    fn text(&self) -> String {
        if let Some(kind) = self.kind.as_deref() {
            return responses::text(kind, self.delta);
        }
        let mut out = String::new();
        for choice in self.choices.iter().flatten() {
            if let Some(delta) = &choice.delta {
                for part in [&delta.reasoning_content, &delta.reasoning, &delta.content] {
                    out.push_str(part.as_deref().unwrap_or_default());
                }
            }
            out.push_str(choice.text.as_deref().unwrap_or_default());
        }
        out
    }
}

/// At most [`MESSAGE_LIMIT`] characters of `text` (and an ellipsis when it was longer),
/// otherwise as it is: see [`MESSAGE_LIMIT`] for what a program should do before showing it.
///
/// ```
/// use tokenmeter_openai::chunk::{MESSAGE_LIMIT, excerpt};
///
/// assert_eq!(excerpt("short"), "short");
/// assert_eq!(excerpt(&"x".repeat(MESSAGE_LIMIT + 5)).chars().count(), MESSAGE_LIMIT + 1);
/// ```
pub fn excerpt(text: &str) -> String {
    const MAX: usize = MESSAGE_LIMIT;
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
        assert_eq!(parse(reasoning).unwrap().reasoning, 1);
        let answer = r#"{"choices":[{"delta":{"content":"Hi","reasoning_content":""}}]}"#;
        assert_eq!(parse(answer).unwrap().reasoning, 0);
        let cached = r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":8}}}"#;
        assert_eq!(parse(cached).unwrap().usage.unwrap().cached_tokens, Some(8));
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

    /// vLLM 0.33's `_choice_has_streamed_output`: an empty content without a role is a token
    /// that decoded to no text; with a role (any value), the opening frame; a null or missing
    /// content, a finish-only delta.
    #[test]
    fn an_empty_content_without_a_role_is_a_token_as_vllm_counts_it() {
        for (event, tokens) in [
            (r#"{"choices":[{"delta":{"content":""}}]}"#, 1),
            (r#"{"choices":[{"delta":{"role":null,"content":""}}]}"#, 0),
            (
                r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
                0,
            ),
            (r#"{"choices":[{"delta":{"content":null}}]}"#, 0),
            (r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#, 0),
            (
                r#"{"choices":[{"delta":{"content":""}},{"delta":{"content":""}}]}"#,
                2,
            ),
        ] {
            assert_eq!(parse(event).unwrap().tokens, tokens, "{event}");
        }
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
    fn unusable_usage_counts_are_ignored_not_fatal() {
        let usage = |u: &str| {
            parse(&format!(r#"{{"choices":[],"usage":{u}}}"#))
                .unwrap()
                .usage
        };
        let max = usage(r#"{"prompt_tokens":1,"completion_tokens":18446744073709551615}"#).unwrap();
        assert_eq!(
            (max.completion_tokens, max.unusable),
            (Some(u64::MAX), false)
        );
        for bad in [
            r#"{"prompt_tokens":2,"completion_tokens":5.0}"#,
            r#"{"prompt_tokens":2,"completion_tokens":"5"}"#,
            r#"{"prompt_tokens":2,"completion_tokens":-1}"#,
            r#"{"prompt_tokens":2,"completion_tokens":18446744073709551616}"#,
            r#"{"prompt_tokens":2,"completion_tokens":{"n":5}}"#,
            r#"{"prompt_tokens":2,"completion_tokens":1e400}"#,
            r#"{"prompt_tokens":2,"completion_tokens":-1e400}"#,
            r#"{"prompt_tokens":2,"completion_tokens":0.5}"#,
        ] {
            let u = usage(bad).unwrap();
            assert_eq!(
                (u.prompt_tokens, u.completion_tokens, u.unusable),
                (Some(2), None, true),
                "{bad}"
            );
        }
        let whole = usage(r#""lots""#).unwrap();
        assert!(usage("1e400").unwrap().unusable);
        assert_eq!((whole.completion_tokens, whole.unusable), (None, true));
        assert_eq!(usage("null"), None);
        let absent = usage(r#"{"completion_tokens":null}"#).unwrap();
        assert_eq!(absent, Usage::default());
    }

    #[test]
    fn malformed_messages_are_bounded_even_when_serde_quotes_the_event() {
        let huge = format!(r#"{{"choices":"{}"}}"#, "k".repeat(100_000));
        let Err(ChunkError::Malformed(message)) = parse(&huge) else {
            panic!("not malformed");
        };
        assert!(
            message.chars().count() <= 2 * MESSAGE_LIMIT + 100,
            "{}",
            message.len()
        );
    }

    #[test]
    fn excerpts_are_bounded() {
        assert_eq!(excerpt("short"), "short");
        assert_eq!(excerpt(&"é".repeat(300)), "é".repeat(300), "kept whole");
        let long = "é".repeat(MESSAGE_LIMIT + 300);
        assert_eq!(excerpt(&long).chars().count(), MESSAGE_LIMIT + 1);
    }

    /// Issue 26, item 11: a field given twice anywhere `parse` reads is not an error: the
    /// last value (as JavaScript and Python read it), flagged.
    #[test]
    fn a_field_given_twice_is_read_last_and_flagged() {
        for (event, tokens) in [
            (r#"{"choices":[],"choices":[{"delta":{"content":"a"}}]}"#, 1),
            (
                r#"{"choices":[{"delta":{"content":"a"},"delta":{"content":"b"}}]}"#,
                1,
            ),
            (r#"{"choices":[{"delta":{"content":"a","content":""}}]}"#, 1),
            (r#"{"id":"a","id":"b","choices":[{"text":"x"}]}"#, 1),
            (
                r#"{"choices":[],"usage":{"completion_tokens":1,"completion_tokens":2}}"#,
                0,
            ),
        ] {
            let parsed = parse(event).unwrap_or_else(|e| panic!("{event}: {e}"));
            assert!(parsed.duplicate_keys, "{event}");
            assert_eq!(parsed.tokens, tokens, "{event}");
        }
        let usage = r#"{"choices":[],"usage":{"completion_tokens":1,"completion_tokens":2}}"#;
        assert_eq!(
            parse(usage).unwrap().usage.unwrap().completion_tokens,
            Some(2)
        );
        assert_eq!(
            parse(r#"{"id":"a","id":"b"}"#).unwrap().id.as_deref(),
            Some("b")
        );
        assert!(!parse(r#"{"choices":[]}"#).unwrap().duplicate_keys);
        // An error object given twice is still the server's error.
        let error = r#"{"error":{"message":"a"},"error":{"message":"b","code":429}}"#;
        assert!(matches!(
            parse(error),
            Err(ChunkError::Server(ServerError {
                class: ErrorClass::RateLimited,
                ..
            }))
        ));
        // Not JSON stays malformed.
        assert!(matches!(
            parse(r#"{"id":"a","id":"#),
            Err(ChunkError::Malformed(_))
        ));
    }
}
