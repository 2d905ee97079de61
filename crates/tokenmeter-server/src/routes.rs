//! The HTTP API: OpenAI's completion endpoints over the engine, `/metrics`, `/health`.

use std::future::poll_fn;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokenmeter::ErrorClass;
use tokenmeter_sim::{Engine, Operation, SubmitError, TokenStream};

use super::answer::Answer;
use super::api_error::{ApiError, error_body, http_error_body};
use super::body::{BodyBudget, BodyRefusal, read_body};
use super::budget::{self, AnswerBudget, AnswerHold};
use super::choices::{Choices, Event};
use super::chunks::Frames;
use super::http_counts::{Closed, Refused};
use super::metrics::{CONTENT_TYPE, Metrics};
use super::openai::{self, Parsed};
use super::slo::{self, SloState};
use super::sse::{SseBody, WholeBody};

/// Shared by every handler.
#[derive(Clone, Debug)]
pub(crate) struct AppState {
    pub(crate) engine: Engine,
    /// The names the model is served under; responses report the first.
    pub(crate) models: Arc<[String]>,
    /// Serve a request that names any model (`--accept-any-model`).
    pub(crate) accept_any_model: bool,
    /// `--model`, the `root` of the model objects.
    pub(crate) root: Arc<str>,
    /// `--max-model-len`, shown in the model objects.
    pub(crate) max_model_len: u64,
    pub(crate) default_max_tokens: u32,
    /// How prompt tokens are counted.
    pub(crate) counter: openai::Counter,
    /// Request bodies larger than this are answered 413.
    pub(crate) max_body: usize,
    /// The bytes every request body being read or held may take together (else 503).
    pub(crate) body_budget: Arc<BodyBudget>,
    /// Non-streaming requests whose answer could be larger than this are answered 400
    /// (`budget.rs`).
    pub(crate) max_answer: usize,
    /// The bytes every whole answer in flight may take together, each at its worst case (else
    /// 503; `budget.rs`).
    pub(crate) answer_budget: Arc<AnswerBudget>,
    /// A request body must arrive whole within this after its headers (else 408).
    pub(crate) body_timeout: Duration,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) slo: Arc<SloState>,
    /// `--reasoning-tokens`: chat answers start with this many reasoning tokens.
    pub(crate) reasoning_tokens: u32,
    /// `--enable-per-request-metrics`: answers carry the server's `metrics` object.
    pub(crate) per_request_metrics: bool,
    /// `--orca-format`: answers carry an ORCA load report unless the request names a format.
    pub(crate) orca: Option<tokenmeter::orca::OrcaFormat>,
}

