//! The async-openai helper over in-memory streams of async-openai's own types, on a manual
//! clock that moves 1 ms per item read.

use std::time::Duration;

use ::async_openai::error::{ApiError, ApiErrorResponse, OpenAIError, StreamError};
use ::async_openai::types::chat::{
    ChatCompletionResponseStream, CreateChatCompletionStreamResponse,
};
use ::async_openai::types::completions::{CompletionResponseStream, CreateCompletionResponse};
use futures_executor::block_on;
use futures_util::{StreamExt, stream};
use tokenmeter::sink::InMemorySink;
use tokenmeter::{ErrorClass, FinishReason, Labels, ManualClock, Meter, Outcome, RequestRecord};

use super::{error_class, meter_chat_stream, meter_completion_stream, send};

const MS: Duration = Duration::from_millis(1);

type ChatItem = Result<CreateChatCompletionStreamResponse, OpenAIError>;

fn chat_chunk(choices: &str, usage: &str) -> ChatItem {
    let json = format!(
        r#"{{"id":"c1","object":"chat.completion.chunk","created":0,"model":"m",
            "choices":[{choices}],"usage":{usage}}}"#
    );
    Ok(serde_json::from_str(&json).expect("a chat chunk"))
}

fn role() -> ChatItem {
    chat_chunk(
        r#"{"index":0,"delta":{"role":"assistant","content":""}}"#,
        "null",
    )
}

fn content(text: &str) -> ChatItem {
    chat_chunk(
        &format!(r#"{{"index":0,"delta":{{"content":"{text}"}}}}"#),
        "null",
    )
}

fn finish(reason: &str) -> ChatItem {
    chat_chunk(
        &format!(r#"{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}"#),
        "null",
    )
}

fn usage(prompt: u32, completion: u32) -> ChatItem {
    let usage = format!(
        r#"{{"prompt_tokens":{prompt},"completion_tokens":{completion},"total_tokens":{},
            "prompt_tokens_details":{{"cached_tokens":2}}}}"#,
        prompt + completion
    );
    chat_chunk("", &usage)
}

fn api_error(status: u16, kind: Option<&str>, code: Option<&str>) -> OpenAIError {
    OpenAIError::ApiError(ApiErrorResponse {
        status_code: http::StatusCode::from_u16(status).expect("a status"),
        api_error: ApiError {
            message: "refused".to_owned(),
            r#type: kind.map(str::to_owned),
            code: code.map(str::to_owned),
            ..ApiError::default()
        },
    })
}

fn in_stream(data: &str) -> OpenAIError {
    let error = serde_json::from_str::<CreateChatCompletionStreamResponse>(data).unwrap_err();
    OpenAIError::JSONDeserialize(error, data.to_owned())
}

fn broken() -> OpenAIError {
    OpenAIError::StreamError(Box::new(StreamError::EventStream(
        "Transport error: error decoding response body".to_owned(),
    )))
}

/// A meter on a manual clock.
fn setup() -> (ManualClock, Meter, InMemorySink) {
    let manual = ManualClock::new();
    let (meter, memory) = Meter::manual(&manual);
    (manual, meter, memory)
}

/// `items` as async-openai's chat stream; reading each moves `manual` forward 1 ms.
fn chat_stream(manual: &ManualClock, items: Vec<ChatItem>) -> ChatCompletionResponseStream {
    let manual = manual.clone();
    Box::pin(stream::iter(items).inspect(move |_| manual.advance(MS)))
}

fn only(memory: &InMemorySink) -> RequestRecord {
    let records = memory.records();
    assert_eq!(records.len(), 1, "exactly one request end: {records:?}");
    records[0].clone()
}

#[test]
fn usage_gives_the_counts_and_ttft_waits_for_content() {
    let (manual, meter, memory) = setup();
    let request = meter.series(&Labels::client("chat")).start();
    let items = || {
        vec![
            role(),
            content("Hel"),
            content("lo"),
            finish("stop"),
            usage(9, 4),
        ]
    };
    let stream = chat_stream(&manual, items());
    let seen: Vec<ChatItem> = block_on(meter_chat_stream(stream, request).collect());
    let seen: Vec<_> = seen.into_iter().map(Result::unwrap).collect();
    let sent: Vec<_> = items().into_iter().map(Result::unwrap).collect();
    assert_eq!(seen, sent, "the items pass unchanged");

    let record = only(&memory);
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(record.ttft, Some(2 * MS), "the role frame is no token");
    assert_eq!((record.input_tokens, record.output_tokens), (Some(9), 4));
    assert_eq!(record.finish_reason, Some(FinishReason::Stop));
    assert_eq!(record.items, 2);
}

#[test]
fn without_usage_each_token_bearing_choice_is_a_token() {
    let (manual, meter, memory) = setup();
    let tool_call = chat_chunk(
        r#"{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t","type":"function",
            "function":{"name":"f","arguments":"{"}}]}}"#,
        "null",
    );
    let refusal = chat_chunk(r#"{"index":0,"delta":{"refusal":"no"}}"#, "null");
    let items = vec![role(), tool_call, refusal, finish("tool_calls")];
    let request = meter.series(&Labels::client("chat")).start();
    let count = block_on(meter_chat_stream(chat_stream(&manual, items), request).count());
    assert_eq!(count, 4);

    let record = only(&memory);
    assert_eq!(
        record.ttft,
        Some(2 * MS),
        "a tool-call delta is the first token"
    );
    assert_eq!((record.input_tokens, record.output_tokens), (None, 2));
    assert_eq!(record.finish_reason, Some(FinishReason::ToolCalls));
}

