//! [`model_from_body`]: the `model` (and `user`) of an OpenAI-compatible JSON request, for
//! the labels.
//!
//! An OpenAI-compatible request names its model in its JSON body, which a layer that chooses
//! the series from the request's head cannot see. This axum middleware reads the body first
//! (up to a limit), puts its `model` in the request's extensions as a [`RequestModel`] (and
//! its `user` as a [`RequestUser`]), and hands the handler the same bytes; [`request_model`]
//! then reads it in [`MeterLayer::labels`](crate::MeterLayer::labels), and
//! [`MeterLayer::tenants`](crate::MeterLayer::tenants) reads the user when asked to.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt as _;
use http::request::Parts;
use http_body::Frame;
use http_body_util::{BodyExt as _, BodyStream, StreamBody};

use tokenmeter_openai::request_body;

use crate::body::{Essence, essence};

/// The `model` field of a request's JSON body, as [`model_from_body`] found it. In the
/// request's extensions; read it with [`request_model`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestModel(pub String);

/// The `user` field of a request's JSON body (the end user's id), as [`model_from_body`] found
/// it. In the request's extensions; read it with [`request_user`]. It labels a series only
/// when [`TenantLabels::body_user`](crate::TenantLabels::body_user) asks for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestUser(pub String);

/// The `user` [`model_from_body`] read from the request's body, or `""` (see
/// [`request_model`] for when).
///
/// # Examples
///
/// ```
/// use tokenmeter_axum::{RequestUser, request_user};
///
/// let (mut parts, ()) = http::Request::post("/").body(()).unwrap().into_parts();
/// assert_eq!(request_user(&parts), "");
/// parts.extensions.insert(RequestUser("user-42".into()));
/// assert_eq!(request_user(&parts), "user-42");
/// ```
pub fn request_user(parts: &Parts) -> &str {
    parts
        .extensions
        .get::<RequestUser>()
        .map_or("", |user| user.0.as_str())
}

/// How much of a request body [`model_from_body`] reads to find the model: 4 MiB, about a
/// million tokens of prompt. A longer body passes unread, without a model.
pub const MODEL_BODY_LIMIT: usize = 4 << 20;

/// The model [`model_from_body`] read from the request's body, or `""` (not known) when it
/// did not run, the body was not JSON, had no string `model`, or was longer than its limit.
///
/// The value is the client's text: [`tokenmeter::Labels`] cuts and cleans it, and the
/// meter's series cap folds an unbounded number of names into `_OTHER`.
///
/// # Examples
///
/// ```
/// use tokenmeter_axum::{RequestModel, request_model};
///
/// let (mut parts, ()) = http::Request::post("/").body(()).unwrap().into_parts();
/// assert_eq!(request_model(&parts), "");
/// parts.extensions.insert(RequestModel("llama-3-8b".into()));
/// assert_eq!(request_model(&parts), "llama-3-8b");
/// ```
pub fn request_model(parts: &Parts) -> &str {
    parts
        .extensions
        .get::<RequestModel>()
        .map_or("", |model| model.0.as_str())
}

