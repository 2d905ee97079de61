//! One connection: hyper's HTTP/1 connection over a [`Watched`] socket, a watchdog that closes
//! it at its deadline or when it is evicted, and a quick 503 for a connection refused at the
//! cap.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::header::{ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokenmeter_listen::{Activity, InFlight, Slot, Watched};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::limits::ListenerLimits;
use super::render::Renders;
use super::stats::Counters;

/// Serves one connection until it ends, its deadline passes or it is evicted.
pub(crate) async fn serve(
    stream: TcpStream,
    slot: Slot,
    renders: Arc<Renders>,
    counters: Arc<Counters>,
    limits: ListenerLimits,
) {
    let _ = stream.set_nodelay(true);
    let activity = slot.activity().clone();
    let service = Scrape {
        renders,
        counters: counters.clone(),
        activity: activity.clone(),
    };
    let io = TokioIo::new(Watched::new(stream, activity.clone()));
    let conn = http1::Builder::new()
        .keep_alive(true)
        .serve_connection(io, service);
    let timeouts = limits.timeouts();
    tokio::select! {
        biased;
        // Ended: the client closed it, or an error.
        _ = conn => {}
        // Evicted (counted where it was chosen).
        () = activity.evicted() => {}
        why = activity.expired(&timeouts) => counters.closed(why.into()),
    }
    drop(slot);
}

/// The body of the answer to a connection refused at the cap.
const REFUSAL: &str = "the /metrics listener is at its connection cap and every connection is busy: retry shortly, or raise Builder::max_connections\n";

/// A quick 503 to a connection refused at the cap, within a second.
pub(crate) async fn refuse(mut stream: TcpStream) {
    // Write, close the write side, then read (and drop) what the client sends until it
    // closes: closing with its request unread would reset the connection and could lose the
    // answer.
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{REFUSAL}",
        REFUSAL.len()
    );
    let answer = async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 1024];
        while stream.read(&mut sink).await? > 0 {}
        io::Result::Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), answer).await;
}

/// The service behind one connection: `GET` (or `HEAD`) on any path is the exposition.
struct Scrape {
    renders: Arc<Renders>,
    counters: Arc<Counters>,
    activity: Arc<Activity>,
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<Exposition>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for Scrape {
    type Response = Response<Exposition>;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let (in_flight, _) = self.activity.begin(false);
        self.counters.received();
        let renders = self.renders.clone();
        let counters = self.counters.clone();
        let arrived = Instant::now();
        Box::pin(async move {
            // hyper sends no body to a HEAD request, only its length.
            let method = request.method();
            let response = if method == Method::GET || method == Method::HEAD {
                let body = renders.render_since(arrived).await;
                Response::builder()
                    .header(CONTENT_TYPE, crate::handle::CONTENT_TYPE)
                    .body(Exposition::new(body, in_flight))
            } else {
                Response::builder()
                    .status(StatusCode::METHOD_NOT_ALLOWED)
                    .header(ALLOW, "GET, HEAD")
                    .body(Exposition::new(
                        Bytes::from_static(b"only GET and HEAD are served here\n"),
                        in_flight,
                    ))
            };
            counters.answered();
            Ok(response.unwrap_or_else(|_| Response::new(Exposition::empty())))
        })
    }
}

/// A response body of one piece that keeps its request in flight until hyper drops it.
pub(crate) struct Exposition {
    data: Option<Bytes>,
    _in_flight: Option<InFlight>,
}

impl Exposition {
    fn new(data: Bytes, in_flight: InFlight) -> Self {
        Self {
            data: (!data.is_empty()).then_some(data),
            _in_flight: Some(in_flight),
        }
    }

    fn empty() -> Self {
        Self {
            data: None,
            _in_flight: None,
        }
    }
}

impl Body for Exposition {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.data.take().map(|d| Ok(Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}
