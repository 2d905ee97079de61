//! [`ResponseFuture`]: the inner service's future, whose response gets a [`MeteredBody`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::Response;
use http_body::Body;
use pin_project_lite::pin_project;
use tokenmeter::{ErrorClass, Request};

use crate::body::MeteredBody;
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
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(inner: F, request: Request, limit: usize) -> Self {
        Self {
            inner,
            request: Some(request),
            limit,
        }
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
                let (parts, body) = response.into_parts();
                let body =
                    MeteredBody::new(body, parts.status, &parts.headers, request, *this.limit);
                Ok(Response::from_parts(parts, body))
            }
            Err(error) => {
                if let Some(request) = request {
                    request.fail(ErrorClass::ServerError);
                }
                Err(error)
            }
        })
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}