/// The routes, with `more` (the Responses API's, from `responses.rs`); any other path is a
/// 404 and any other method a 405, with vLLM's error body.
pub(crate) fn router(state: AppState, more: Router<AppState>) -> Router {
    Router::new()
        .merge(more)
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/models", get(models))
        .route("/v1/models/{*id}", get(model))
        .route("/metrics", get(metrics))
        .route("/health", get(health))
        .route("/slo", get(slo))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

const ROUTE_LIST: &str = "POST /v1/chat/completions, POST /v1/completions, POST /v1/responses, GET /v1/models, GET /v1/models/{id}, GET /metrics, GET /health, GET /slo";

impl AppState {
    /// The name responses report: the first served name.
    pub(crate) fn model(&self) -> &str {
        &self.models[0]
    }

    /// A chat answer that starts with `--reasoning-tokens` reasoning tokens (fewer than its
    /// tokens).
    pub(crate) fn with_reasoning(&self, mut parsed: Parsed) -> Parsed {
        let output = parsed.generate.generated();
        parsed.generate = parsed
            .generate
            .reasoning_tokens(self.reasoning_tokens.min(output.saturating_sub(1)));
        parsed
    }

    /// Refuses a request naming a model this server does not serve (404, as vLLM); a request
    /// that names none is served.
    fn check_model(&self, model: Option<&str>) -> Result<(), ApiError> {
        match model {
            Some(name) if !self.accept_any_model && !self.models.iter().any(|m| m == name) => {
                Err(ApiError::unknown_model(name))
            }
            _ => Ok(()),
        }
    }

    /// The model object of `name` (vLLM's `ModelCard`).
    fn model_card(&self, name: &str, created: u64) -> Value {
        json!({
            "id": name,
            "object": "model",
            "created": created,
            "owned_by": "tokenmeter",
            "root": &*self.root,
            "parent": null,
            "max_model_len": self.max_model_len,
        })
    }
}

async fn not_found() -> Response {
    let message = format!("no such route: this server answers {ROUTE_LIST}");
    let body = http_error_body(StatusCode::NOT_FOUND, &message);
    json_response(StatusCode::NOT_FOUND, &body)
}

async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    // The method is one of a bounded set or named as other: never echo arbitrary input.
    let method = match method {
        Method::GET | Method::POST | Method::HEAD | Method::PUT | Method::DELETE => method.as_str(),
        Method::PATCH | Method::OPTIONS => method.as_str(),
        _ => "this method",
    }
    .to_owned();
    let message =
        format!("{method} is not allowed on this route: this server answers {ROUTE_LIST}");
    let body = http_error_body(StatusCode::METHOD_NOT_ALLOWED, &message);
    let mut response = json_response(StatusCode::METHOD_NOT_ALLOWED, &body);
    let allow = match uri.path() {
        "/v1/chat/completions" | "/v1/completions" | "/v1/responses" => "POST",
        _ => "GET, HEAD",
    };
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
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
    let created = unix_now();
    let data: Vec<Value> = state
        .models
        .iter()
        .map(|name| state.model_card(name, created))
        .collect();
    json_response(StatusCode::OK, &json!({"object": "list", "data": data}))
}

/// `GET /v1/models/{id}`: the model object of a served name, else vLLM's 404.
async fn model(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    if state.models.contains(&id) {
        json_response(StatusCode::OK, &state.model_card(&id, unix_now()))
    } else {
        api_error(&ApiError::unknown_model(&id))
    }
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
    let orca = super::orca::format(request.headers(), state.orca);
    let parse = |body: &[u8]| match operation {
        Operation::TextCompletion => {
            openai::completion(body, state.default_max_tokens, &state.counter)
        }
        _ => openai::chat(body, state.default_max_tokens, &state.counter)
            .map(|parsed| state.with_reasoning(parsed)),
    };
    let (parsed, hold) = match admit(&state, operation, request, parse, false).await {
        Ok(admitted) => admitted,
        Err(refusal) => return refusal,
    };
    let streams = match submit(&state.engine, &parsed, state.model()) {
        Ok(streams) => streams,
        Err(error) => return refused(&error),
    };
    let prefix = match operation {
        Operation::TextCompletion => "cmpl",
        _ => "chatcmpl",
    };
    let id = format!("{prefix}-sim-{}", streams[0].id());
    let request_id = HeaderValue::from_str(&id).ok();
    let options = &parsed.options;
    let frames = Frames::new(
        operation,
        id,
        unix_now(),
        state.model(),
        options.include_usage,
    )
    .per_request_metrics(state.per_request_metrics);
    let choices = Choices::new(streams, options.stop.as_ref(), options.logprobs);
    let prompt = parsed.prompt_tokens();
    let mut response = if options.stream {
        stream(choices, frames, prompt).await
    } else {
        whole(choices, &frames, prompt, options.logprobs.is_some(), hold).await
    };
    if let Some(value) = request_id {
        response.headers_mut().insert("x-request-id", value);
    }
    super::orca::add(&mut response, &state.engine, orca);
    response
}

