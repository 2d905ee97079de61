//! [`MeteredBody`]: the response body, passed through unchanged while its frames are read.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::{HeaderMap, StatusCode, header};
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokenmeter::{ErrorClass, Outcome, Request};

use crate::openai::{apply_event, apply_json};
use crate::request_metrics;
use crate::sse::SseSplitter;
use crate::unwind::ending_on_panic;

pin_project! {
    /// A response body metered as it streams: every frame passes through unchanged (same
    /// `Bytes`, same order, same errors, same size hint), and the request ends exactly once.
    ///
    /// - `text/event-stream`: each SSE data event is read as an OpenAI-compatible chunk
    ///   (tokens, finish reason, `usage`; an error object or `event: error` ends the request
    ///   with its class; `[DONE]` ends it with success). A Responses API stream (typed
    ///   `event: response.…` lines, no `[DONE]`) is read the same way: its deltas are the
    ///   tokens, `response.completed` or `response.incomplete` ends the request with success
    ///   (and its `usage`), `response.failed` or an `error` event with the error's class.
    /// - `application/json` (or `+json`): the body is kept up to the layer's buffer limit and
    ///   its `usage` read at the end.
    /// - Anything else: success at the end.
    ///
    /// The end of the body is a success unless an error was seen (also for a stream that ends
    /// before `[DONE]` or a Responses stream's last event: the server ended it cleanly, and
    /// the meter does not invent a failure the client may not see); an error from the inner body
    /// is a `transport` error; dropping the body before its end (the client went away) is
    /// `cancelled`.
    ///
    /// Built by [`MeterService`](crate::MeterService).
    ///
    /// # Examples
    ///
    /// A client that goes away after the first token:
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use std::convert::Infallible;
    ///
    /// use bytes::Bytes;
    /// use futures_util::stream;
    /// use http_body::Frame;
    /// use http_body_util::{BodyExt, StreamBody};
    /// use tokenmeter::{Labels, Meter, Outcome, sink::InMemorySink};
    /// use tokenmeter_axum::MeterLayer;
    /// use tower::{Layer, ServiceExt, service_fn};
    ///
    /// let memory = InMemorySink::new();
    /// let meter = Meter::builder().sink(memory.clone()).build();
    /// let series = meter.series(&Labels::server("chat"));
    /// let service = MeterLayer::new(move |_| series.clone()).layer(service_fn(|_: http::Request<()>| async {
    ///     let events = ["data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", "data: [DONE]\n\n"];
    ///     let frames = stream::iter(events.map(|e| Ok::<_, Infallible>(Frame::data(Bytes::from_static(e.as_bytes())))));
    ///     let mut response = http::Response::new(StreamBody::new(frames));
    ///     response.headers_mut().insert("content-type", "text/event-stream".parse().unwrap());
    ///     Ok::<_, Infallible>(response)
    /// }));
    ///
    /// let mut body = service.oneshot(http::Request::new(())).await?.into_body();
    /// body.frame().await.unwrap()?; // the first token passes
    /// drop(body); // the client went away
    /// let record = &memory.records()[0];
    /// assert_eq!((record.outcome, record.items), (Outcome::Cancelled, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub struct MeteredBody<B> {
        #[pin]
        inner: B,
        metering: Option<Metering>,
    }
}

/// The request still being measured, and how the body is read.
struct Metering {
    request: Request,
    reader: Reader,
    /// Add the layer's per-request `metrics` to the final usage chunk (SSE only).
    metrics: bool,
}

enum Reader {
    Sse(SseSplitter),
    Json(JsonBody),
    Other,
}

/// A JSON body kept for its `usage`: the first frame by reference, more frames copied.
struct JsonBody {
    first: Option<Bytes>,
    joined: Vec<u8>,
    too_long: bool,
    limit: usize,
}

impl<B: Body<Data = Bytes>> MeteredBody<B> {
    /// Wraps `inner`, the body of a response with `status` and `headers`, for `request` and
    /// whether the body goes on the wire at all (not for a HEAD request or a 204/304).
    /// A status of 400 or more ends the request at once with its class; a body that is never
    /// sent ends it at once with success, since nobody will read it.
    pub(crate) fn new(
        inner: B,
        status: StatusCode,
        headers: &HeaderMap,
        request: Option<(Request, bool)>,
        limit: usize,
        metrics: bool,
    ) -> Self {
        let mut body = Self {
            metering: None,
            inner,
        };
        let Some((mut request, sent)) = request else {
            return body;
        };
        if let Some(class) = ErrorClass::from_http_status(status.as_u16()) {
            request.fail(class);
            return body;
        }
        if !sent {
            request.end(Outcome::Success);
            return body;
        }
        let reader = match essence(headers) {
            Essence::EventStream => Reader::Sse(SseSplitter::new(limit)),
            Essence::Json => Reader::Json(JsonBody {
                first: None,
                joined: Vec::new(),
                too_long: false,
                limit,
            }),
            Essence::Other => Reader::Other,
        };
        let metrics = metrics && matches!(reader, Reader::Sse(_));
        body.metering = Some(Metering {
            request,
            reader,
            metrics,
        });
        if body.inner.is_end_stream() {
            body.end();
        }
        body
    }

