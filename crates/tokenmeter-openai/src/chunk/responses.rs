//! The typed events of OpenAI's Responses API (`POST /v1/responses` with `"stream": true`),
//! read into the same [`Parsed`] as a chat chunk, so that TTFT, ITL and token counts mean
//! the same on both endpoints.
//!
//! An event is told from a chat chunk by its content: a `type` that starts with `response.`,
//! or is `error`. Then:
//!
//! | Event `type` | Read as |
//! |---|---|
//! | `response.output_text.delta`, `response.refusal.delta`, `response.function_call_arguments.delta` | one token-bearing delta, as a chat `content` or `tool_calls` delta |
//! | `response.reasoning_text.delta`, `response.reasoning_summary_text.delta` | one token-bearing delta that carries only reasoning |
//! | `response.completed` | the end of the stream ([`Parsed::terminal`], as `[DONE]` is); finish `stop`; `response.usage` gives the tokens (`input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`) |
//! | `response.incomplete`, or `response.completed` whose `response.status` is `incomplete` (as vLLM sends a response cut at `max_output_tokens`) | finish from `response.incomplete_details.reason` (`max_output_tokens` is `length`); the end and usage as above |
//! | `response.failed` | the server's error, classed from `response.error` |
//! | `error` | the server's error, classed from the event's `code` |
//! | any other `response.*` (created, in progress, items and parts added or done, text done) | a frame without tokens |
//!
//! The response `id` is read from the events that carry the `response` object. A whole
//! (non-streaming) answer, `{"object":"response",...}`, reads as the `response.completed` event
//! that would carry it.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokenmeter::FinishReason;

use super::{ChunkError, Parsed, Usage, fields, server_error};

/// True for the `type` of a Responses API event.
pub(super) fn is_event(kind: &str) -> bool {
    kind.starts_with("response.") || kind == "error"
}

/// The `response` object of an event, as far as the meter reads it.
#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
    #[serde(borrow, default)]
    status: Option<&'a RawValue>,
    #[serde(borrow, default)]
    incomplete_details: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// What one Responses event carried. `delta` and `response` are the event's fields of those
/// names, `data` the whole event (read again only for an `error` event).
pub(super) fn parsed(
    kind: &str,
    delta: Option<&RawValue>,
    response: Option<&RawValue>,
    data: &str,
) -> Result<Parsed, ChunkError> {
    let mut parsed = Parsed::default();
    match kind {
        "error" => return Err(error(data)),
        "response.output_text.delta"
        | "response.refusal.delta"
        | "response.function_call_arguments.delta" => parsed.tokens = bears(delta),
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            parsed.tokens = bears(delta);
            parsed.reasoning = parsed.tokens;
        }
        _ => {}
    }
    parsed.terminal = matches!(kind, "response.completed" | "response.incomplete");
    let Some(response) = response.and_then(|r| serde_json::from_str::<Response<'_>>(r.get()).ok())
    else {
        return Ok(parsed);
    };
    parsed.id = response.id.map(Cow::into_owned);
    match kind {
        "response.failed" => return Err(failed(response.error)),
        "response.completed" if response.status.is_none_or(|s| s.get() != r#""incomplete""#) => {
            parsed.finish = Some(FinishReason::Stop);
        }
        "response.completed" | "response.incomplete" => {
            parsed.finish = Some(incomplete(response.incomplete_details));
        }
        _ => {}
    }
    if parsed.terminal
        && let Some((usage, duplicate)) = response.usage.and_then(usage)
    {
        parsed.usage = Some(usage);
        parsed.duplicate_keys |= duplicate;
    }
    Ok(parsed)
}

/// The text of a Responses event: the `delta` of a text, refusal or reasoning delta event,
/// else empty.
pub(super) fn text(kind: &str, delta: Option<&RawValue>) -> String {
    let texts = matches!(
        kind,
        "response.output_text.delta"
            | "response.refusal.delta"
            | "response.reasoning_text.delta"
            | "response.reasoning_summary_text.delta"
    );
    delta
        .filter(|_| texts)
        .and_then(|d| serde_json::from_str::<String>(d.get()).ok())
        .unwrap_or_default()
}

/// One token-bearing delta when `delta` is a string (an empty one too: a token that decoded
/// to no text, as an empty chat `content` without a role is), else none.
fn bears(delta: Option<&RawValue>) -> u32 {
    u32::from(delta.is_some_and(|d| d.get().trim_start().starts_with('"')))
}

/// The finish reason of `response.incomplete`, from its `incomplete_details` (see
/// [`incomplete_reason`]).
fn incomplete(details: Option<&RawValue>) -> FinishReason {
    let reason = details
        .and_then(|d| fields::fields(d, &["reason"]))
        .and_then(|f| f.values[0])
        .and_then(|r| serde_json::from_str::<Cow<'_, str>>(r.get()).ok());
    incomplete_reason(reason.as_deref())
}

/// The finish reason of a response that ended incomplete, from
/// `response.incomplete_details.reason`: `max_output_tokens` is the token limit, the others
/// as a chat finish reason of the same name reads, none `other`. The one mapping of both the
/// SSE parser and the async-openai helper.
pub(crate) fn incomplete_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("max_output_tokens") => FinishReason::Length,
        Some(other) => FinishReason::parse(other),
        None => FinishReason::Other,
    }
}

