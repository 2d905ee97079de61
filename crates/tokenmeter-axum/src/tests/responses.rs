//! Responses API streams (`/v1/responses`: typed `event:` lines, no `[DONE]`): metered as the
//! chat stream of the same answer, ended by their last event.

use http::StatusCode;
use tokenmeter::{ErrorClass, FinishReason, Outcome};

use super::*;

const CREATED: &[u8] = b"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"usage\":null}}\n\n";
const DELTA_A: &[u8] = b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":3,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"a\"}\n\n";
const DELTA_B: &[u8] = b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":4,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"b\"}\n\n";
const DELTA_C: &[u8] = b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":5,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"c\"}\n\n";
const TEXT_DONE: &[u8] = b"event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"sequence_number\":6,\"text\":\"abc\"}\n\n";
const COMPLETED: &[u8] = b"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":7,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":8,\"output_tokens\":3,\"total_tokens\":11}}}\n\n";

/// The chat stream of the same answer, on the same clock: its record.
async fn chat_record() -> tokenmeter::RequestRecord {
    let h = Harness::new();
    let usage: &[u8] =
        b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":3}}\n\n";
    let script = h.script(vec![
        (ms(20), Ok(ROLE)),
        (ms(30), Ok(A)),
        (ms(10), Ok(B)),
        (ms(15), Ok(STOP)),
        (ms(5), Ok(usage)),
        (ms(0), Ok(DONE)),
    ]);
    let mut body = h.respond(h.layer(), StatusCode::OK, SSE, script).await;
    drain(&mut body).await;
    h.record()
}

#[tokio::test]
async fn a_responses_stream_is_metered_as_the_chat_stream_of_the_same_answer() {
    let h = Harness::new();
    let script = h.script(vec![
        (ms(20), Ok(CREATED)), // not the first token
        (ms(30), Ok(DELTA_A)), // first token at 50 ms
        (ms(10), Ok(DELTA_B)),
        (ms(15), Ok(DELTA_C)),
        (ms(1), Ok(TEXT_DONE)),
        (ms(4), Ok(COMPLETED)), // the end at 80 ms
        (ms(10), Ok(b": trailing\n\n")),
    ]);
    let mut body = h.respond(h.layer(), StatusCode::OK, SSE, script).await;
    for _ in 0..6 {
        body.frame().await.unwrap().unwrap();
    }
    assert_eq!(
        h.memory.len(),
        1,
        "ended at response.completed, as at [DONE]"
    );
    drop(body); // the client goes away after the end: not a cancel

    let record = h.record();
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(record.ttft, Some(ms(50)));
    assert_eq!(record.e2e, ms(80));
    assert_eq!(record.decode, Some(ms(25)));
    assert_eq!(
        (record.items, record.output_tokens, record.input_tokens),
        (3, 3, Some(8))
    );
    assert_eq!(record.finish_reason, Some(FinishReason::Stop));
    assert_eq!(h.memory.gaps(), [(ms(10), 1), (ms(15), 1)]);

    let chat = chat_record().await;
    assert_eq!(
        (record.outcome, record.ttft, record.e2e, record.decode),
        (chat.outcome, chat.ttft, chat.e2e, chat.decode)
    );
    assert_eq!(
        (record.items, record.output_tokens, record.input_tokens),
        (chat.items, chat.output_tokens, chat.input_tokens)
    );
    assert_eq!(record.finish_reason, chat.finish_reason);
}

#[tokio::test]
async fn response_failed_and_error_events_end_the_request_with_their_class() {
    let failed: &[u8] = b"event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":4,\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n";
    let error: &[u8] = b"event: error\ndata: {\"type\":\"error\",\"sequence_number\":4,\"code\":\"rate_limit_exceeded\",\"message\":\"later\",\"param\":null}\n\n";
    for (end, class) in [
        (failed, ErrorClass::ServerError),
        (error, ErrorClass::RateLimited),
    ] {
        let h = Harness::new();
        let script = h.script(vec![
            (ms(10), Ok(CREATED)),
            (ms(10), Ok(DELTA_A)),
            (ms(10), Ok(end)),
            (ms(10), Ok(DELTA_B)), // after the end: not read
        ]);
        let mut body = h.respond(h.layer(), StatusCode::OK, SSE, script).await;
        drain(&mut body).await;
        let record = h.record();
        assert_eq!(record.outcome, Outcome::Error(class));
        assert_eq!((record.items, record.e2e), (1, ms(30)));
    }
}

#[tokio::test]
async fn a_responses_stream_cut_before_its_last_event_ends_at_the_body_end_as_chat_does() {
    // As a chat stream that ends without `[DONE]`: the server ended the body cleanly, so it
    // is a success at that end (a reset is a transport error, a hang-up a cancel).
    let h = Harness::new();
    let script = h.script(vec![
        (ms(10), Ok(CREATED)),
        (ms(10), Ok(DELTA_A)),
        (ms(10), Ok(DELTA_B)),
    ]);
    let mut body = h.respond(h.layer(), StatusCode::OK, SSE, script).await;
    drain(&mut body).await;
    let record = h.record();
    assert_eq!(
        (
            record.outcome,
            record.items,
            record.e2e,
            record.finish_reason
        ),
        (Outcome::Success, 2, ms(30), None)
    );
}
