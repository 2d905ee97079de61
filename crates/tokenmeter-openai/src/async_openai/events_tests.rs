//! The Responses stream of the async-openai helper over in-memory streams of async-openai's own
//! event type, on a manual clock that moves 1 ms per item read.

use std::time::Duration;

use ::async_openai::error::OpenAIError;
use ::async_openai::types::chat::{
    ChatCompletionResponseStream, CreateChatCompletionStreamResponse,
};
use ::async_openai::types::responses::{ResponseStream, ResponseStreamEvent};
use futures_executor::block_on;
use futures_util::{StreamExt, stream};
use tokenmeter::sink::InMemorySink;
use tokenmeter::{ErrorClass, FinishReason, Labels, ManualClock, Meter, Outcome, RequestRecord};

use crate::async_openai::{meter_chat_stream, meter_response_stream, send};

const MS: Duration = Duration::from_millis(1);

type Event = Result<ResponseStreamEvent, OpenAIError>;

fn event(kind: &str, rest: &str) -> Event {
    let json = format!(r#"{{"type":"{kind}","sequence_number":1{rest}}}"#);
    Ok(serde_json::from_str(&json).unwrap_or_else(|e| panic!("{kind}: {e}")))
}

/// A `response` object of `status` with `extra` fields.
fn response(status: &str, extra: &str) -> String {
    format!(
        r#","response":{{"id":"resp_1","object":"response","created_at":0,"model":"m",
            "status":"{status}","output":[]{extra}}}"#
    )
}

fn usage(input: u32, output: u32) -> String {
    format!(
        r#","usage":{{"input_tokens":{input},"input_tokens_details":{{"cached_tokens":2}},
            "output_tokens":{output},"output_tokens_details":{{"reasoning_tokens":0}},
            "total_tokens":{}}}"#,
        input + output
    )
}

fn created() -> Event {
    event("response.created", &response("in_progress", ""))
}

fn delta(kind: &str, text: &str) -> Event {
    event(
        kind,
        &format!(
            r#","item_id":"m","output_index":0,"content_index":0,"summary_index":0,"delta":"{text}""#
        ),
    )
}

fn text(text: &str) -> Event {
    delta("response.output_text.delta", text)
}

fn text_done() -> Event {
    event(
        "response.output_text.done",
        r#","item_id":"m","output_index":0,"content_index":0,"text":"abc""#,
    )
}

fn completed(input: u32, output: u32) -> Event {
    event(
        "response.completed",
        &response("completed", &usage(input, output)),
    )
}

fn setup() -> (ManualClock, Meter, InMemorySink) {
    let manual = ManualClock::new();
    let (meter, memory) = Meter::manual(&manual);
    (manual, meter, memory)
}

/// `items` as async-openai's Responses stream; reading each moves `manual` forward 1 ms.
fn events(manual: &ManualClock, items: Vec<Event>) -> ResponseStream {
    let manual = manual.clone();
    Box::pin(stream::iter(items).inspect(move |_| manual.advance(MS)))
}

fn only(memory: &InMemorySink) -> RequestRecord {
    let records = memory.records();
    assert_eq!(records.len(), 1, "exactly one request end: {records:?}");
    records[0].clone()
}

