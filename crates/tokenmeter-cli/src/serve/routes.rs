//! The HTTP API: OpenAI's completion endpoints over the engine, `/metrics`, `/health`.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::BytesMut;
use futures_util::StreamExt;
use http_body::Body as _;
use serde_json::{Value, json};
use tokenmeter::{ErrorClass, FinishReason};
use tokenmeter_sim::{Engine, Operation, SubmitError, TokenStream};

use super::chunks::{Frames, error_body};
use super::metrics::{CONTENT_TYPE, Metrics};
use super::openai::{self, Parsed};
use super::slo::SloState;
use super::sse::{SseBody, WholeBody};

/// Shared by every handler.
#[derive(Clone, Debug)]
pub(crate) struct AppState {
    pub(crate) engine: Engine,
    pub(crate) model: Arc<str>,
    pub(crate) default_max_tokens: u32,
    /// How prompt tokens are counted.
    pub(crate) counter: openai::Counter,
    /// Request bodies larger than this are answered 413.
    pub(crate) max_body: usize,
    /// A request body must arrive whole within this after its headers (else 408).
    pub(crate) body_timeout: Duration,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) slo: Arc<SloState>,
}

/// The routes; any other path is a 404 and any other method a 405, with OpenAI's error body.
pub(crate) fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/models", get(models))
        .route("/metrics", get(metrics))
        .route("/health", get(health))
        .route("/slo", get(slo))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

const ROUTE_LIST: &str = "POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /metrics, GET /health, GET /slo";

async fn not_found() -> Response {
    let message = format!("no such route: this server answers {ROUTE_LIST}");
    let body = error_body(&message, "invalid_request_error", Some("not_found"));
    json_response(StatusCode::NOT_FOUND, &body)
}

async fn method_not_allowed(method: Method) -> Response {
    // The method is one of a bounded set or named as other: never echo arbitrary input.
    let method = match method {
        Method::GET | Method::POST | Method::HEAD | Method::PUT | Method::DELETE => method.as_str(),
        Method::PATCH | Method::OPTIONS => method.as_str(),
        _ => "this method",
    }
    .to_owned();
    let message =
        format!("{method} is not allowed on this route: this server answers {ROUTE_LIST}");
    let body = error_body(
        &message,
        "invalid_request_error",
        Some("method_not_allowed"),
    );
    json_response(StatusCode::METHOD_NOT_ALLOWED, &body)
}

async fn chat(State(state): State<AppState>, request: Request) -> Response {
    generate(state, Operation::Chat, request).await
}

async fn completions(State(state): State<AppState>, request: Request) -> Response {
    generate(state, Operation::TextCompletion, request).await
}

async fn health() -> Response {
    json_response(StatusCode::OK, &json!({"status": "ok"}))
}

async fn models(State(state): State<AppState>) -> Response {
    let model = json!({
        "id": &*state.model,
        "object": "model",
        "created": unix_now(),
        "owned_by": "tokenmeter",
    });
    json_response(StatusCode::OK, &json!({"object": "list", "data": [model]}))
}

async fn slo(State(state): State<AppState>) -> Response {
    json_response(StatusCode::OK, &state.slo.json())
}

async fn metrics(State(state): State<AppState>) -> Response {
    let text = state.metrics.render();
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response()
}

/// Reads the body within the limits, parses it, submits, and answers as a stream or a whole
/// response. The body is dropped once parsed: a queued request keeps only what it needs.
async fn generate(state: AppState, operation: Operation, request: Request) -> Response {
    let body = match read_body(request, state.max_body, state.body_timeout).await {
        Ok(body) => body,
        Err(refusal) => {
            // Recorded too: the request arrived and was refused.
            state
                .engine
                .series(operation)
                .start()
                .fail(ErrorClass::ClientError);
            return refusal.response(state.max_body, state.body_timeout);
        }
    };
    let parsed = match operation {
        Operation::TextCompletion => {
            openai::completion(&body, state.default_max_tokens, &state.counter)
        }
        _ => openai::chat(&body, state.default_max_tokens, &state.counter),
    };
    drop(body);
    let parsed = match parsed {
        Ok(parsed) => parsed,
        Err(error) => {
            state
                .engine
                .series(operation)
                .start()
                .fail(ErrorClass::ClientError);
            let body = error_body(&error.to_string(), "invalid_request_error", None);
            return json_response(StatusCode::BAD_REQUEST, &body);
        }
    };
    let tokens = match state.engine.submit(parsed.generate.clone()) {
        Ok(tokens) => tokens,
        Err(error) => return refused(&error),
    };
    let prefix = match operation {
        Operation::TextCompletion => "cmpl",
        _ => "chatcmpl",
    };
    let id = format!("{prefix}-sim-{}", tokens.id());
    let request_id = HeaderValue::from_str(&id).ok();
    let frames = Frames::new(
        operation,
        id,
        unix_now(),
        &state.model,
        parsed.include_usage,
    );
    let mut response = if parsed.stream {
        stream(tokens, frames, parsed).await
    } else {
        whole(tokens, &frames, parsed).await
    };
    if let Some(value) = request_id {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// Why a request body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyRefusal {
    /// Larger than `--max-body-size` (413).
    TooLarge,
    /// Not whole within `--body-timeout` (408).
    Slow,
    /// The client broke off or sent a malformed body (400).
    Broken,
}

impl BodyRefusal {
    fn response(self, max_body: usize, timeout: Duration) -> Response {
        let (status, message, code) = match self {
            BodyRefusal::TooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request body is larger than this server's limit of {max_body} bytes: send a smaller body, or start serve with a larger --max-body-size"
                ),
                "request_too_large",
            ),
            BodyRefusal::Slow => (
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive whole within {timeout:?} of its headers: send it at once, or start serve with a longer --body-timeout"
                ),
                "request_timeout",
            ),
            BodyRefusal::Broken => (
                StatusCode::BAD_REQUEST,
                "the request body could not be read: the connection broke off or the framing is invalid".to_owned(),
                "invalid_body",
            ),
        };
        let mut response = json_response(
            status,
            &error_body(&message, "invalid_request_error", Some(code)),
        );
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }
}