/// axum middleware that reads the `model` of a JSON request body into a [`RequestModel`]
/// extension, so that [`MeterLayer::labels`](crate::MeterLayer::labels) can label the series by
/// it, and its `user` into a [`RequestUser`] in the same pass (for
/// [`MeterLayer::tenants`](crate::MeterLayer::tenants)). Reads at most [`MODEL_BODY_LIMIT`] bytes; [`model_from_body_limited`] takes another.
///
/// Add it after the [`MeterLayer`](crate::MeterLayer) (axum runs the last layer first). The
/// handler gets the same body: the same bytes, or, for a body that was too long, failed or
/// had trailers, the frames read so far and then the rest, unchanged. Bodies that are not
/// `application/json` (or `+json`) are not read. The request's arrival is then the time its
/// body was read, as in vLLM.
///
/// # Examples
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use axum::{Router, body::Body, middleware, routing::post};
/// use http_body_util::BodyExt;
/// use tokenmeter::{Labels, Meter, sink::InMemorySink};
/// use tokenmeter_axum::{MeterLayer, model_from_body, request_model};
/// use tower::ServiceExt;
///
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().sink(memory.clone()).build();
/// let app = Router::new()
///     .route("/v1/chat/completions", post(|body: String| async move { body }))
///     .layer(MeterLayer::labels(meter, |parts| {
///         Labels::server("chat").request_model(request_model(parts))
///     }))
///     .layer(middleware::from_fn(model_from_body));
///
/// let body = r#"{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}]}"#;
/// let request = http::Request::post("/v1/chat/completions")
///     .header("content-type", "application/json")
///     .body(Body::from(body))?;
/// let response = app.oneshot(request).await?;
/// let echoed = response.into_body().collect().await?.to_bytes();
/// assert_eq!(echoed, body.as_bytes()); // the handler read the same body
/// assert_eq!(memory.records()[0].series.labels().request_model_name(), "llama-3-8b");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub async fn model_from_body(request: Request, next: Next) -> Response {
    next.run(peek(request, MODEL_BODY_LIMIT).await).await
}

/// [`model_from_body`] reading at most `limit` bytes, for
/// `axum::middleware::from_fn_with_state(limit, model_from_body_limited)`.
///
/// # Examples
///
/// ```
/// use axum::{Router, middleware, routing::post};
/// use tokenmeter_axum::model_from_body_limited;
///
/// let app: Router = Router::new()
///     .route("/v1/chat/completions", post(|| async { "ok" }))
///     .layer(middleware::from_fn_with_state(64 * 1024, model_from_body_limited));
/// ```
pub async fn model_from_body_limited(
    State(limit): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    next.run(peek(request, limit).await).await
}

/// Reads the body of a JSON request up to `limit` bytes, records its model, and puts back a
/// body with the same frames.
async fn peek(request: Request, limit: usize) -> Request {
    let (mut parts, mut body) = request.into_parts();
    if !matches!(essence(&parts.headers), Essence::Json) {
        return Request::from_parts(parts, body);
    }
    let mut frames: Vec<Result<Frame<Bytes>, axum::Error>> = Vec::new();
    let mut held = 0usize;
    let whole = loop {
        match body.frame().await {
            None => break true,
            Some(Ok(frame)) => {
                let data = frame.data_ref().map_or(0, Bytes::len);
                frames.push(Ok(frame));
                held = held.saturating_add(data);
                if held > limit {
                    break false;
                }
            }
            Some(Err(error)) => {
                frames.push(Err(error));
                break false;
            }
        }
    };
    let only_data = frames
        .iter()
        .all(|frame| frame.as_ref().is_ok_and(Frame::is_data));
    if whole && only_data {
        let bytes = join(frames);
        let fields = request_body::fields(&bytes);
        if let Some(model) = fields.model {
            parts.extensions.insert(RequestModel(model.into_owned()));
        }
        if let Some(user) = fields.user {
            parts.extensions.insert(RequestUser(user.into_owned()));
        }
        return Request::from_parts(parts, Body::from(bytes));
    }
    // Too long, failed or with trailers: the frames read so far, then whatever is left.
    let read = futures_util::stream::iter(frames);
    let body = if whole {
        Body::new(StreamBody::new(read))
    } else {
        Body::new(StreamBody::new(read.chain(BodyStream::new(body))))
    };
    Request::from_parts(parts, body)
}

/// The data of `frames`, all data frames, in one buffer (no copy for a single frame).
fn join(frames: Vec<Result<Frame<Bytes>, axum::Error>>) -> Bytes {
    let mut data = frames
        .into_iter()
        .filter_map(|frame| frame.ok()?.into_data().ok());
    let Some(first) = data.next() else {
        return Bytes::new();
    };
    let Some(second) = data.next() else {
        return first;
    };
    let mut joined = Vec::with_capacity(first.len() + second.len());
    joined.extend_from_slice(&first);
    joined.extend_from_slice(&second);
    data.for_each(|more| joined.extend_from_slice(&more));
    Bytes::from(joined)
}