/// The Responses stream and the chat stream of the same answer (three tokens, `stop`, the same
/// usage), each token at the same instant, give the same record.
#[test]
fn the_same_answer_gives_the_same_record_as_the_chat_stream() {
    let (manual, meter, memory) = setup();
    let series = meter.series(&Labels::client("chat"));
    let chat_chunk = |choices: &str, usage: &str| -> Result<_, OpenAIError> {
        let json = format!(
            r#"{{"id":"c","object":"chat.completion.chunk","created":0,"model":"m",
                "choices":[{choices}],"usage":{usage}}}"#
        );
        Ok(serde_json::from_str::<CreateChatCompletionStreamResponse>(&json).unwrap())
    };
    let content = |text: &str| {
        chat_chunk(
            &format!(r#"{{"index":0,"delta":{{"content":"{text}"}}}}"#),
            "null",
        )
    };
    let chat: ChatCompletionResponseStream = {
        let manual = manual.clone();
        let items = vec![
            chat_chunk(
                r#"{"index":0,"delta":{"role":"assistant","content":""}}"#,
                "null",
            ),
            content("a"),
            content("b"),
            content("c"),
            chat_chunk(r#"{"index":0,"delta":{},"finish_reason":"stop"}"#, "null"),
            chat_chunk(
                "",
                r#"{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10,
                    "prompt_tokens_details":{"cached_tokens":2}}"#,
            ),
        ];
        Box::pin(stream::iter(items).inspect(move |_| manual.advance(MS)))
    };
    assert_eq!(block_on(meter_chat_stream(chat, series.start()).count()), 6);
    let chat = only(&memory);

    let (manual, meter, memory) = setup();
    let series = meter.series(&Labels::client("chat"));
    let items = vec![
        created(),
        text("a"),
        text("b"),
        text("c"),
        text_done(),
        completed(7, 3),
    ];
    let seen: Vec<Event> =
        block_on(meter_response_stream(events(&manual, items), series.start()).collect());
    assert_eq!(seen.len(), 6, "the events pass");
    assert!(seen.iter().all(Result::is_ok));
    let responses = only(&memory);

    assert_eq!(responses.outcome, Outcome::Success);
    assert_eq!(responses.ttft, Some(2 * MS), "created is no token");
    assert_eq!(responses.decode, Some(2 * MS));
    assert_eq!(
        responses.e2e,
        6 * MS,
        "the request ends at response.completed"
    );
    assert_eq!(
        (
            responses.input_tokens,
            responses.cached_input_tokens,
            responses.output_tokens
        ),
        (Some(7), Some(2), 3)
    );
    assert_eq!(responses.finish_reason, Some(FinishReason::Stop));
    let same = |r: &RequestRecord| {
        (
            r.outcome,
            r.ttft,
            r.first_output,
            r.second_token,
            r.decode,
            r.e2e,
            r.items,
            r.input_tokens,
            r.cached_input_tokens,
            r.output_tokens,
            r.finish_reason,
        )
    };
    assert_eq!(same(&responses), same(&chat));
}