/// The whole body of `request`, at most `max` bytes, within `timeout`. A `content-length` over
/// the limit is refused before any of the body is read.
async fn read_body(request: Request, max: usize, timeout: Duration) -> Result<Bytes, BodyRefusal> {
    if declared_length(request.headers()).is_some_and(|length| length > max as u64) {
        return Err(BodyRefusal::TooLarge);
    }
    let mut body = request.into_body();
    let read = async {
        let mut bytes = BytesMut::new();
        while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            let frame = frame.map_err(|_| BodyRefusal::Broken)?;
            if let Ok(data) = frame.into_data() {
                if bytes.len() + data.len() > max {
                    return Err(BodyRefusal::TooLarge);
                }
                bytes.extend_from_slice(&data);
            }
        }
        Ok(bytes.freeze())
    };
    tokio::time::timeout(timeout, read)
        .await
        .unwrap_or(Err(BodyRefusal::Slow))
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A streaming answer. Waits for the first item without taking it (as vLLM sends its role
/// frame with the first token), so a failure before any token is a plain HTTP 500; the tokens
/// are taken, and counted, as [`SseBody`] hands them to hyper.
async fn stream(mut tokens: TokenStream, frames: Frames, parsed: Parsed) -> Response {
    if !matches!(tokens.peek().await, Some(Ok(_))) {
        // Taken, so that the failure is recorded.
        return match tokens.next().await {
            Some(Err(error)) => failed(&error.to_string()),
            _ => stopped(),
        };
    }
    let prompt = parsed.generate.prompt_tokens;
    let body = Body::from_stream(SseBody::new(tokens, frames, prompt));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A non-streaming answer: every token, then one JSON body with `usage`. A client that hangs
/// up before [`WholeBody`] is handed to hyper leaves the request cancelled.
async fn whole(mut tokens: TokenStream, frames: &Frames, parsed: Parsed) -> Response {
    tokens.hold_success();
    let mut text = String::new();
    let mut count = 0;
    let mut finish = FinishReason::Stop;
    while let Some(item) = tokens.next().await {
        match item {
            Ok(token) => {
                text.push_str(token.text);
                count += 1;
                if let Some(reason) = token.finish_reason {
                    finish = reason;
                }
            }
            Err(error) => return failed(&error.to_string()),
        }
    }
    if count == 0 {
        return stopped();
    }
    let prompt = parsed.generate.prompt_tokens;
    let json = frames.complete(&text, finish, prompt, count).to_string();
    let mut response = Response::new(Body::new(WholeBody::new(Bytes::from(json), tokens)));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The answer to a refused submission: 429 (queue full), 400 (past the context length, with
/// vLLM's message, or larger than the KV cache) or 503.
fn refused(error: &SubmitError) -> Response {
    let status =
        StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let (kind, code) = match error {
        SubmitError::QueueFull { .. } => ("rate_limit_error", "rate_limit_exceeded"),
        SubmitError::ContextLength { .. } | SubmitError::TooLarge { .. } => {
            ("invalid_request_error", "context_length_exceeded")
        }
        _ => ("server_error", "overloaded"),
    };
    let mut response = json_response(status, &error_body(&error.to_string(), kind, Some(code)));
    if status == StatusCode::TOO_MANY_REQUESTS {
        let headers = response.headers_mut();
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

fn failed(message: &str) -> Response {
    let body = error_body(message, "server_error", Some("internal_error"));
    json_response(StatusCode::INTERNAL_SERVER_ERROR, &body)
}

fn stopped() -> Response {
    let body = error_body("the engine has stopped", "server_error", Some("overloaded"));
    json_response(StatusCode::SERVICE_UNAVAILABLE, &body)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
