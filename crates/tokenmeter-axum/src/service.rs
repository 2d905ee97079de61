//! [`MeterService`]: starts a request per call and meters the response.

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Body;
use tower_service::Service;

use crate::choose::ChooseSeries;
use crate::future::ResponseFuture;
use crate::orca::Orca;

/// The service [`MeterLayer`](crate::MeterLayer) wraps around an HTTP service: per call it
/// picks the series, starts a [`tokenmeter::Request`] (the arrival), calls the inner service,
/// and meters the response's body ([`MeteredBody`](crate::MeteredBody)).
///
/// Cheap to clone (the inner service's clone and one reference count).
///
/// # Examples
///
/// Any tower HTTP service whose response body yields `Bytes`:
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::convert::Infallible;
///
/// use bytes::Bytes;
/// use http_body_util::{BodyExt, Full};
/// use tokenmeter::{Labels, Meter, Outcome, sink::InMemorySink};
/// use tokenmeter_axum::MeterLayer;
/// use tower::{Layer, ServiceExt, service_fn};
///
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().sink(memory.clone()).build();
/// let series = meter.series(&Labels::server("chat"));
/// let answer = r#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;
/// let service = MeterLayer::new(move |_| series.clone()).layer(service_fn(|_: http::Request<()>| async {
///     let mut response = http::Response::new(Full::new(Bytes::from_static(answer.as_bytes())));
///     response.headers_mut().insert("content-type", "application/json".parse().unwrap());
///     Ok::<_, Infallible>(response)
/// }));
///
/// let response = service.oneshot(http::Request::new(())).await?;
/// response.into_body().collect().await?;
/// let record = &memory.records()[0];
/// assert_eq!((record.outcome, record.output_tokens, record.input_tokens), (Outcome::Success, 1, Some(3)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct MeterService<S, C> {
    inner: S,
    choose: Arc<C>,
    limit: usize,
    slo_headers: bool,
    orca: Option<Orca>,
    metrics: bool,
}

impl<S, C> MeterService<S, C> {
    pub(crate) fn new(
        inner: S,
        choose: Arc<C>,
        limit: usize,
        orca: Option<Orca>,
        metrics: bool,
    ) -> Self {
        Self {
            inner,
            choose,
            limit,
            slo_headers: false,
            orca,
            metrics,
        }
    }

    pub(crate) fn slo_headers(mut self, on: bool) -> Self {
        self.slo_headers = on;
        self
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, C, ReqBody, ResBody> Service<http::Request<ReqBody>> for MeterService<S, C>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    C: ChooseSeries,
    ResBody: Body<Data = Bytes>,
{
    type Response = http::Response<crate::MeteredBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let (parts, body) = request.into_parts();
        let mut metered = self.choose.series(&parts).start();
        if self.slo_headers {
            metered.set_slo_targets(crate::slo_headers::slo_targets(&parts));
        }
        let head = parts.method == http::Method::HEAD;
        let orca = self.orca.as_ref().and_then(|orca| {
            let format = orca.format(&parts.headers)?;
            Some((orca.clone(), format))
        });
        let future = self.inner.call(http::Request::from_parts(parts, body));
        ResponseFuture::new(future, metered, self.limit, head)
            .orca(orca)
            .per_request_metrics(self.metrics)
    }
}

impl<S: Clone, C> Clone for MeterService<S, C> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            choose: Arc::clone(&self.choose),
            limit: self.limit,
            slo_headers: self.slo_headers,
            orca: self.orca.clone(),
            metrics: self.metrics,
        }
    }
}

impl<S: std::fmt::Debug, C> std::fmt::Debug for MeterService<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeterService")
            .field("inner", &self.inner)
            .field("buffer_limit", &self.limit)
            .finish_non_exhaustive()
    }
}
