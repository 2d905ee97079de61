//! What an OpenAI-compatible payload tells the request: an SSE data event, or a whole JSON
//! response, read with [`tokenmeter_openai::chunk::parse`].

use tokenmeter::{ErrorClass, Outcome, Request};
use tokenmeter_openai::chunk::{self, ChunkError, Parsed};

use crate::sse::{Event, Kind};

/// The stream's terminator.
const DONE: &[u8] = b"[DONE]";

/// Applies one SSE event to `request`. The outcome is `Some` when the event ends the request:
/// `[DONE]` or a Responses API stream's last event, `response.completed` or
/// `response.incomplete` (success), or an error object, `event: error`, a Responses
/// `response.failed` or `error` event (error with its class); the flag is true for a chunk
/// with `usage`, no token and no `metrics` (the final usage chunk).
///
/// Token-bearing deltas (content, reasoning, tool calls; a Responses text, reasoning or
/// function-call arguments delta) count as one item each; the role frame and other deltas
/// without a token are frames. `usage` sets the output and input tokens. Data that is not a
/// completion chunk counts as a frame: the meter does not invent a failure the client may
/// not see.
pub(crate) fn apply_event(request: &mut Request, event: Event<'_>) -> (Option<Outcome>, bool) {
    if event.data.trim_ascii() == DONE {
        return (Some(Outcome::Success), false);
    }
    let parsed = std::str::from_utf8(event.data)
        .map_err(|e| ChunkError::Malformed(e.to_string()))
        .and_then(chunk::parse);
    match (parsed, event.kind) {
        (Ok(parsed), kind) => {
            apply_parsed(request, &parsed);
            request.record_tokens(parsed.tokens);
            // The final usage chunk, with no `metrics` of its own: where the layer's go.
            let usage_only = parsed.usage.is_some()
                && parsed.tokens == 0
                && parsed.metrics.is_none()
                && !parsed.terminal;
            let outcome = match kind {
                Kind::Error => Some(Outcome::Error(ErrorClass::ServerError)),
                Kind::Message => parsed.terminal.then_some(Outcome::Success),
            };
            (outcome, usage_only)
        }
        (Err(ChunkError::Server(error)), _) => (Some(Outcome::Error(error.class)), false),
        (Err(ChunkError::Malformed(_)), Kind::Error) => {
            (Some(Outcome::Error(ErrorClass::ServerError)), false)
        }
        (Err(ChunkError::Malformed(_)), Kind::Message) => {
            request.record_tokens(0);
            (None, false)
        }
    }
}

pub(crate) fn apply_json(request: &mut Request, body: &[u8]) -> Outcome {
    let parsed = std::str::from_utf8(body)
        .map_err(|e| ChunkError::Malformed(e.to_string()))
        .and_then(chunk::parse);
    match parsed {
        Ok(parsed) => {
            apply_parsed(request, &parsed);
            Outcome::Success
        }
        Err(ChunkError::Server(error)) => Outcome::Error(error.class),
        Err(ChunkError::Malformed(_)) => Outcome::Success,
    }
}

fn apply_parsed(request: &mut Request, parsed: &Parsed) {
    if let Some(reason) = parsed.finish {
        request.set_finish_reason(reason);
    }
    if let Some(usage) = parsed.usage {
        if let Some(output) = usage.completion_tokens {
            request.set_output_tokens(output);
        }
        if let Some(input) = usage.prompt_tokens {
            request.set_input_tokens(input);
        }
    }
}
