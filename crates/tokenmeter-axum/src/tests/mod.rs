//! Tests that drive the service with `tower::ServiceExt::oneshot`, a scripted body and a manual
//! clock, and check the exact record.

mod bodiless;
mod lifecycle;
mod model;
mod orca;
mod request_metrics;
mod responses;
mod router;
mod slo_headers;
mod statuses;
mod streams;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use tokenmeter::sink::InMemorySink;
use tokenmeter::{Labels, ManualClock, Meter, RequestRecord};
use tower::ServiceExt;
use tower_layer::Layer;

use crate::{MeterLayer, MeteredBody};

pub(super) const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A meter on a manual clock with an in-memory sink.
pub(super) struct Harness {
    pub(super) time: ManualClock,
    pub(super) memory: InMemorySink,
    pub(super) meter: Meter,
}

impl Harness {
    pub(super) fn new() -> Self {
        let time = ManualClock::new();
        let (meter, memory) = Meter::manual(&time);
        Self {
            time,
            memory,
            meter,
        }
    }

    /// The layer, on the series `chat` / model `m`.
    pub(super) fn layer(
        &self,
    ) -> MeterLayer<impl Fn(&http::request::Parts) -> tokenmeter::Series + use<>> {
        let series = self
            .meter
            .series(&Labels::server("chat").request_model("m"));
        MeterLayer::new(move |_| series.clone())
    }

    /// A body that plays `frames`, each after moving the clock by its delay.
    pub(super) fn script(
        &self,
        frames: Vec<(Duration, Result<&'static [u8], io::ErrorKind>)>,
    ) -> Scripted {
        Scripted {
            time: self.time.clone(),
            frames: frames.into(),
            known_end: false,
        }
    }

    /// Calls the layered service once with a response of `status`, `content_type` and `body`.
    pub(super) async fn respond<B>(
        &self,
        layer: MeterLayer<impl crate::ChooseSeries>,
        status: StatusCode,
        content_type: &'static str,
        body: B,
    ) -> MeteredBody<B>
    where
        B: Body<Data = Bytes>,
    {
        let mut response = Response::new(body);
        *response.status_mut() = status;
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, content_type.parse().unwrap());
        let mut once = Some(response);
        let service = layer.layer(tower::service_fn(move |_: http::Request<()>| {
            let response = once.take().expect("called once");
            async move { Ok::<_, Infallible>(response) }
        }));
        let response = service.oneshot(http::Request::new(())).await.unwrap();
        assert_eq!(response.status(), status);
        response.into_body()
    }

    /// The one record.
    pub(super) fn record(&self) -> RequestRecord {
        let records = self.memory.records();
        assert_eq!(records.len(), 1, "exactly one record: {records:#?}");
        records.into_iter().next().unwrap()
    }
}

/// Reads every frame's data; an error ends the reading.
pub(super) async fn drain<B>(body: &mut B) -> (Vec<u8>, Option<B::Error>)
where
    B: Body<Data = Bytes> + Unpin,
{
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => out.extend_from_slice(frame.data_ref().unwrap()),
            Err(error) => return (out, Some(error)),
        }
    }
    (out, None)
}

/// See [`Harness::script`].
pub(super) struct Scripted {
    time: ManualClock,
    frames: VecDeque<(Duration, Result<&'static [u8], io::ErrorKind>)>,
    known_end: bool,
}

impl Scripted {
    /// Says it has ended as soon as its last frame is out (as `Full` does).
    pub(super) fn known_end(mut self) -> Self {
        self.known_end = true;
        self
    }
}

impl Body for Scripted {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        Poll::Ready(self.frames.pop_front().map(|(delay, item)| {
            self.time.advance(delay);
            item.map(|data| Frame::data(Bytes::from_static(data)))
                .map_err(io::Error::from)
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.known_end && self.frames.is_empty()
    }
}

pub(super) const ROLE: &[u8] =
    b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
pub(super) const A: &[u8] =
    b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n";
pub(super) const B: &[u8] =
    b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\n";
pub(super) const STOP: &[u8] =
    b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"c\"},\"finish_reason\":\"stop\"}]}\n\n";
pub(super) const DONE: &[u8] = b"data: [DONE]\n\n";
pub(super) const SSE: &str = "text/event-stream";