/// The error of `response.failed`: its `response.error`, classed as an error object is.
fn failed(error: Option<&RawValue>) -> ChunkError {
    let value = error
        .and_then(|e| serde_json::from_str::<serde_json::Value>(e.get()).ok())
        .filter(|e| !e.is_null())
        .unwrap_or_else(|| serde_json::Value::from("the response failed without an error"));
    ChunkError::Server(server_error(&value))
}

/// The error of an `error` event: `{"type":"error","code","message","param"}`.
fn error(data: &str) -> ChunkError {
    let value = serde_json::from_str::<serde_json::Value>(data).unwrap_or_default();
    ChunkError::Server(server_error(&value))
}

/// `response.usage` as a chat `usage` reads: `input_tokens` as `prompt_tokens`,
/// `output_tokens` as `completion_tokens`, `input_tokens_details.cached_tokens` as cached.
fn usage(raw: &RawValue) -> Option<(Usage, bool)> {
    const NAMES: &[&str; 3] = &["input_tokens", "output_tokens", "input_tokens_details"];
    Usage::named(raw, NAMES)
}

#[cfg(test)]
mod tests {
    use tokenmeter::{ErrorClass, FinishReason};

    use crate::chunk::{ChunkError, Parsed, ServerError, Usage, parse, text};