#[test]
fn input_tokens_from_usage_can_be_turned_off() {
    let (manual, meter, memory) = setup();
    let mut request = meter.series(&Labels::client("chat")).start();
    request.set_input_tokens(12);
    let items = vec![content("a"), usage(9, 1)];
    let metered = meter_chat_stream(chat_stream(&manual, items), request);
    let _ = block_on(metered.input_tokens_from_usage(false).count());
    assert_eq!(only(&memory).input_tokens, Some(12));
}

#[test]
fn completion_text_is_a_token() {
    let (manual, meter, memory) = setup();
    let chunk = |text: &str, finish: &str| -> Result<CreateCompletionResponse, OpenAIError> {
        let json = format!(
            r#"{{"id":"x","object":"text_completion","created":0,"model":"m",
                "choices":[{{"text":"{text}","index":0,"finish_reason":{finish}}}]}}"#
        );
        Ok(serde_json::from_str(&json).expect("a completion chunk"))
    };
    let items = vec![
        chunk("", "null"),
        chunk("Once", "null"),
        chunk(" upon", "\"length\""),
    ];
    let manual_for_stream = manual.clone();
    let stream: CompletionResponseStream =
        Box::pin(stream::iter(items).inspect(move |_| manual_for_stream.advance(MS)));
    let request = meter.series(&Labels::client("text_completion")).start();
    let _ = block_on(meter_completion_stream(stream, request).count());

    let record = only(&memory);
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!((record.ttft, record.output_tokens), (Some(2 * MS), 2));
    assert_eq!(record.finish_reason, Some(FinishReason::Length));
}

#[test]
fn an_error_item_ends_the_request_once_and_the_items_go_on() {
    let (manual, meter, memory) = setup();
    let request = meter.series(&Labels::client("chat")).start();
    let items = vec![role(), content("a"), Err(broken()), content("b")];
    let seen: Vec<ChatItem> =
        block_on(meter_chat_stream(chat_stream(&manual, items), request).collect());
    assert_eq!(seen.len(), 4, "every item is yielded");
    assert!(matches!(seen[2], Err(OpenAIError::StreamError(_))));

    let record = only(&memory);
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::Transport));
    assert_eq!(record.output_tokens, 1, "nothing counted after the end");
}

#[test]
fn dropping_the_stream_early_is_cancelled() {
    let (manual, meter, memory) = setup();
    let request = meter.series(&Labels::client("chat")).start();
    let items = vec![role(), content("a"), content("b"), finish("stop")];
    let mut metered = meter_chat_stream(chat_stream(&manual, items), request);
    block_on(async {
        metered.next().await;
        metered.next().await;
    });
    assert!(memory.records().is_empty(), "still running");
    drop(metered);
    let record = only(&memory);
    assert_eq!(
        (record.outcome, record.output_tokens),
        (Outcome::Cancelled, 1)
    );
}

#[test]
fn errors_are_classified_like_the_reqwest_helper() {
    let cases = [
        (
            api_error(429, Some("rate_limit_error"), None),
            ErrorClass::RateLimited,
        ),
        (
            api_error(404, Some("invalid_request_error"), Some("not_found")),
            ErrorClass::ClientError,
        ),
        (api_error(500, None, None), ErrorClass::ServerError),
        (api_error(503, None, None), ErrorClass::Overloaded),
        (api_error(504, None, None), ErrorClass::Timeout),
        (
            api_error(529, Some("overloaded_error"), None),
            ErrorClass::Overloaded,
        ),
        (
            api_error(400, None, Some("rate_limit_exceeded")),
            ErrorClass::RateLimited,
        ),
        (
            in_stream(r#"{"error":{"message":"boom","type":"server_error"}}"#),
            ErrorClass::ServerError,
        ),
        (
            in_stream(r#"{"error":{"message":"slow","code":429}}"#),
            ErrorClass::RateLimited,
        ),
        (in_stream(r#"{"choices":"#), ErrorClass::Transport),
        (
            in_stream(r#"{"choices":[{"delta":7}]}"#),
            ErrorClass::Transport,
        ),
        (broken(), ErrorClass::Transport),
        (
            OpenAIError::InvalidArgument("no".to_owned()),
            ErrorClass::ClientError,
        ),
        (
            OpenAIError::FileReadError("no".to_owned()),
            ErrorClass::Other,
        ),
    ];
    for (error, class) in cases {
        assert_eq!(error_class(&error), class, "{error}");
    }
}

#[test]
fn send_ends_the_request_when_there_is_no_stream() {
    let (_manual, meter, memory) = setup();
    let series = meter.series(&Labels::client("chat"));
    let create = async { Err::<ChatCompletionResponseStream, _>(api_error(429, None, None)) };
    let error = block_on(send(create, series.start())).expect_err("no stream");
    assert!(matches!(&error, OpenAIError::ApiError(e) if e.status_code == 429));
    let record = only(&memory);
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::RateLimited));
    assert_eq!(record.ttft, None);
}

#[test]
fn send_meters_the_stream_it_gets() {
    let (manual, meter, memory) = setup();
    let series = meter.series(&Labels::client("chat"));
    let stream = chat_stream(
        &manual,
        vec![role(), content("a"), finish("stop"), usage(3, 1)],
    );
    let create = async { Ok::<_, OpenAIError>(stream) };
    let metered = block_on(send(create, series.start())).expect("a stream");
    assert_eq!(block_on(metered.count()), 4);
    let record = only(&memory);
    assert_eq!(
        (record.outcome, record.output_tokens),
        (Outcome::Success, 1)
    );
}
