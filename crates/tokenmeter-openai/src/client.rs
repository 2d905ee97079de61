//! The `reqwest` helper (feature `reqwest`): a streaming completion's response, metered.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use tokenmeter::{Clock, ErrorClass, Request};

use crate::clock::EventClock;
use crate::error::{StreamError, TransportError, describe_error};
use crate::meter::MeteredChunks;
use crate::sse::SseChunks;

/// A `reqwest` response body as a stream of bytes (boxed once per response, so that the
/// metered stream has a name you can store).
pub struct ResponseBody(Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>);

impl ResponseBody {
    /// The body of `response`.
    pub fn new(response: reqwest::Response) -> Self {
        Self(Box::pin(response.bytes_stream()))
    }
}

impl Stream for ResponseBody {
    type Item = reqwest::Result<Bytes>;

    #[inline]
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.as_mut().poll_next(cx)
    }
}

impl fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResponseBody(..)")
    }
}

/// A metered `reqwest` response: see [`MeteredChunks`].
pub type MeteredResponse<C = Clock> = MeteredChunks<ResponseBody, C>;

impl TransportError for reqwest::Error {
    fn class(&self) -> ErrorClass {
        if self.is_timeout() {
            ErrorClass::Timeout
        } else {
            ErrorClass::Transport
        }
    }

    /// The error and its causes on one line, without the URL (it may carry a key).
    fn describe(self) -> String {
        describe_error(&self.without_url())
    }
}

/// Meters a streaming completion's `response` as `request`, which was started when the request
/// was sent: TTFT from the first content, reasoning or tool-call delta, tokens from `usage`,
/// the finish reason, and the outcome (a non-2xx status is an error classified from the status
/// and the body; dropping the stream before its end is `cancelled`). Chunks are stamped with the
/// request's own clock.
///
/// # Examples
///
/// ```no_run
/// use futures_util::StreamExt;
/// use tokenmeter::{Labels, Meter, sink::InMemorySink};
///
/// async fn chat(http: &reqwest::Client) -> Result<(), Box<dyn std::error::Error>> {
///     let memory = InMemorySink::new();
///     let meter = Meter::builder().sink(memory.clone()).build();
///     let series = meter.series(&Labels::client("chat").request_model("my-model"));
///
///     let body = serde_json::json!({
///         "model": "my-model",
///         "messages": [{"role": "user", "content": "Hello"}],
///         "stream": true,
///         "stream_options": {"include_usage": true},
///     });
///     let request = series.start(); // the send
///     let response = http
///         .post("http://127.0.0.1:8000/v1/chat/completions")
///         .body(body.to_string())
///         .send()
///         .await?;
///     let mut chunks = tokenmeter_openai::meter_response(response, request);
///     while let Some(chunk) = chunks.next().await {
///         print!("{}", chunk?.text());
///     }
///     println!("\n{}", memory.report());
///     Ok(())
/// }
/// ```
pub fn meter_response(response: reqwest::Response, request: Request) -> MeteredResponse {
    let clock = request.series().clock().clone();
    meter_response_with(response, request, clock)
}

/// [`meter_response`] with chunks stamped by `clock` (see [`EventClock`]).
pub fn meter_response_with<C>(
    response: reqwest::Response,
    request: Request,
    clock: C,
) -> MeteredResponse<C>
where
    C: EventClock + Clone,
{
    let status = response.status().as_u16();
    SseChunks::with_status(status, ResponseBody::new(response), clock).meter(request)
}

/// Sends `builder` and meters the response as `request` (start it just before the call). A
/// request that fails before any response (connection refused, reset, the client's timeout)
/// ends `request` with `transport` or `timeout` and is returned as
/// [`StreamError::Transport`]; everything after is [`meter_response`]. Dropping the future
/// before the response (a timeout of your own around it) ends `request` as `cancelled`: to
/// record such a timeout as `timeout`, send yourself and call [`meter_response`].
///
/// # Examples
///
/// ```no_run
/// use futures_util::StreamExt;
/// use tokenmeter::{Labels, Meter};
///
/// async fn chat(http: &reqwest::Client, meter: &Meter) -> Result<u64, tokenmeter_openai::StreamError> {
///     let series = meter.series(&Labels::client("chat"));
///     let post = http
///         .post("http://127.0.0.1:8000/v1/chat/completions")
///         .header("content-type", "application/json")
///         .body(r#"{"model":"m","messages":[{"role":"user","content":"Hi"}],"stream":true}"#);
///     let mut chunks = tokenmeter_openai::send(post, series.start()).await?;
///     while let Some(chunk) = chunks.next().await {
///         chunk?;
///     }
///     Ok(chunks.request().output_tokens())
/// }
/// ```
pub async fn send(
    builder: reqwest::RequestBuilder,
    request: Request,
) -> Result<MeteredResponse, StreamError> {
    sent(builder.send().await, request)
}

/// The response of a send metered as `request`, or the send's failure ending it.
pub(crate) fn sent(
    response: reqwest::Result<reqwest::Response>,
    mut request: Request,
) -> Result<MeteredResponse, StreamError> {
    match response {
        Ok(response) => Ok(meter_response(response, request)),
        Err(error) => {
            let class = error.class();
            request.fail(class);
            Err(StreamError::Transport {
                class,
                message: format!("sending the request failed: {}", error.describe()),
            })
        }
    }
}