    fn event(kind: &str, rest: &str) -> String {
        format!(r#"{{"type":"{kind}","sequence_number":3{rest}}}"#)
    }

    fn response(status: &str, extra: &str) -> String {
        format!(
            r#","response":{{"id":"resp_7","object":"response","status":"{status}","output":[{{"type":"message","content":[{{"type":"output_text","text":"a b"}}]}}]{extra}}}"#
        )
    }

    #[test]
    fn each_delta_event_is_one_token_as_a_chat_delta_is() {
        for (kind, reasoning) in [
            ("response.output_text.delta", 0),
            ("response.refusal.delta", 0),
            ("response.function_call_arguments.delta", 0),
            ("response.reasoning_text.delta", 1),
            ("response.reasoning_summary_text.delta", 1),
        ] {
            let parsed = parse(&event(
                kind,
                r#","item_id":"m","output_index":0,"delta":" a""#,
            ))
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!((parsed.tokens, parsed.reasoning), (1, reasoning), "{kind}");
            assert_eq!(parsed.finish, None, "{kind}");
            // An empty delta is a token that decoded to no text; no delta, or not a string,
            // none.
            assert_eq!(parse(&event(kind, r#","delta":"""#)).unwrap().tokens, 1);
            assert_eq!(parse(&event(kind, "")).unwrap().tokens, 0);
            assert_eq!(parse(&event(kind, r#","delta":7"#)).unwrap().tokens, 0);
        }
        let delta = event("response.output_text.delta", r#","delta":"Hel\"lo""#);
        assert_eq!(text(&delta), "Hel\"lo");
        let arguments = event("response.function_call_arguments.delta", r#","delta":"{""#);
        assert_eq!(text(&arguments), "", "arguments are not the answer's text");
    }

    #[test]
    fn frames_without_tokens_keep_the_response_id() {
        for kind in [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.queued",
            "response.some_future_event",
        ] {
            let parsed = parse(&event(kind, &response("in_progress", r#","usage":null"#)))
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(
                (parsed.tokens, parsed.finish, parsed.usage, parsed.terminal),
                (0, None, None, false),
                "{kind}"
            );
            assert_eq!(parsed.id.as_deref(), Some("resp_7"), "{kind}");
            assert_eq!(text(&event(kind, "")), "");
        }
    }

    #[test]
    fn completed_gives_stop_and_the_usage_in_chat_terms() {
        let usage = r#","usage":{"input_tokens":8,"input_tokens_details":{"cached_tokens":4},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":11}"#;
        let parsed = parse(&event("response.completed", &response("completed", usage))).unwrap();
        let mut want = Usage::new(Some(8), Some(3));
        want.cached_tokens = Some(4);
        assert_eq!(
            parsed,
            Parsed {
                finish: Some(FinishReason::Stop),
                usage: Some(want),
                id: Some("resp_7".into()),
                terminal: true,
                ..Parsed::default()
            }
        );
        // A count that is not a count is ignored, as in a chat usage.
        let odd = r#","usage":{"input_tokens":8,"output_tokens":"3"}"#;
        let parsed = parse(&event("response.completed", &response("completed", odd))).unwrap();
        let usage = parsed.usage.unwrap();
        assert_eq!((usage.completion_tokens, usage.unusable), (None, true));
        let twice = r#","usage":{"output_tokens":1,"output_tokens":2}"#;
        let parsed = parse(&event("response.completed", &response("completed", twice))).unwrap();
        assert_eq!(parsed.usage.unwrap().completion_tokens, Some(2));
        assert!(parsed.duplicate_keys);
    }

    #[test]
    fn incomplete_gives_its_reason() {
        for (reason, finish) in [
            (r#"{"reason":"max_output_tokens"}"#, FinishReason::Length),
            (
                r#"{"reason":"content_filter"}"#,
                FinishReason::ContentFilter,
            ),
            (r#"{"reason":"something"}"#, FinishReason::Other),
            ("null", FinishReason::Other),
            ("7", FinishReason::Other),
        ] {
            let extra = format!(
                r#","incomplete_details":{reason},"usage":{{"input_tokens":2,"output_tokens":5}}"#
            );
            for kind in ["response.incomplete", "response.completed"] {
                let parsed = parse(&event(kind, &response("incomplete", &extra)))
                    .unwrap_or_else(|e| panic!("{reason}: {e}"));
                assert_eq!(parsed.finish, Some(finish), "{kind} {reason}");
                assert_eq!(parsed.usage.unwrap().completion_tokens, Some(5));
                assert!(parsed.terminal, "{kind} ends the stream");
            }
        }
    }

    #[test]
    fn failed_and_error_events_end_with_their_class() {
        let failed = |error: &str| {
            parse(&event(
                "response.failed",
                &response("failed", &format!(r#","error":{error}"#)),
            ))
        };
        let class = |result: Result<Parsed, ChunkError>| match result {
            Err(ChunkError::Server(ServerError { class, message })) => (class, message),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            class(failed(
                r#"{"code":"rate_limit_exceeded","message":"later"}"#
            )),
            (ErrorClass::RateLimited, "later".to_owned())
        );
        assert_eq!(
            class(failed(r#"{"code":"server_error","message":"boom"}"#)).0,
            ErrorClass::ServerError
        );
        assert_eq!(class(failed("null")).0, ErrorClass::ServerError);
        let error = |rest: &str| parse(&event("error", rest));
        assert_eq!(
            class(error(r#","code":"429","message":"slow down","param":null"#)),
            (ErrorClass::RateLimited, "slow down".to_owned())
        );
        assert_eq!(
            class(error(r#","code":null,"message":"x""#)).0,
            ErrorClass::ServerError
        );
    }

    #[test]
    fn a_whole_answer_reads_as_its_completed_event() {
        let whole = r#"{"id":"resp_1","object":"response","status":"completed","output":[],"usage":{"input_tokens":4,"output_tokens":6}}"#;
        let parsed = parse(whole).unwrap();
        assert_eq!(parsed.finish, Some(FinishReason::Stop));
        assert_eq!(parsed.usage, Some(Usage::new(Some(4), Some(6))));
        assert_eq!(parsed.id.as_deref(), Some("resp_1"));
    }

    #[test]
    fn a_chat_chunk_with_another_type_is_still_a_chat_chunk() {
        let chunk = r#"{"type":"chunk","choices":[{"delta":{"content":"a"}}]}"#;
        assert_eq!(parse(chunk).unwrap().tokens, 1);
    }

    /// Arbitrary event JSON never panics: every event type with every shape of its fields.
    #[test]
    fn arbitrary_events_never_panic() {
        let kinds = [
            "response.output_text.delta",
            "response.reasoning_text.delta",
            "response.function_call_arguments.delta",
            "response.completed",
            "response.incomplete",
            "response.failed",
            "response.created",
            "error",
            "response.",
        ];
        let values = [
            "null",
            "true",
            "-1",
            "1e400",
            "18446744073709551616",
            r#""""#,
            r#""\ud800""#,
            "[]",
            "[null,{}]",
            "{}",
            r#"{"usage":{"input_tokens":-1,"output_tokens":1e400},"incomplete_details":{"reason":null},"error":"x","id":5}"#,
            r#"{"usage":[],"incomplete_details":[],"error":{"code":99999999999999999999}}"#,
            r#"{"id":"a","id":"b","usage":{"input_tokens_details":{"cached_tokens":"x"}}}"#,
        ];
        let mut seen = 0;
        for kind in kinds {
            for field in ["delta", "response", "code", "message", "type"] {
                for value in values {
                    let data = format!(r#"{{"type":"{kind}","{field}":{value}}}"#);
                    let _ = parse(&data);
                    let _ = text(&data);
                    seen += 1;
                }
            }
        }
        // And a deterministic stream of random bytes cut from real events.
        let real = event(
            "response.completed",
            &response(
                "completed",
                r#","usage":{"input_tokens":8,"output_tokens":3}"#,
            ),
        );
        let bytes = real.as_bytes();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let cut = (state % bytes.len() as u64) as usize;
            let mut mangled = bytes.to_vec();
            mangled[cut] = (state >> 32) as u8;
            let data = String::from_utf8_lossy(&mangled[..(cut + 1).max(bytes.len() / 2)]);
            let _ = parse(&data);
            let _ = text(&data);
            seen += 1;
        }
        assert_eq!(seen, kinds.len() * 5 * values.len() + 2000);
    }
}