#[test]
fn every_delta_kind_is_one_item_and_reasoning_comes_before_the_first_output() {
    let (manual, meter, memory) = setup();
    let items = vec![
        created(),
        delta("response.reasoning_text.delta", "hm"),
        delta("response.reasoning_summary_text.delta", "so"),
        delta("response.refusal.delta", "no"),
        delta("response.function_call_arguments.delta", "{"),
        text(""),
        event(
            "response.completed",
            &response("completed", r#","usage":null"#),
        ),
    ];
    let request = meter.series(&Labels::client("chat")).start();
    let _ = block_on(meter_response_stream(events(&manual, items), request).count());
    let record = only(&memory);
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(record.ttft, Some(2 * MS), "a reasoning delta is a token");
    assert_eq!(
        record.first_output,
        Some(4 * MS),
        "the refusal is the first output"
    );
    assert_eq!(
        (record.items, record.output_tokens),
        (5, 5),
        "no usage: one per delta"
    );
    assert_eq!(record.reasoning_output_tokens, 2);
    assert_eq!(record.input_tokens, None);
}

#[test]
fn an_incomplete_response_gives_its_reason() {
    for (kind, status, reason, finish) in [
        (
            "response.incomplete",
            "incomplete",
            "max_output_tokens",
            FinishReason::Length,
        ),
        (
            "response.completed",
            "incomplete",
            "max_output_tokens",
            FinishReason::Length,
        ),
        (
            "response.incomplete",
            "incomplete",
            "content_filter",
            FinishReason::ContentFilter,
        ),
        (
            "response.completed",
            "completed",
            "max_output_tokens",
            FinishReason::Stop,
        ),
    ] {
        let (manual, meter, memory) = setup();
        let details = format!(
            r#","incomplete_details":{{"reason":"{reason}"}}{}"#,
            usage(4, 2)
        );
        let items = vec![
            text("a"),
            text("b"),
            event(kind, &response(status, &details)),
        ];
        let request = meter.series(&Labels::client("chat")).start();
        let _ = block_on(meter_response_stream(events(&manual, items), request).count());
        let record = only(&memory);
        assert_eq!(record.outcome, Outcome::Success, "{kind} {status}");
        assert_eq!(
            record.finish_reason,
            Some(finish),
            "{kind} {status} {reason}"
        );
        assert_eq!(record.output_tokens, 2);
    }
}

#[test]
fn failed_and_error_events_end_with_their_class() {
    let failed = |code: &str| {
        event(
            "response.failed",
            &response(
                "failed",
                &format!(r#","error":{{"code":"{code}","message":"no"}}"#),
            ),
        )
    };
    let error_event = |code: &str| {
        event(
            "error",
            &format!(r#","code":"{code}","message":"no","param":null"#),
        )
    };
    for (item, class) in [
        (failed("server_error"), ErrorClass::ServerError),
        (failed("rate_limit_exceeded"), ErrorClass::RateLimited),
        (failed("vector_store_timeout"), ErrorClass::ServerError),
        (error_event("429"), ErrorClass::RateLimited),
        (error_event("server_error"), ErrorClass::ServerError),
    ] {
        let (manual, meter, memory) = setup();
        let items = vec![created(), text("a"), item, completed(3, 1)];
        let request = meter.series(&Labels::client("chat")).start();
        let seen = block_on(meter_response_stream(events(&manual, items), request).count());
        assert_eq!(seen, 4, "every item is yielded");
        let record = only(&memory);
        assert_eq!(record.outcome, Outcome::Error(class));
        assert_eq!(record.e2e, 3 * MS, "the request ends at the failure");
        assert_eq!(record.output_tokens, 1, "nothing after the end counts");
    }
}

#[test]
fn the_end_after_the_last_event_is_success_and_before_it_is_not() {
    // After response.completed: ended there, whatever follows.
    let (manual, meter, memory) = setup();
    let items = vec![text("a"), completed(3, 1), text("late")];
    let mut metered = meter_response_stream(
        events(&manual, items),
        meter.series(&Labels::client("chat")).start(),
    );
    block_on(async {
        metered.next().await;
        metered.next().await;
    });
    let record = only(&memory);
    assert_eq!((record.outcome, record.e2e), (Outcome::Success, 2 * MS));
    let _ = block_on(metered.count());
    assert_eq!(
        only(&memory).output_tokens,
        1,
        "the late delta is not the answer"
    );

    // Dropped before it: cancelled.
    let (manual, meter, memory) = setup();
    let mut metered = meter_response_stream(
        events(&manual, vec![text("a"), text("b"), completed(3, 2)]),
        meter.series(&Labels::client("chat")).start(),
    );
    block_on(metered.next());
    assert!(memory.records().is_empty(), "still running");
    drop(metered);
    assert_eq!(only(&memory).outcome, Outcome::Cancelled);

    // The stream ends without it (the body cut cleanly): transport.
    let (manual, meter, memory) = setup();
    let request = meter.series(&Labels::client("chat")).start();
    let _ = block_on(
        meter_response_stream(events(&manual, vec![created(), text("a")]), request).count(),
    );
    assert_eq!(only(&memory).outcome, Outcome::Error(ErrorClass::Transport));

    // It comes with no delta before it: an empty response.
    let (manual, meter, memory) = setup();
    let request = meter.series(&Labels::client("chat")).start();
    let _ = block_on(
        meter_response_stream(events(&manual, vec![created(), completed(3, 0)]), request).count(),
    );
    assert_eq!(
        only(&memory).outcome,
        Outcome::Error(ErrorClass::EmptyResponse)
    );
}

#[test]
fn send_meters_a_responses_stream() {
    let (manual, meter, memory) = setup();
    let stream = events(&manual, vec![created(), text("a"), completed(5, 1)]);
    let create = async { Ok::<_, OpenAIError>(stream) };
    let metered =
        block_on(send(create, meter.series(&Labels::client("chat")).start())).expect("a stream");
    assert_eq!(block_on(metered.count()), 3);
    let record = only(&memory);
    assert_eq!(
        (record.outcome, record.input_tokens, record.output_tokens),
        (Outcome::Success, Some(5), 1)
    );
}
