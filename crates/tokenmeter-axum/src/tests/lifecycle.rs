//! Every path ends the request exactly once: body errors, drops, service errors, panics.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::task::Waker;

use http::StatusCode;
use http_body_util::BodyExt;
use tokenmeter::{ErrorClass, Outcome};
use tower_service::Service;

use super::*;

#[tokio::test]
async fn a_body_error_is_a_transport_error_and_is_passed_on() {
    let h = Harness::new();
    let script = h.script(vec![
        (ms(10), Ok(A)),
        (ms(10), Err(io::ErrorKind::ConnectionReset)),
    ]);
    let mut body = h.respond(h.layer(), StatusCode::OK, SSE, script).await;
    let (bytes, error) = drain(&mut body).await;
    assert_eq!(bytes, A);
    assert_eq!(error.unwrap().kind(), io::ErrorKind::ConnectionReset);
    let record = h.record();
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::Transport));
    assert_eq!((record.e2e, record.items), (ms(20), 1));
}

#[tokio::test]
async fn a_body_dropped_mid_stream_is_cancelled_and_leaves_nothing_running() {
    let h = Harness::new();
    let script = h.script(vec![
        (ms(10), Ok(ROLE)),
        (ms(10), Ok(A)),
        (ms(10), Ok(B)),
        (ms(10), Ok(STOP)),
        (ms(10), Ok(DONE)),
    ]);
    let layer = h.layer();
    let mut body = h.respond(layer, StatusCode::OK, SSE, script).await;
    for _ in 0..3 {
        body.frame().await.unwrap().unwrap();
    }
    let series = h.meter.series(&Labels::server("chat").request_model("m"));
    assert_eq!((series.waiting(), series.running()), (0, 1));
    assert!(h.memory.is_empty());
    h.time.advance(ms(7)); // the client goes away 7 ms after the last token
    drop(body);
    let record = h.record();
    assert_eq!(record.outcome, Outcome::Cancelled);
    assert_eq!(
        (record.items, record.ttft, record.e2e),
        (2, Some(ms(20)), ms(37))
    );
    assert_eq!((series.waiting(), series.running()), (0, 0));
}

fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn an_inner_service_error_is_a_server_error_and_is_passed_on() {
    let h = Harness::new();
    let mut service = h
        .layer()
        .layer(tower::service_fn(|_: http::Request<()>| async {
            h.time.advance(ms(3));
            Err::<Response<Empty>, _>(io::Error::other("no backend"))
        }));
    let future = pin!(service.call(http::Request::new(())));
    let Poll::Ready(Err(error)) = poll_once(future) else {
        panic!("the inner error comes out");
    };
    assert_eq!(error.to_string(), "no backend");
    let record = h.record();
    assert_eq!(
        (record.outcome, record.e2e),
        (Outcome::Error(ErrorClass::ServerError), ms(3))
    );
}

type Empty = http_body_util::Empty<Bytes>;

#[test]
fn a_response_future_dropped_before_the_response_is_cancelled() {
    let h = Harness::new();
    let mut service = h.layer().layer(tower::service_fn(|_: http::Request<()>| {
        std::future::pending::<Result<Response<Empty>, Infallible>>()
    }));
    {
        let future = pin!(service.call(http::Request::new(())));
        assert!(poll_once(future).is_pending());
        h.time.advance(ms(4));
    }
    let record = h.record();
    assert_eq!((record.outcome, record.e2e), (Outcome::Cancelled, ms(4)));
}

#[test]
fn a_panic_in_the_inner_service_or_the_body_ends_the_request_as_an_error() {
    let h = Harness::new();
    let mut service = h
        .layer()
        .layer(tower::service_fn(|_: http::Request<()>| async {
            if true {
                panic!("handler bug");
            }
            Ok::<Response<Empty>, Infallible>(Response::new(Empty::new()))
        }));
    let mut future = Box::pin(service.call(http::Request::new(())));
    let unwound = catch_unwind(AssertUnwindSafe(|| poll_once(future.as_mut())));
    assert!(unwound.is_err());
    // Ended while the panic unwound, though the future is dropped only later (as a
    // catch-panic layer above would do).
    let record = h.record();
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::Other));
    assert!(record.panicked);
    drop(future);
    assert_eq!(h.memory.len(), 1);

    /// A body whose first poll panics.
    struct Bomb;
    impl Body for Bomb {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            panic!("body bug")
        }
    }
    let h = Harness::new();
    let mut service = h
        .layer()
        .layer(tower::service_fn(|_: http::Request<()>| async {
            Ok::<_, Infallible>(Response::new(Bomb))
        }));
    let future = pin!(service.call(http::Request::new(())));
    let Poll::Ready(Ok(response)) = poll_once(future) else {
        panic!("a response");
    };
    let mut body = Box::pin(response.into_body());
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        let _ = body
            .as_mut()
            .poll_frame(&mut Context::from_waker(Waker::noop()));
    }));
    assert!(unwound.is_err());
    let record = h.record();
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::Other));
    assert!(record.panicked);
    drop(body);
    assert_eq!(h.memory.len(), 1);
}
