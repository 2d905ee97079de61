//! [`StreamChunk`] for async-openai's Responses API events ([`ResponseStreamEvent`]): the
//! same reading as the SSE parser's (`crate::chunk`), from async-openai's typed events.

use ::async_openai::types::responses::{Response, ResponseStreamEvent, Status};
use tokenmeter::{ErrorClass, FinishReason, Observation};

use super::chunks::{StreamChunk, sealed::Sealed};
use crate::chunk::{self, ChunkError, Usage, incomplete_reason};

impl Sealed for ResponseStreamEvent {
    const ENDS_WITH_EVENT: bool = true;

    fn ends_stream(&self) -> bool {
        matches!(
            self,
            Self::ResponseCompleted(_) | Self::ResponseIncomplete(_)
        )
    }
}

impl StreamChunk for ResponseStreamEvent {
    #[inline]
    fn observation(&self) -> Observation {
        match self {
            Self::ResponseOutputTextDelta(_)
            | Self::ResponseRefusalDelta(_)
            | Self::ResponseFunctionCallArgumentsDelta(_) => Observation::tokens(1),
            Self::ResponseReasoningTextDelta(_) | Self::ResponseReasoningSummaryTextDelta(_) => {
                Observation::reasoning(1)
            }
            Self::ResponseCompleted(event) => Observation::frame().with_finish(finish(
                &event.response,
                event.response.status == Status::Incomplete,
            )),
            Self::ResponseIncomplete(event) => {
                Observation::frame().with_finish(finish(&event.response, true))
            }
            Self::ResponseFailed(_) | Self::ResponseError(_) => Observation::error(class(self)),
            _ => Observation::frame(),
        }
    }

    fn usage(&self) -> Option<Usage> {
        let response = match self {
            Self::ResponseCompleted(event) => &event.response,
            Self::ResponseIncomplete(event) => &event.response,
            _ => return None,
        };
        response.usage.as_ref().map(|usage| {
            let mut counts = Usage::new(
                Some(u64::from(usage.input_tokens)),
                Some(u64::from(usage.output_tokens)),
            );
            counts.cached_tokens = Some(u64::from(usage.input_tokens_details.cached_tokens));
            counts
        })
    }
}

/// The finish reason of the response a last event carries: `stop`, or the reason it is
/// `incomplete` (as vLLM sends a response cut at `max_output_tokens` in `response.completed`).
fn finish(response: &Response, incomplete: bool) -> FinishReason {
    if incomplete {
        let details = response.incomplete_details.as_ref();
        incomplete_reason(details.map(|details| details.reason.as_str()))
    } else {
        FinishReason::Stop
    }
}

/// The class of `response.failed` or `error`: the event written back as the server sent it
/// and classed by the SSE parser (once per stream, on its failure).
fn class(event: &ResponseStreamEvent) -> ErrorClass {
    let data = serde_json::to_string(event).unwrap_or_default();
    match chunk::parse(&data) {
        Err(ChunkError::Server(error)) => error.class,
        _ => ErrorClass::ServerError,
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
