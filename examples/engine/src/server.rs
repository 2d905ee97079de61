//! The HTTP side (axum, on the tokio runtime): `/v1/completions` and `/v1/chat/completions`
//! (streamed the OpenAI way, with a final usage chunk when `stream_options.include_usage`, or
//! whole), `/v1/models`, `/metrics` and `/health`.
//!
//! A handler starts the request's measurement at arrival, checks the request, and hands the
//! job to the engine thread with the measurement; then it only turns the engine's events into
//! SSE frames. When the client hangs up, hyper drops the body and with it the receiver: the
//! engine sees it at its next step boundary, cancels the request and frees its KV cache.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream;
use serde_json::{Value, json};
use tokenmeter::sink::{AdmissionReason, EngineRecorder};
use tokenmeter::{ErrorClass, Series};
use tokenmeter_prometheus::{CONTENT_TYPE, Handle};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use crate::job::{Event, Job};
use crate::openai::{self, Answer, Api};
use crate::tokenizer::Tokenizer;

/// What the handlers share.
#[derive(Debug)]
pub struct App {
    /// The served model's name.
    pub model: String,
    /// The series of `/v1/completions` requests (resolved once).
    pub completions: Series,
    /// The series of `/v1/chat/completions` requests.
    pub chat: Series,
    /// The engine's recorder (the handlers count admission rejections).
    pub recorder: Arc<EngineRecorder>,
    /// The jobs' way to the engine thread.
    pub jobs: Sender<Job>,
    /// Requests sent to the engine and not yet admitted.
    pub queued: Arc<AtomicUsize>,
    /// Most requests waiting.
    pub queue_limit: usize,
    /// Most positions per sequence.
    pub max_context: usize,
    /// The tokenizer.
    pub tokenizer: Tokenizer,
    /// The Prometheus exposition.
    pub metrics: Handle,
    /// The next response id.
    pub next_id: AtomicU64,
}

/// The routes.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/models", get(models))
        .route("/metrics", get(metrics))
        .route("/health", get(|| async { "ok" }))
        .with_state(app)
}

async fn completions(State(app): State<Arc<App>>, body: Bytes) -> Response {
    answer(generate(&app, Api::Completions, &body)).await
}

async fn chat(State(app): State<Arc<App>>, body: Bytes) -> Response {
    answer(generate(&app, Api::Chat, &body)).await
}

async fn answer(started: Result<(Streaming, bool), Box<Response>>) -> Response {
    match started {
        Ok((state, true)) => sse(state),
        Ok((state, false)) => whole(state).await,
        Err(refused) => *refused,
    }
}

/// Starts the request's measurement, checks it and hands it to the engine: the answer's state
/// and whether it streams, or the refusal.
fn generate(app: &App, api: Api, body: &[u8]) -> Result<(Streaming, bool), Box<Response>> {
    let series = match api {
        Api::Completions => &app.completions,
        Api::Chat => &app.chat,
    };
    let mut request = series.start(); // the arrival
    let refuse = |mut request: tokenmeter::Request, status: StatusCode, message: String| {
        let class = if status == StatusCode::TOO_MANY_REQUESTS {
            ErrorClass::RateLimited
        } else if status.is_server_error() {
            ErrorClass::ServerError
        } else {
            ErrorClass::ClientError
        };
        request.fail(class);
        Box::new(error(status, &message))
    };
    let ask = match openai::parse(api, body, &app.model) {
        Ok(ask) => ask,
        Err(message) => return Err(refuse(request, StatusCode::BAD_REQUEST, message)),
    };
    let prompt = app.tokenizer.encode(&ask.prompt);
    if prompt.is_empty() {
        let message = "the prompt has no words: send at least one".to_string();
        return Err(refuse(request, StatusCode::BAD_REQUEST, message));
    }
    if prompt.len() + ask.max_tokens > app.max_context {
        let message = format!(
            "the prompt ({} tokens) plus max_tokens ({}) is past the context of {} tokens: \
             shorten the prompt or lower max_tokens",
            prompt.len(),
            ask.max_tokens,
            app.max_context
        );
        return Err(refuse(request, StatusCode::BAD_REQUEST, message));
    }
    request.set_input_tokens(prompt.len() as u64);
    request.set_max_tokens(ask.max_tokens as u64);
    let limit = app.queue_limit;
    let admitted = app
        .queued
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| {
            (q < limit).then_some(q + 1)
        });
    if admitted.is_err() {
        app.recorder
            .add_admission_rejections(AdmissionReason::QueueFull, 1);
        let message = format!("{limit} requests are waiting already: retry later");
        return Err(refuse(request, StatusCode::TOO_MANY_REQUESTS, message));
    }
    let (events, rx) = unbounded_channel();
    let job = Job {
        prompt,
        max_tokens: ask.max_tokens,
        request,
        events,
    };
    if let Err(refused) = app.jobs.send(job) {
        app.queued.fetch_sub(1, Ordering::AcqRel);
        let message = "the engine has stopped".to_string();
        return Err(refuse(
            refused.0.request,
            StatusCode::SERVICE_UNAVAILABLE,
            message,
        ));
    }
    let answer = Answer {
        api,
        id: format!("cmpl-{}", app.next_id.fetch_add(1, Ordering::Relaxed)),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        model: app.model.clone(),
    };
    let stream_state = Streaming {
        rx,
        answer,
        tokenizer: app.tokenizer.clone(),
        max_tokens: ask.max_tokens,
        include_usage: ask.include_usage,
        sent: 0,
        pending: VecDeque::new(),
        ended: false,
    };
    Ok((stream_state, ask.stream))
}

