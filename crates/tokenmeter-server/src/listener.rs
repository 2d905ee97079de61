//! The accept loop: each connection served by hyper's HTTP/1 connection under the server's
//! [`Limits`], every answer counted, and a graceful shutdown.
//!
//! `axum::serve` has no timeouts and no connection limit, so this loop replaces it. Each
//! connection has a watchdog that closes it when its deadline passes: `--keep-alive-timeout`
//! after its last response (or its accept) while no byte arrives, `--header-timeout` after the
//! first byte of a request whose headers are not complete. (hyper's own `header_read_timeout`
//! starts when the connection goes idle, so it would also cut keep-alive connections at the
//! header timeout; the watchdog keeps the two apart.) A request body has `--body-timeout` (the
//! completion handlers read it, see `body.rs`). At `--max-connections`, a new connection
//! makes the longest-idle one close (one whose response ended and that waits on keep-alive; a
//! connection that has not yet sent its first request whole is not idle), so idle clients never
//! lock out new ones; when no connection is idle, the new one is answered by `overflow.rs`:
//! `GET /metrics` and `GET /health` as usual, anything else a 503, never a silent close. The
//! deadlines and the cap are `tokenmeter-listen`'s (shared with the Prometheus exporter's
//! `/metrics` listener), under its `Evictable::KeptAlive` rule.
//!
//! Shutdown: stop accepting; close at once every connection with nothing to answer yet (idle,
//! headers or body still arriving); let the others end their response within
//! `--shutdown-grace`, then drop them, which cancels their requests in the engine (each
//! recorded once, as `cancelled`).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokenmeter_listen::{
    Activity, Admission, Connections, Evictable, InFlight, Receiving, Slot, Watched,
    is_connection_error,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, oneshot, watch};
use tokio::task::JoinSet;
use tower_service::Service as _;

use super::http_counts::{Closed, HttpCounts, route};
use super::limits::{Limits, READ_BUFFER};
use super::overflow::{self, HEAD_WAIT, OVERFLOW};

/// How a server stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stopped {
    /// Connections closed at once (nothing to answer yet).
    pub closed: usize,
    /// Connections that ended their response within the grace.
    pub drained: usize,
    /// Connections still answering at the end of the grace, dropped (their requests
    /// cancelled).
    pub cancelled: usize,
}

/// Serves `router` on `listener` under `limits` until `stop` fires (or its sender is dropped).
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    counts: Arc<HttpCounts>,
    stop: oneshot::Receiver<()>,
) -> Stopped {
    let connections = Connections::new(limits.max_connections, Evictable::KeptAlive);
    let (shutdown, watching) = watch::channel(false);
    let mut tasks: JoinSet<Option<Closed>> = JoinSet::new();
    let overflowing = Arc::new(Semaphore::new(OVERFLOW));
    let head_wait = limits.header_timeout.min(HEAD_WAIT);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    match connections.admit() {
                        Admission::Admitted { slot, evicted } => {
                            if evicted {
                                counts.closed(Closed::Evicted);
                            }
                            let served = connection(
                                stream,
                                slot,
                                router.clone(),
                                counts.clone(),
                                limits,
                                watching.clone(),
                            );
                            tasks.spawn(served);
                        }
                        // Past the limit: answered (at most OVERFLOW at once), or else
                        // refused with a 503 written at once.
                        Admission::Full => match overflowing.clone().try_acquire_owned() {
                            Ok(permit) => {
                                let answered = overflow::answer(
                                    stream,
                                    router.clone(),
                                    counts.clone(),
                                    head_wait,
                                );
                                tasks.spawn(async move {
                                    let closed = answered.await;
                                    drop(permit);
                                    closed
                                });
                            }
                            Err(_) => overflow::refuse_now(stream, &counts),
                        },
                    }
                }
                // Out of files, or a connection reset before it was accepted: try again
                // shortly rather than spin (idle connections are closed as new ones arrive,
                // and the limit keeps headroom under the file limit).
                Err(error) if is_connection_error(&error) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }
    drop(listener);
    let _ = shutdown.send(true);
    let mut stopped = Stopped::default();
    let grace = tokio::time::sleep(limits.shutdown_grace);
    tokio::pin!(grace);
    loop {
        tokio::select! {
            joined = tasks.join_next() => match joined {
                Some(Ok(Some(Closed::Shutdown))) => stopped.closed += 1,
                Some(_) => stopped.drained += 1,
                None => break,
            },
            () = &mut grace => break,
        }
    }
    stopped.cancelled = tasks.len();
    for _ in 0..stopped.cancelled {
        counts.closed(Closed::Shutdown);
    }
    // Dropping each connection drops its response, whose token stream cancels the request.
    tasks.shutdown().await;
    stopped
}

/// Serves one connection until it ends, its deadline passes, it is evicted, or a shutdown
/// closes it; returns why the server closed it, if it did.
async fn connection(
    stream: TcpStream,
    slot: Slot,
    router: Router,
    counts: Arc<HttpCounts>,
    limits: Limits,
    mut shutdown: watch::Receiver<bool>,
) -> Option<Closed> {
    let _ = stream.set_nodelay(true);
    let activity = slot.activity().clone();
    let service = ConnService {
        router,
        counts: counts.clone(),
        activity: activity.clone(),
    };
    let io = TokioIo::new(Watched::new(stream, activity.clone()));
    let conn = http1::Builder::new()
        .keep_alive(true)
        .max_buf_size(READ_BUFFER)
        .serve_connection(io, service);
    tokio::pin!(conn);
    let timeouts = limits.timeouts();
    let mut shutting = false;
    let closed = loop {
        tokio::select! {
            biased;
            // Ended: the client closed it, an error, or keep-alive off after a shutdown.
            ended = conn.as_mut() => {
                if let Err(error) = ended {
                    counts.connection_failed(&error);
                }
                break None;
            }
            // Evicted (counted where it was chosen).
            () = activity.evicted() => break None,
            _ = shutdown.changed(), if !shutting => {
                shutting = true;
                conn.as_mut().graceful_shutdown();
                if activity.only_receiving() {
                    break Some(Closed::Shutdown);
                }
            }
            why = activity.expired(&timeouts) => {
                let reason = Closed::from(why);
                counts.closed(reason);
                break Some(reason);
            }
        }
    };
    drop(slot);
    closed
}

/// The router behind one connection: marks its requests in flight, counts every answer.
#[derive(Clone)]
struct ConnService {
    router: Router,
    counts: Arc<HttpCounts>,
    activity: Arc<Activity>,
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<Tracked>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<Tracked>;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let (in_flight, receiving) = self.activity.begin(!request.body().is_end_stream());
        let route = route(request.uri().path());
        let method = request.method().clone();
        let request = request.map(|body| Body::new(RequestBody { body, receiving }));
        let mut router = self.router.clone();
        let counts = self.counts.clone();
        Box::pin(async move {
            let response = match router.call(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            counts.answered(route, &method, response.status());
            Ok(response.map(|body| Tracked {
                body,
                _in_flight: in_flight,
            }))
        })
    }
}

/// A request body that tells its connection when it has arrived whole.
struct RequestBody {
    body: Incoming,
    receiving: Option<Receiving>,
}

impl HttpBody for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) || self.body.is_end_stream() {
            self.receiving = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A response body that keeps its request in flight until hyper drops it.
struct Tracked {
    body: Body,
    _in_flight: InFlight,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
