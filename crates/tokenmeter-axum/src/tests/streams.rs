//! SSE bodies: tokens, TTFT, ITL, usage, finish reasons and events cut anywhere.

use http::StatusCode;
use http_body_util::BodyExt;
use tokenmeter::{FinishReason, Outcome};

use super::*;

#[tokio::test]
async fn an_sse_stream_gives_exact_ttft_itl_tokens_and_passes_the_same_bytes() {
    let h = Harness::new();
    let frames = [ROLE, A, B, STOP, DONE];
    let script = h.script(vec![
        (ms(20), Ok(ROLE)), // not the first token
        (ms(30), Ok(A)),    // first token at 50 ms
        (ms(10), Ok(B)),
        (ms(15), Ok(STOP)),
        (ms(5), Ok(DONE)), // the end at 80 ms
    ]);
    let mut body = h.respond(h.layer(), StatusCode::OK, SSE, script).await;
    for expected in frames {
        let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(
            frame.as_ptr(),
            expected.as_ptr(),
            "the same bytes, not a copy"
        );
    }
    assert!(body.frame().await.is_none());

    let record = h.record();
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(record.ttft, Some(ms(50)));
    assert_eq!(record.e2e, ms(80));
    assert_eq!(record.decode, Some(ms(25)));
    assert_eq!(record.tpot(), Some(Duration::from_micros(12_500)));
    assert_eq!(
        (record.items, record.frames, record.output_tokens),
        (3, 4, 3)
    );
    assert_eq!(record.finish_reason, Some(FinishReason::Stop));
    assert_eq!(record.input_tokens, None);
    assert_eq!(h.memory.gaps(), [(ms(10), 1), (ms(15), 1)]);
    assert_eq!(record.series.labels().request_model_name(), "m");
}

#[tokio::test]
async fn events_split_across_frames_and_sharing_a_frame_are_each_one_item() {
    let h = Harness::new();
    let script = h.script(vec![
        (ms(10), Ok(b"data: {\"choices\":[{\"delta\":{\"con")),
        (ms(10), Ok(b"tent\":\"a\"}}]}\r\n")),
        // The end of the first event and two more, all in one frame at 30 ms.
        (ms(10), Ok(b"\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"c\"}}]}\n\n")),
        (ms(10), Ok(b"data: {\"choices\":[{\"delta\":{\"content\":\"d\"}}]}\n")),
        (ms(10), Ok(b"\n")),
    ]);
    let mut body = h.respond(h.layer(), StatusCode::OK, SSE, script).await;
    let (bytes, error) = drain(&mut body).await;
    assert!(error.is_none());
    assert!(bytes.ends_with(b"\"d\"}}]}\n\n"));
    let record = h.record();
    assert_eq!(record.outcome, Outcome::Success); // the body's end, without [DONE]
    assert_eq!(record.ttft, Some(ms(30)));
    assert_eq!(record.items, 4);
    assert_eq!(h.memory.gaps(), [(ms(0), 1), (ms(0), 1), (ms(20), 1)]);
    assert_eq!(record.e2e, ms(50));
}

#[tokio::test]
async fn the_role_frame_and_keep_alives_are_not_the_first_token() {
    let h = Harness::new();
    let script = h.script(vec![
        (ms(10), Ok(ROLE)),
        (ms(5), Ok(b": keep-alive\n\n")),
        (ms(5), Ok(b"data: {\"choices\":[{\"delta\":{}}]}\n\n")), // empty delta
        (ms(5), Ok(b"data: not json\n\n")),                       // unreadable: a frame
        (ms(10), Ok(A)),
        (ms(1), Ok(DONE)),
    ]);
    let mut body = h.respond(h.layer(), StatusCode::OK, SSE, script).await;
    drain(&mut body).await;
    let record = h.record();
    assert_eq!(record.ttft, Some(ms(35)));
    assert_eq!(
        (record.items, record.frames, record.output_tokens),
        (1, 4, 1)
    );
    assert_eq!(record.tpot(), None);
    assert_eq!(record.outcome, Outcome::Success);
}

#[tokio::test]
async fn usage_sets_output_and_input_tokens() {
    let h = Harness::new();
    let script = h.script(vec![
        (ms(10), Ok(A)),
        (ms(10), Ok(B)),
        (ms(10), Ok(STOP)),
        (
            ms(1),
            Ok(b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7,\"total_tokens\":18}}\n\n"),
        ),
        (ms(1), Ok(DONE)),
    ]);
    let mut body = h.respond(h.layer(), StatusCode::OK, SSE, script).await;
    drain(&mut body).await;
    let record = h.record();
    assert_eq!((record.items, record.output_tokens), (3, 7));
    assert_eq!(record.input_tokens, Some(11));
    // TPOT over the usage count: 20 ms of decode / 6.
    assert_eq!(record.tpot(), Some(Duration::from_nanos(20_000_000 / 6)));
}

#[tokio::test]
async fn done_ends_the_request_so_a_later_drop_is_not_a_cancel() {
    let h = Harness::new();
    let script = h.script(vec![
        (ms(10), Ok(A)),
        (ms(10), Ok(DONE)),
        (ms(10), Ok(b": trailing\n\n")),
    ]);
    let mut body = h.respond(h.layer(), StatusCode::OK, SSE, script).await;
    body.frame().await.unwrap().unwrap();
    body.frame().await.unwrap().unwrap();
    assert_eq!(h.memory.len(), 1, "ended at [DONE]");
    drop(body);
    let record = h.record();
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(record.e2e, ms(20));
}

#[tokio::test]
async fn an_event_over_the_buffer_limit_passes_through_unread() {
    let h = Harness::new();
    let long: &'static [u8] = Box::leak(
        format!(
            "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n",
            "x".repeat(200)
        )
        .into_bytes()
        .into_boxed_slice(),
    );
    let script = h.script(vec![
        (ms(10), Ok(A)),
        (ms(10), Ok(long)),
        (ms(10), Ok(B)),
        (ms(1), Ok(DONE)),
    ]);
    let layer = h.layer().buffer_limit(128);
    let mut body = h.respond(layer, StatusCode::OK, SSE, script).await;
    let (bytes, _) = drain(&mut body).await;
    assert_eq!(bytes.len(), A.len() + long.len() + B.len() + DONE.len());
    let record = h.record();
    assert_eq!((record.items, record.output_tokens), (2, 2));
    assert_eq!(h.memory.gaps(), [(ms(20), 1)]);
}

#[tokio::test]
async fn an_sse_body_that_knows_its_end_ends_the_request_at_its_last_frame() {
    let h = Harness::new();
    let script = h.script(vec![(ms(10), Ok(A)), (ms(10), Ok(B))]).known_end();
    let mut body = h.respond(h.layer(), StatusCode::OK, SSE, script).await;
    body.frame().await.unwrap().unwrap();
    assert!(h.memory.is_empty());
    body.frame().await.unwrap().unwrap();
    let record = h.record(); // no poll for the end: hyper would not make one
    assert_eq!(
        (record.outcome, record.items, record.e2e),
        (Outcome::Success, 2, ms(20))
    );
}