/// Reads a request's body within the limits and parses it with `parse` (`chat` tells the
/// answer's shape), checks its model and the size of its answer, and takes the answer's share
/// of the answer budget when it is held whole (`responses`: a Responses API request, held
/// whole even when streamed and refused in that API's words). A refused request is recorded (it arrived) and answered.
pub(crate) async fn admit(
    state: &AppState,
    operation: Operation,
    request: Request,
    parse: impl FnOnce(&[u8]) -> Result<Parsed, ApiError>,
    responses: bool,
) -> Result<(Parsed, Option<AnswerHold>), Response> {
    let targets = match slo::targets(request.headers()) {
        Ok(targets) => targets,
        Err(error) => {
            // Counted apart by an SLO monitor (`reason="malformed"`), not against a class.
            let mut refused = state.engine.series(operation).start();
            refused.set_slo_targets(tokenmeter::request::SloTargets::malformed());
            refused.fail(ErrorClass::ClientError);
            return Err(api_error(&error));
        }
    };
    let read = read_body(
        request,
        state.max_body,
        state.body_timeout,
        &state.body_budget,
    );
    let (body, reservation) = match read.await {
        Ok(body) => body,
        Err(refusal) => {
            // Recorded too: the request arrived and was refused.
            let class = if refusal == BodyRefusal::Budget {
                state.metrics.http.closed(Closed::BodyBudget);
                ErrorClass::Overloaded
            } else {
                ErrorClass::ClientError
            };
            state.engine.series(operation).start().fail(class);
            let budget = state.body_budget.limit();
            return Err(refusal.response(state.max_body, state.body_timeout, budget));
        }
    };
    let parsed = parse(&body);
    drop((body, reservation));
    let chat = operation != Operation::TextCompletion;
    let as_held = |parsed: &Parsed| {
        let mut options = parsed.options.clone();
        options.stream &= !responses;
        Parsed {
            generate: parsed.generate.clone(),
            rest: parsed.rest.clone(),
            options,
        }
    };
    let parsed = match parsed.and_then(|mut parsed| {
        state.check_model(parsed.options.model.as_deref())?;
        if let Some(targets) = targets {
            parsed.generate = parsed.generate.slo_targets(targets);
            for generate in &mut parsed.rest {
                *generate = generate.clone().slo_targets(targets);
            }
        }
        let held = as_held(&parsed);
        if responses {
            budget::check_responses(&held, state.max_answer, state.model())?;
        } else {
            budget::check(&held, chat, state.max_answer, state.model())?;
        }
        Ok(parsed)
    }) {
        Ok(parsed) => parsed,
        Err(error) => {
            state
                .engine
                .series(operation)
                .start()
                .fail(ErrorClass::ClientError);
            return Err(api_error(&error));
        }
    };
    // A whole answer holds its worst case of the budget until its last byte is handed over.
    let hold = match budget::whole_answer(&as_held(&parsed), chat, state.model()) {
        Some(worst) => match state.answer_budget.hold(worst) {
            Some(hold) => Some(hold),
            None => {
                state.metrics.http.refused(Refused::AnswerBudget);
                state
                    .engine
                    .series(operation)
                    .start()
                    .fail(ErrorClass::Overloaded);
                return Err(budget::over_budget(worst, &state.answer_budget));
            }
        },
        None => None,
    };
    Ok((parsed, hold))
}

/// Submits the request's `n` choices, all or none (`Engine::submit_choices`): one engine
/// request per choice, as vLLM runs `n` child requests; the first carries the request's `n`
/// (published once per client request, as vLLM counts its parent request). A refused request
/// is recorded once, and no choice of it runs. A batched completion submits each prompt's
/// choices in turn (choice `i` of prompt `p` is the answer's choice `p × n + i`, as in vLLM); if
/// one prompt is refused, those of the prompts before it are dropped (recorded cancelled) and
/// the request gets the refusal. A request naming a model other than `base` runs on the LoRA
/// adapter of that name (published when the engine has `max_loras`).
pub(crate) fn submit(
    engine: &Engine,
    parsed: &Parsed,
    base: &str,
) -> Result<Vec<TokenStream>, SubmitError> {
    let n = parsed.options.n.max(1);
    let adapter = parsed.options.model.as_deref().filter(|m| *m != base);
    let mut streams = Vec::with_capacity(parsed.choices() as usize);
    for generate in parsed.prompts() {
        let mut request = generate.clone().choices(n);
        if let Some(model) = adapter {
            request = request.adapter(model);
        }
        streams.extend(engine.submit_choices(request, parsed.options.n)?);
    }
    Ok(streams)
}

