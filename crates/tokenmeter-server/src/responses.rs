//! `POST /v1/responses`: OpenAI's Responses API over the engine, as vLLM serves it.
//!
//! A request is read as the chat request it amounts to ([`chat_body`]): `instructions` is a
//! system message, `input` (a string, or a list of messages and items) the conversation,
//! `max_output_tokens` the token limit; the other options (`model`, `stream`, `temperature`,
//! `top_p`, ...) are checked as the chat endpoint checks them. So the same prompt counts the
//! same tokens, runs the same generation and is refused with the same error body on both
//! endpoints, and the engine meters it as a chat request.
//!
//! A stream is typed SSE events (`event:` and `data:` lines, a `sequence_number` from 0, no
//! `[DONE]`): `response.created`, `response.in_progress`, then for each output item
//! `response.output_item.added`, (a message) `response.content_part.added`, one
//! `response.output_text.delta` per token (`response.reasoning_text.delta` for reasoning
//! tokens, in a `reasoning` item before the message), `response.output_text.done`,
//! `response.content_part.done`, `response.output_item.done`; and last `response.completed`
//! with the whole response and its `usage` (`status` `incomplete`, with
//! `incomplete_details.reason` `max_output_tokens`, when the answer stopped at the limit). A
//! failure after the first token ends the stream with `response.failed`. Without `stream`, the
//! answer is the response object of `response.completed`.

use std::convert::Infallible;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use axum::routing::post;
use bytes::Bytes;
use futures_util::Stream;
use serde_json::{Map, Value, json};
use tokenmeter_sim::{Operation, SubmitError};

use super::api_error::ApiError;
use super::budget::AnswerHold;
use super::choices::{Choices, Event};
use super::fields::{Fields, type_name};
use super::openai;
use super::response_events::{Ask, ResponseEvents};
use super::routes::{AppState, admit, ended, refused_as, submit, unix_now};
use super::sse::WholeBody;

/// The most `max_output_tokens` a request may ask for.
const MAX_OUTPUT_TOKENS: i64 = u32::MAX as i64;

/// Chat fields the Responses API does not have, dropped before the body is read as chat.
const NOT_RESPONSES: [&str; 10] = [
    "input",
    "instructions",
    "max_output_tokens",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "stream_options",
    "n",
    "stop",
    "logprobs",
];

/// The route, for [`routes::router`](super::routes::router).
pub(crate) fn route() -> Router<AppState> {
    Router::new().route("/v1/responses", post(responses))
}

/// The handler.
async fn responses(State(state): State<AppState>, request: Request) -> Response {
    let orca = super::orca::format(request.headers(), state.orca);
    let mut ask = Ask::default();
    let parse = |body: &[u8]| {
        let (chat, asked) = chat_body(body)?;
        ask = asked;
        let body = chat.as_deref().unwrap_or(body);
        openai::chat(body, state.default_max_tokens, &state.counter)
            .map(|parsed| state.with_reasoning(parsed))
    };
    // The text is held for the `done` events and the final response: a stream is held whole.
    let (parsed, hold) = match admit(&state, Operation::Chat, request, parse, true).await {
        Ok(admitted) => admitted,
        Err(refusal) => return refusal,
    };
    let streams = match submit(&state.engine, &parsed, state.model()) {
        Ok(streams) => streams,
        Err(error) => return refused_as(&error, &in_responses_words(&error)),
    };
    let id = format!("resp_sim-{}", streams[0].id());
    let request_id = HeaderValue::from_str(&id).ok();
    let events = ResponseEvents::new(id, unix_now(), state.model(), ask)
        .per_request_metrics(state.per_request_metrics);
    let mut choices = Choices::new(streams, None, None);
    let prompt = parsed.generate.prompt_tokens;
    let mut response = if parsed.options.stream {
        match choices.first().await {
            Err(event) => ended(event),
            Ok(()) => {
                let body = ResponsesBody::new(choices, events, prompt, hold);
                let mut response = Response::new(Body::from_stream(body));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/event-stream"),
                );
                response
            }
        }
    } else {
        whole(choices, events, prompt, hold).await
    };
    if let Some(value) = request_id {
        response.headers_mut().insert("x-request-id", value);
    }
    super::orca::add(&mut response, &state.engine, orca);
    response
}

