//! [`ResponseFuture`]: the inner service's future, whose response gets a [`MeteredBody`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::Response;
use http_body::Body;
use pin_project_lite::pin_project;
use tokenmeter::orca::OrcaFormat;
use tokenmeter::{ErrorClass, Request};

use crate::body::{Essence, MeteredBody};
use crate::orca::Orca;
use crate::unwind::ending_on_panic;

pin_project! {
    /// The future of [`MeterService`](crate::MeterService): the inner service's response with
    /// its body wrapped in a [`MeteredBody`].
    ///
    /// If the inner service fails, the request ends as a `server_error`; if this future is
    /// dropped first (the client went away before the response), as `cancelled`; if a panic
    /// unwinds through it, as an error with
    /// [`RequestRecord::panicked`](tokenmeter::RequestRecord::panicked) set.
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        request: Option<Request>,
        limit: usize,
        // A HEAD request: the response's body is never sent.
        head: bool,
        // The ORCA load report to add, and its format.
        orca: Option<(Orca, OrcaFormat)>,
        // Add the layer's per-request `metrics` to a stream's final usage chunk.
        metrics: bool,
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(inner: F, request: Request, limit: usize, head: bool) -> Self {
        Self {
            inner,
            request: Some(request),
            limit,
            head,
            orca: None,
            metrics: false,
        }
    }

    /// Adds the layer's per-request `metrics` to a stream's final usage chunk.
    pub(crate) fn per_request_metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// Adds `orca`'s load report to a successful response.
    pub(crate) fn orca(mut self, orca: Option<(Orca, OrcaFormat)>) -> Self {
        self.orca = orca;
        self
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Body<Data = Bytes>,
{
    type Output = Result<Response<MeteredBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let inner = this.inner;
        let result = ready!(ending_on_panic(this.request, || inner.poll(cx)));
        let request = this.request.take();
        Poll::Ready(match result {
            Ok(response) => {
                let (mut parts, body) = response.into_parts();
                if let Some((orca, format)) = this.orca.take() {
                    orca.add(format, parts.status, &mut parts.headers);
                }
                let sent = !*this.head && !bodiless(parts.status);
                let metrics = *this.metrics
                    && matches!(crate::body::essence(&parts.headers), Essence::EventStream);
                if metrics {
                    // The stream grows by the object: its length is no longer the inner one's.
                    parts.headers.remove(http::header::CONTENT_LENGTH);
                }
                let body = MeteredBody::new(
                    body,
                    parts.status,
                    &parts.headers,
                    request.map(|request| (request, sent)),
                    *this.limit,
                    metrics,
                );
                Ok(Response::from_parts(parts, body))
            }
            Err(error) => {
                if let Some(mut request) = request {
                    request.fail(ErrorClass::ServerError);
                }
                Err(error)
            }
        })
    }
}

/// Statuses whose responses never carry a body (RFC 9110 §6.4.1): servers do not read it.
fn bodiless(status: http::StatusCode) -> bool {
    status.is_informational()
        || status == http::StatusCode::NO_CONTENT
        || status == http::StatusCode::NOT_MODIFIED
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}