    /// Ends the request at the end of the body.
    fn end(&mut self) {
        if let Some(metering) = self.metering.take() {
            metering.end();
        }
    }
}

impl Metering {
    /// Reads one data frame: whether metering goes on (`false` once the request has ended),
    /// and the frame to send instead (the final usage chunk with the layer's `metrics`).
    fn read(&mut self, data: &Bytes) -> (bool, Option<Bytes>) {
        let request = &mut self.request;
        let metrics = self.metrics;
        match &mut self.reader {
            Reader::Sse(splitter) => {
                let mut ended = None;
                let mut slot = None;
                splitter.feed(data, &mut |event| {
                    if ended.is_none() {
                        let (outcome, usage_only) = apply_event(request, event);
                        ended = outcome;
                        if metrics && usage_only && slot.is_none() {
                            slot = request_metrics::slot(data, event.data);
                        }
                    }
                });
                let replaced = slot.and_then(|at| request_metrics::insert(data, at, request));
                if replaced.is_some() {
                    self.metrics = false;
                }
                match ended {
                    Some(outcome) => {
                        request.end(outcome);
                        (false, replaced)
                    }
                    None => (true, replaced),
                }
            }
            Reader::Json(json) => {
                json.push(data);
                (true, None)
            }
            Reader::Other => (true, None),
        }
    }

    /// The body ended: success, or what the JSON body says.
    fn end(mut self) {
        let outcome = match &self.reader {
            Reader::Json(json) => match json.whole() {
                Some(bytes) => apply_json(&mut self.request, bytes),
                None => Outcome::Success,
            },
            Reader::Sse(_) | Reader::Other => Outcome::Success,
        };
        self.request.end(outcome);
    }
}

impl JsonBody {
    fn push(&mut self, data: &Bytes) {
        if self.too_long {
            return;
        }
        let held = self.first.as_ref().map_or(0, Bytes::len) + self.joined.len();
        if held + data.len() > self.limit {
            self.too_long = true;
            self.first = None;
            self.joined = Vec::new();
            return;
        }
        match self.first.take() {
            None if self.joined.is_empty() => self.first = Some(data.clone()),
            first => {
                if let Some(first) = first {
                    self.joined.extend_from_slice(&first);
                }
                self.joined.extend_from_slice(data);
            }
        }
    }

    /// The whole body, unless it was longer than the limit.
    fn whole(&self) -> Option<&[u8]> {
        if self.too_long {
            return None;
        }
        Some(self.first.as_deref().unwrap_or(&self.joined))
    }
}

/// What a body is, by its `content-type`.
pub(crate) enum Essence {
    EventStream,
    Json,
    Other,
}

/// The media type of `content-type`, without parameters.
pub(crate) fn essence(headers: &HeaderMap) -> Essence {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Essence::Other;
    };
    let Ok(value) = value.to_str() else {
        return Essence::Other;
    };
    let media = value.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case("text/event-stream") {
        Essence::EventStream
    } else if media.eq_ignore_ascii_case("application/json")
        || media
            .rsplit_once('+')
            .is_some_and(|(_, suffix)| suffix.eq_ignore_ascii_case("json"))
    {
        Essence::Json
    } else {
        Essence::Other
    }
}

impl<B: Body<Data = Bytes>> Body for MeteredBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let mut this = self.project();
        let inner = this.inner.as_mut();
        let polled = ready!(ending_on_panic(this.metering, || inner.poll_frame(cx)));
        let Some(metering) = this.metering.as_mut() else {
            return Poll::Ready(polled);
        };
        let mut replaced = None;
        let going = match &polled {
            Some(Ok(frame)) => match frame.data_ref() {
                Some(data) => {
                    let (going, frame) = metering.read(data);
                    replaced = frame;
                    going
                }
                None => true,
            },
            Some(Err(_)) => {
                metering.request.end(Outcome::Error(ErrorClass::Transport));
                false
            }
            None => {
                if let Some(metering) = this.metering.take() {
                    metering.end();
                }
                return Poll::Ready(polled);
            }
        };
        if !going {
            *this.metering = None;
        } else if this.inner.is_end_stream() {
            // The server may not poll again once the body says it has ended.
            if let Some(metering) = this.metering.take() {
                metering.end();
            }
        }
        match replaced {
            Some(data) => Poll::Ready(Some(Ok(Frame::data(data)))),
            None => Poll::Ready(polled),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        if self.metering.as_ref().is_some_and(|m| m.metrics) {
            // The final usage chunk may still grow by the layer's `metrics`.
            return SizeHint::default();
        }
        self.inner.size_hint()
    }
}

impl<B> fmt::Debug for MeteredBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let request = self.metering.as_ref().map(|m| &m.request);
        f.debug_struct("MeteredBody")
            .field("request", &request)
            .finish_non_exhaustive()
    }
}