/// A whole answer: every token, then the response object.
async fn whole(
    mut choices: Choices,
    mut events: ResponseEvents,
    prompt: u32,
    hold: Option<AnswerHold>,
) -> Response {
    while let Some(event) = poll_fn(|cx| choices.poll_event(cx)).await {
        match event {
            Event::Piece(piece) => events.take(&piece),
            other => return ended(other),
        }
    }
    let body = events.whole(prompt, &choices).to_string();
    let whole = WholeBody::new(vec![Bytes::from(body)], choices).holding(hold);
    let mut response = Response::new(Body::new(whole));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The message of a refused submission in the Responses API's words: the prompt is the
/// `input`, the token limit `max_output_tokens` (the chat endpoint's words name `messages` and
/// `max_tokens`, fields a Responses request does not have).
fn in_responses_words(error: &SubmitError) -> String {
    match error {
        SubmitError::ContextLength {
            prompt,
            completion,
            max_model_len,
        } => format!(
            "This model's maximum context length is {max_model_len} tokens. However, you requested {} tokens ({prompt} in the input, {completion} in the output). Please reduce the length of the `input` or `max_output_tokens`.",
            u64::from(*prompt) + u64::from(*completion)
        ),
        SubmitError::TooLarge { needed, capacity } => format!(
            "the request needs {needed} KV-cache tokens (prompt + output) but the cache holds {capacity}: shorten the `input` or `max_output_tokens`"
        ),
        other => other.to_string(),
    }
}

/// The chat body a Responses body amounts to (`None`: the body is not a JSON object, and the
/// chat reader refuses it with the same words), and what it asks for besides.
fn chat_body(body: &[u8]) -> Result<(Option<Vec<u8>>, Ask), ApiError> {
    let Ok(value @ Value::Object(_)) = serde_json::from_slice::<Value>(body) else {
        return Ok((None, Ask::default()));
    };
    let fields = Fields::of(&value)?;
    let ask = Ask {
        instructions: fields.str("instructions")?.map(str::to_owned),
        max_output_tokens: fields
            .integer("max_output_tokens", 1, MAX_OUTPUT_TOKENS)?
            .and_then(|n| u32::try_from(n).ok()),
    };
    let mut messages = Vec::new();
    if let Some(instructions) = &ask.instructions {
        messages.push(json!({"role": "system", "content": instructions}));
    }
    match fields.required("input")? {
        Value::String(text) => messages.push(json!({"role": "user", "content": text})),
        Value::Array(items) if items.is_empty() => {
            return Err(ApiError::bad_request(
                Some("input"),
                "`input` is empty: send a string or at least one message",
            ));
        }
        Value::Array(items) => {
            for item in items {
                messages.push(chat_message(item)?);
            }
        }
        other => {
            return Err(ApiError::bad_request(
                Some("input"),
                format!(
                    "`input` must be a string or an array of messages, not {}",
                    type_name(other)
                ),
            ));
        }
    }
    let Value::Object(mut map) = value else {
        return Ok((None, ask));
    };
    for name in NOT_RESPONSES {
        map.remove(name);
    }
    map.insert("messages".into(), Value::Array(messages));
    if let Some(limit) = ask.max_output_tokens {
        map.insert("max_tokens".into(), limit.into());
    }
    Ok((Some(Value::Object(map).to_string().into_bytes()), ask))
}

/// The chat message of one `input` item: a message's `content` (a string or parts with
/// `text`), a tool result's `output`, or a function call's `arguments`.
fn chat_message(item: &Value) -> Result<Value, ApiError> {
    let Value::Object(item) = item else {
        return Err(ApiError::bad_request(
            Some("input"),
            format!(
                "each item of `input` must be an object (a message), not {}",
                type_name(item)
            ),
        ));
    };
    let role = item.get("role").and_then(Value::as_str).unwrap_or("user");
    let content = ["content", "output", "arguments"]
        .iter()
        .find_map(|name| item.get(*name))
        .cloned()
        .unwrap_or(Value::Null);
    let mut message = Map::new();
    message.insert("role".into(), role.into());
    message.insert("content".into(), content);
    Ok(Value::Object(message))
}

/// The body of a streamed response: its events as hyper asks for them. The tokens are taken
/// (and counted) as their events are handed over; the request succeeds once
/// `response.completed` is.
struct ResponsesBody {
    choices: Choices,
    events: ResponseEvents,
    prompt: u32,
    pending: std::collections::VecDeque<Bytes>,
    done: bool,
    hold: Option<AnswerHold>,
}

impl ResponsesBody {
    fn new(
        choices: Choices,
        mut events: ResponseEvents,
        prompt: u32,
        hold: Option<AnswerHold>,
    ) -> Self {
        let mut pending = std::collections::VecDeque::with_capacity(8);
        events.opening(&mut pending);
        Self {
            choices,
            events,
            prompt,
            pending,
            done: false,
            hold,
        }
    }
}

impl Stream for ResponsesBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(frame) = this.pending.pop_front() {
                if this.done && this.pending.is_empty() {
                    this.choices.delivered();
                    this.hold = None;
                }
                return Poll::Ready(Some(Ok(frame)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match this.choices.poll_event(cx) {
                Poll::Ready(Some(Event::Piece(piece))) => {
                    this.events.token(&piece, &mut this.pending);
                }
                Poll::Ready(Some(Event::Failed(message))) => {
                    this.events.failed(&message, &mut this.pending);
                    this.done = true;
                }
                Poll::Ready(Some(Event::Vanished)) => {
                    let message = "the engine stopped before the end of the stream";
                    this.events.failed(message, &mut this.pending);
                    this.done = true;
                }
                Poll::Ready(None) => {
                    this.events
                        .completed(this.prompt, &this.choices, &mut this.pending);
                    this.done = true;
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(body: &str) -> Result<Value, ApiError> {
        let (chat, _) = chat_body(body.as_bytes())?;
        Ok(serde_json::from_slice(&chat.expect("an object")).expect("JSON"))
    }

    #[test]
    fn a_responses_body_is_the_chat_body_it_amounts_to() {
        let body = chat(
            r#"{"model":"m","input":"Hello","instructions":"Be terse.","max_output_tokens":7,"stream":true,"max_tokens":99,"n":3}"#,
        )
        .unwrap();
        assert_eq!(
            body,
            json!({"model":"m","stream":true,"max_tokens":7,"messages":[
                {"role":"system","content":"Be terse."},{"role":"user","content":"Hello"}]})
        );
        let list = chat(
            r#"{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"function_call_output","call_id":"c","output":"42"}]}"#,
        )
        .unwrap();
        assert_eq!(list["messages"][0]["content"][0]["text"], "hi");
        assert_eq!(list["messages"][1], json!({"role":"user","content":"42"}));
    }

    #[test]
    fn bad_requests_name_the_responses_field() {
        for (body, param) in [
            (r#"{"model":"m"}"#, "input"),
            (r#"{"input":[]}"#, "input"),
            (r#"{"input":7}"#, "input"),
            (r#"{"input":[7]}"#, "input"),
            (
                r#"{"input":"x","max_output_tokens":0}"#,
                "max_output_tokens",
            ),
            (
                r#"{"input":"x","max_output_tokens":"sk-secret"}"#,
                "max_output_tokens",
            ),
            (
                r#"{"input":"x","instructions":["sk-secret"]}"#,
                "instructions",
            ),
        ] {
            let error = chat(body).expect_err(body);
            assert_eq!(error.param(), Some(param), "{body}: {error:?}");
            assert!(!error.message().contains("sk-secret"), "{body}");
        }
        // Not a JSON object: read (and refused) as the chat endpoint reads it.
        assert!(chat_body(b"not json").unwrap().0.is_none());
        assert!(chat_body(b"[]").unwrap().0.is_none());
    }
}