/// A streaming answer. Waits for the first item of any choice without taking it, so a failure
/// before any token is a plain HTTP 500; then every choice streams as it produces, with its
/// `index` (as vLLM streams its child requests' outputs): no choice waits for another, so a
/// choice still queued behind other requests cannot hold its siblings' answers. The tokens are
/// taken, and counted, as [`SseBody`] hands them to hyper.
async fn stream(mut choices: Choices, frames: Frames, prompt: u32) -> Response {
    if let Err(event) = choices.first().await {
        return ended(event);
    }
    let body = Body::from_stream(SseBody::new(choices, frames, prompt));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A non-streaming answer: every token of every choice, written as JSON as it comes
/// ([`Answer`]), then the body with `usage`. A client that hangs up before [`WholeBody`] is
/// handed to hyper leaves the request cancelled. `hold`, the answer's share of the answer
/// budget, goes with the body (or is given back here if the answer fails).
async fn whole(
    mut choices: Choices,
    frames: &Frames,
    prompt: u32,
    logprobs: bool,
    hold: Option<AnswerHold>,
) -> Response {
    let mut answer = Answer::new(frames, choices.len(), logprobs);
    while let Some(event) = poll_fn(|cx| choices.poll_event(cx)).await {
        match event {
            Event::Piece(piece) => answer.push(piece),
            other => return ended(other),
        }
    }
    let completion = choices.completion_tokens();
    let metrics = frames
        .wants_metrics()
        .then(|| choices.server_metrics())
        .flatten();
    let parts = answer.into_parts(frames, prompt, completion, choices.cached_tokens(), metrics);
    let mut response = Response::new(Body::new(WholeBody::new(parts, choices).holding(hold)));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The answer when a choice failed before the answer started: 500, or 503 if the engine
/// stopped.
pub(crate) fn ended(event: Event) -> Response {
    match event {
        Event::Failed(message) => failed(&message),
        _ => stopped(),
    }
}

/// The answer to a request refused before the engine: vLLM's error shape.
pub(crate) fn api_error(error: &ApiError) -> Response {
    json_response(error.status(), &error.body())
}

/// The answer to a refused submission: 429 (queue full), 400 (past the context length, with
/// vLLM's message, or larger than the KV cache) or 503.
pub(crate) fn refused(error: &SubmitError) -> Response {
    refused_as(error, &error.to_string())
}

/// [`refused`] with `message` for the error's own (another API's words for the same refusal).
pub(crate) fn refused_as(error: &SubmitError, message: &str) -> Response {
    if let SubmitError::TooManyChoices { .. } | SubmitError::ChoicesTooLarge { .. } = error {
        return api_error(&ApiError::bad_request(Some("n"), message));
    }
    let status =
        StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let mut response = json_response(status, &error_body(status, message));
    if status == StatusCode::TOO_MANY_REQUESTS {
        let headers = response.headers_mut();
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

fn failed(message: &str) -> Response {
    let body = error_body(StatusCode::INTERNAL_SERVER_ERROR, message);
    json_response(StatusCode::INTERNAL_SERVER_ERROR, &body)
}

fn stopped() -> Response {
    let body = error_body(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped");
    json_response(StatusCode::SERVICE_UNAVAILABLE, &body)
}

pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