/// One answer being turned from engine events into frames.
struct Streaming {
    rx: UnboundedReceiver<Event>,
    answer: Answer,
    tokenizer: Tokenizer,
    max_tokens: usize,
    include_usage: bool,
    sent: usize,
    pending: VecDeque<String>,
    ended: bool,
}

impl Streaming {
    /// The frames of one event; `None` once the answer is over.
    fn frames(&mut self, event: Option<Event>) {
        match event {
            Some(Event::Token(id)) => {
                if self.sent == 0 && self.answer.api == Api::Chat {
                    self.pending.push_back(self.answer.chunk(None, None, true));
                }
                let piece = self.tokenizer.piece(id, self.sent == 0);
                self.sent += 1;
                // The last token carries the finish reason (no empty frame after it).
                let finish = (self.sent == self.max_tokens).then_some("length");
                self.pending
                    .push_back(self.answer.chunk(Some(&piece), finish, false));
            }
            Some(Event::Done {
                prompt_tokens,
                completion_tokens,
                metrics,
            }) => {
                if self.include_usage {
                    let usage = openai::usage(prompt_tokens, completion_tokens);
                    self.pending
                        .push_back(self.answer.usage_chunk(&usage, metrics.as_ref()));
                }
                self.pending.push_back("[DONE]".into());
                self.ended = true;
            }
            Some(Event::Failed(message)) => {
                let error = json!({"error": {"message": message, "type": "server_error",
                                             "code": 500}});
                self.pending.push_back(error.to_string());
                self.ended = true;
            }
            None => self.ended = true,
        }
    }
}

fn sse(state: Streaming) -> Response {
    let frames = stream::unfold(state, |mut state| async move {
        loop {
            if let Some(frame) = state.pending.pop_front() {
                return Some((Ok::<_, Infallible>(SseEvent::default().data(frame)), state));
            }
            if state.ended {
                return None;
            }
            let event = state.rx.recv().await;
            state.frames(event);
        }
    });
    Sse::new(frames).into_response()
}

async fn whole(mut state: Streaming) -> Response {
    let mut text = String::new();
    while let Some(event) = state.rx.recv().await {
        match event {
            Event::Token(id) => {
                text.push_str(&state.tokenizer.piece(id, state.sent == 0));
                state.sent += 1;
            }
            Event::Done {
                prompt_tokens,
                completion_tokens,
                metrics,
            } => {
                let usage = openai::usage(prompt_tokens, completion_tokens);
                let answer = state.answer.whole(&text, &usage, metrics.as_ref());
                return axum::Json(answer).into_response();
            }
            Event::Failed(message) => return error(StatusCode::INTERNAL_SERVER_ERROR, &message),
        }
    }
    error(StatusCode::INTERNAL_SERVER_ERROR, "the engine stopped")
}

fn error(status: StatusCode, message: &str) -> Response {
    let kind = if status.is_server_error() {
        "server_error"
    } else {
        "invalid_request_error"
    };
    let body = json!({"error": {"message": message, "type": kind, "code": status.as_u16()}});
    (status, axum::Json(body)).into_response()
}

async fn models(State(app): State<Arc<App>>) -> axum::Json<Value> {
    axum::Json(
        json!({"object": "list", "data": [{"id": app.model, "object": "model",
                                                   "created": 0, "owned_by": "tokenmeter"}]}),
    )
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], app.metrics.render()).into_response()
}
