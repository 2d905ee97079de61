//! Per token, the layer allocates nothing beyond what parsing the chunk needs: the allocations of
//! polling a frame through `MeteredBody` equal those of `tokenmeter_openai::chunk::parse` on its
//! event (whole, split across frames, or several to a frame), and the end allocates nothing.
//!
//! `allocation-counter` installs a counting global allocator in this test binary and counts on
//! the current thread.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::{Response, header};
use http_body::{Body, Frame};
use tokenmeter::sink::InMemorySink;
use tokenmeter::{Labels, Meter, Outcome};
use tokenmeter_axum::{MeterLayer, MeteredBody};
use tower::Layer;
use tower_service::Service;

const TOKEN: &str = r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"word"},"finish_reason":null}]}"#;

/// Frames handed out one per poll.
struct Frames(VecDeque<Bytes>);

impl Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.pop_front().map(|data| Ok(Frame::data(data))))
    }
}

fn event() -> String {
    format!("data: {TOKEN}\n\n")
}

/// The metered body of an SSE response made of `frames`.
fn metered(meter: &Meter, frames: Vec<Bytes>) -> Pin<Box<MeteredBody<Frames>>> {
    let series = meter.series(&Labels::server("chat").request_model("m"));
    let mut once = Some(frames);
    let mut service = MeterLayer::new(move |_| series.clone()).layer(tower::service_fn(
        move |_: http::Request<()>| {
            let frames = once.take().expect("one call");
            let mut response = Response::new(Frames(frames.into()));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                "text/event-stream".parse().expect("a header value"),
            );
            std::future::ready(Ok::<_, Infallible>(response))
        },
    ));
    let future = pin!(service.call(http::Request::new(())));
    let Poll::Ready(Ok(response)) = future.poll(&mut Context::from_waker(Waker::noop())) else {
        panic!("a ready response");
    };
    Box::pin(response.into_body())
}

/// Polls one frame and checks it is data.
fn next(body: &mut Pin<Box<MeteredBody<Frames>>>) {
    let polled = body
        .as_mut()
        .poll_frame(&mut Context::from_waker(Waker::noop()));
    assert!(matches!(polled, Poll::Ready(Some(Ok(_)))), "a data frame");
}

#[test]
fn a_token_costs_the_parsers_allocations_and_nothing_more() {
    let parse = allocation_counter::measure(|| {
        let parsed = tokenmeter_openai::chunk::parse(TOKEN).expect("a chunk");
        assert_eq!(parsed.tokens, 1);
    })
    .count_total;
    assert!(parse > 0, "the parser allocates (the choices, the id)");
    println!("chunk::parse allocates {parse} times per event");

    let meter = Meter::builder().build(); // the no-op sink: only the layer is counted
    let whole = event();
    let (head, tail) = whole.split_at(20);
    let two = format!("{whole}{whole}");
    let frames = [
        whole.as_str(), // warm-up: the first token
        whole.as_str(),
        head, // warm-up: the buffers for split events
        tail,
        whole.as_str(), // measured: a whole event
        head,           // measured: an event split in two frames
        tail,
        two.as_str(), // measured: two events in one frame
        "data: [DONE]\n\n",
    ];
    let mut body = metered(
        &meter,
        frames.iter().map(|f| Bytes::from(f.to_string())).collect(),
    );
    for _ in 0..4 {
        next(&mut body);
    }

    let one = allocation_counter::measure(|| next(&mut body)).count_total;
    assert_eq!(one, parse, "a whole event");
    let split = allocation_counter::measure(|| {
        next(&mut body);
        next(&mut body);
    })
    .count_total;
    assert_eq!(split, parse, "an event split across two frames");
    let shared = allocation_counter::measure(|| next(&mut body)).count_total;
    assert_eq!(shared, 2 * parse, "two events in one frame");
    let end = allocation_counter::measure(|| next(&mut body)).count_total;
    assert_eq!(end, 0, "[DONE] ends the request without allocating");
    drop(body);

    // The same stream on a recording sink ends with all of it counted.
    let memory = InMemorySink::new();
    let meter = Meter::builder().sink(memory.clone()).build();
    let mut body = metered(
        &meter,
        frames.iter().map(|f| Bytes::from(f.to_string())).collect(),
    );
    for _ in 0..frames.len() {
        next(&mut body);
    }
    let record = &memory.records()[0];
    assert_eq!((record.outcome, record.items), (Outcome::Success, 7));
}
