//! `--no-stream`: one JSON answer instead of a stream. The whole answer arrives at once, so its
//! tokens are recorded at the instant the body has been read: TTFT = E2E (as `vllm bench
//! serve` reports a non-streaming request), TPOT 0 and no ITL; the output tokens are the
//! answer's `usage.completion_tokens` (one when it sent text without a usable count), its finish
//! reason the first choice's `finish_reason`.

use std::pin::Pin;

use serde_json::Value;
use tokenmeter::{ErrorClass, FinishReason, Request};
use tokenmeter_openai::{StatusError, TransportError as _};

use super::Client;
use crate::format::format_size;
use crate::kept_record::KeptRecord;
use crate::measured::Measured;

/// Why the body could not be read whole.
enum ReadError {
    Timeout,
    Cancelled,
    TooLarge,
    Transport(ErrorClass, String),
}

/// The body, at most `limit` bytes, before `deadline` and before `cancel`.
async fn read_body<F: Future<Output = ()>>(
    mut response: reqwest::Response,
    limit: usize,
    deadline: tokio::time::Instant,
    mut cancel: Pin<&mut F>,
) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.as_mut() => return Err(ReadError::Cancelled),
            next = tokio::time::timeout_at(deadline, response.chunk()) => next,
        };
        match next {
            Err(_) => return Err(ReadError::Timeout),
            Ok(Err(error)) => return Err(ReadError::Transport(error.class(), error.describe())),
            Ok(Ok(None)) => return Ok(body),
            Ok(Ok(Some(bytes))) => {
                if body.len() + bytes.len() > limit {
                    return Err(ReadError::TooLarge);
                }
                body.extend_from_slice(&bytes);
            }
        }
    }
}

/// `usage` of a JSON answer: counts that are non-negative integers, and whether any was not.
fn usage_of(answer: &Value) -> Option<tokenmeter_openai::chunk::Usage> {
    let usage = answer.get("usage").filter(|u| !u.is_null())?;
    let count = |name: &str| usage.get(name).filter(|v| !v.is_null());
    let prompt = count("prompt_tokens");
    let completion = count("completion_tokens");
    let mut parsed = tokenmeter_openai::chunk::Usage::new(
        prompt.and_then(Value::as_u64),
        completion.and_then(Value::as_u64),
    );
    parsed.unusable = prompt.is_some_and(|v| v.as_u64().is_none())
        || completion.is_some_and(|v| v.as_u64().is_none());
    parsed.cached_tokens = usage
        .get("prompt_tokens_details")
        .and_then(|d| d.get("cached_tokens"))
        .and_then(Value::as_u64);
    Some(parsed)
}

/// True when the answer's first choice carries text (chat `message.content` or `text`).
fn has_text(answer: &Value) -> bool {
    let choice = answer.get("choices").and_then(|c| c.get(0));
    let text = choice.and_then(|c| {
        c.get("message")
            .and_then(|m| m.get("content"))
            .or_else(|| c.get("text"))
    });
    text.and_then(Value::as_str).is_some_and(|t| !t.is_empty())
}

/// The first choice's `finish_reason`, when it gave one.
fn finish_reason_of(answer: &Value) -> Option<FinishReason> {
    let choice = answer.get("choices").and_then(|c| c.get(0))?;
    choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(FinishReason::parse)
}

impl Client {
    /// Reads a non-streaming answer and ends `request` with it.
    pub(super) async fn receive_plain<F: Future<Output = ()>>(
        &self,
        mut measured: Measured,
        mut request: Request,
        response: reqwest::Response,
        deadline: tokio::time::Instant,
        cancel: Pin<&mut F>,
    ) -> Measured {
        let status = response.status().as_u16();
        let limit = self.target.max_event_size;
        let body = match read_body(response, limit, deadline, cancel).await {
            Ok(body) => body,
            Err(ReadError::Cancelled) => return self.interrupted(measured, request),
            Err(ReadError::Timeout) => {
                let message = self.timeout_message("while reading the answer");
                return self.failed(measured, request, ErrorClass::Timeout, &message);
            }
            Err(ReadError::TooLarge) => {
                let message = format!(
                    "the answer is larger than --max-event-size ({}); raise it",
                    format_size(limit)
                );
                return self.failed(measured, request, ErrorClass::Transport, &message);
            }
            Err(ReadError::Transport(class, message)) => {
                let message = format!("reading the answer failed: {message}");
                return self.failed(measured, request, class, &message);
            }
        };
        let answer = serde_json::from_slice::<Value>(&body).ok();
        let error = answer
            .as_ref()
            .is_some_and(|a| a.get("error").is_some_and(|e| !e.is_null()));
        if !(200..300).contains(&status) || error {
            let error = StatusError::new(status, &body);
            let message = format!("HTTP {status}: {}", error.message);
            return self.failed(measured, request, error.class, &message);
        }
        let Some(answer) = answer else {
            let message = "the answer is not JSON (sent with --no-stream, a server answers one \
                           JSON object)";
            return self.failed(measured, request, ErrorClass::Other, message);
        };
        if let Some(metrics) = tokenmeter_openai::chunk::ServerMetrics::from_answer(&answer) {
            measured.note_server_metrics(&metrics);
        }
        let usage = usage_of(&answer);
        if let Some(usage) = usage {
            measured.note_usage(usage);
            if let Some(cached) = usage.cached_tokens {
                request.set_cached_input_tokens(cached);
            }
        }
        let tokens = usage
            .and_then(|u| u.completion_tokens)
            .unwrap_or(u64::from(has_text(&answer)));
        if tokens > 0 {
            let at = self.clock.now();
            request.record_tokens_at(u32::try_from(tokens).unwrap_or(u32::MAX), at);
            request.set_output_tokens(tokens);
        }
        if let Some(reason) = finish_reason_of(&answer) {
            request.set_finish_reason(reason);
        }
        measured.not_streamed = true;
        if tokens == 0 {
            // No text and no completion tokens: vLLM's bench fails such an answer too.
            let message = "the answer carried no output (no text, completion_tokens 0 or absent)";
            return self.failed(measured, request, ErrorClass::EmptyResponse, message);
        }
        let id = request.id();
        request.succeed();
        measured.record = self.records.take(id).map(KeptRecord::from);
        measured
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_and_text_are_read_from_the_answer() {
        let answer: Value = serde_json::from_str(
            r#"{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":3,"completion_tokens":2.5}}"#,
        )
        .unwrap();
        let usage = usage_of(&answer).unwrap();
        assert_eq!(
            (usage.prompt_tokens, usage.completion_tokens),
            (Some(3), None)
        );
        assert!(usage.unusable);
        assert!(has_text(&answer));
        assert!(!has_text(&serde_json::json!({"choices":[{"text":""}]})));
        assert!(usage_of(&serde_json::json!({"usage": null})).is_none());
        assert_eq!(finish_reason_of(&answer), None);
        let done = serde_json::json!({"choices":[{"message":{},"finish_reason":"length"}]});
        assert_eq!(finish_reason_of(&done), Some(FinishReason::Length));
    }
}
