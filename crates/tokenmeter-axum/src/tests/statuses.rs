//! Error statuses, error events, and bodies that are not SSE.

use http::StatusCode;
use http_body_util::{BodyExt, Empty, Full};
use tokenmeter::{ErrorClass, FinishReason, Outcome};

use super::*;

#[tokio::test]
async fn error_statuses_end_the_request_at_once_with_their_class() {
    for (status, class) in [
        (StatusCode::TOO_MANY_REQUESTS, ErrorClass::RateLimited),
        (StatusCode::INTERNAL_SERVER_ERROR, ErrorClass::ServerError),
        (StatusCode::SERVICE_UNAVAILABLE, ErrorClass::Overloaded),
        (StatusCode::BAD_REQUEST, ErrorClass::ClientError),
    ] {
        let h = Harness::new();
        let error = b"{\"error\":{\"message\":\"no\",\"code\":400}}";
        let script = h.script(vec![(ms(10), Ok(error))]);
        let mut body = h
            .respond(h.layer(), status, "application/json", script)
            .await;
        let record = h.record(); // before the body is read
        assert_eq!(record.outcome, Outcome::Error(class), "{status}");
        assert_eq!(record.e2e, ms(0));
        let (bytes, _) = drain(&mut body).await;
        assert_eq!(bytes, error, "the body still passes");
        assert_eq!(h.memory.len(), 1);
    }
}

#[tokio::test]
async fn an_error_event_ends_the_request_with_its_class_and_the_rest_still_passes() {
    let cases: [(&'static [u8], ErrorClass); 4] = [
        (
            b"event: error\ndata: {\"error\":{\"message\":\"busy\",\"code\":503}}\n\n",
            ErrorClass::Overloaded,
        ),
        (
            b"data: {\"error\":{\"message\":\"slow down\",\"code\":429}}\n\n",
            ErrorClass::RateLimited,
        ),
        (b"event: error\ndata: engine stopped\n\n", ErrorClass::ServerError),
        (
            b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"o\"}}\n\n",
            ErrorClass::Overloaded,
        ),
    ];
    for (event, class) in cases {
        let h = Harness::new();
        let script = h.script(vec![
            (ms(10), Ok(A)),
            (ms(10), Ok(event)),
            (ms(10), Ok(B)),
            (ms(10), Ok(DONE)),
        ]);
        let mut body = h.respond(h.layer(), StatusCode::OK, SSE, script).await;
        let (bytes, error) = drain(&mut body).await;
        assert!(error.is_none());
        assert_eq!(bytes.len(), A.len() + event.len() + B.len() + DONE.len());
        let record = h.record();
        assert_eq!(record.outcome, Outcome::Error(class));
        assert_eq!(record.e2e, ms(20), "ended at the error event");
        assert_eq!(record.items, 1, "nothing counted after the error");
    }
}

#[tokio::test]
async fn a_json_body_gives_usage_and_finish_reason_across_frames() {
    let h = Harness::new();
    let script = h.script(vec![
        (ms(100), Ok(b"{\"id\":\"x\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},")),
        (ms(1), Ok(b"\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":9}}")),
    ]);
    let mut body = h
        .respond(
            h.layer(),
            StatusCode::OK,
            "application/json; charset=utf-8",
            script,
        )
        .await;
    drain(&mut body).await;
    let record = h.record();
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!((record.output_tokens, record.input_tokens), (9, Some(3)));
    assert_eq!(record.finish_reason, Some(FinishReason::Length));
    assert_eq!(
        (record.items, record.ttft),
        (0, None),
        "no token times without a stream"
    );
    assert_eq!(record.e2e, ms(101));
}

#[tokio::test]
async fn a_body_that_knows_its_end_ends_the_request_without_another_poll() {
    let h = Harness::new();
    let json = r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":4}}"#;
    let mut body = h
        .respond(
            h.layer(),
            StatusCode::OK,
            "application/json",
            Full::new(Bytes::from(json)),
        )
        .await;
    body.frame().await.unwrap().unwrap();
    assert!(body.is_end_stream());
    // A server stops here and drops the body: the request has already ended.
    let record = h.record();
    assert_eq!(
        (record.outcome, record.output_tokens),
        (Outcome::Success, 4)
    );

    // An empty body ends with the response.
    let h = Harness::new();
    let body = h
        .respond(
            h.layer(),
            StatusCode::NO_CONTENT,
            "text/plain",
            Empty::<Bytes>::new(),
        )
        .await;
    assert_eq!(h.record().outcome, Outcome::Success);
    drop(body);
    assert_eq!(h.memory.len(), 1);
}

#[tokio::test]
async fn a_json_error_object_or_an_other_body_is_read_as_such() {
    let h = Harness::new();
    let error = b"{\"error\":{\"message\":\"limit\",\"type\":\"rate_limit_error\"}}";
    let script = h.script(vec![(ms(5), Ok(error))]);
    let mut body = h
        .respond(
            h.layer(),
            StatusCode::OK,
            "application/problem+json",
            script,
        )
        .await;
    drain(&mut body).await;
    assert_eq!(h.record().outcome, Outcome::Error(ErrorClass::RateLimited));

    let h = Harness::new();
    let script = h.script(vec![(ms(5), Ok(b"hello")), (ms(5), Ok(b" world"))]);
    let mut body = h
        .respond(h.layer(), StatusCode::OK, "text/plain", script)
        .await;
    drain(&mut body).await;
    let record = h.record();
    assert_eq!(
        (record.outcome, record.e2e, record.items),
        (Outcome::Success, ms(10), 0)
    );
}
