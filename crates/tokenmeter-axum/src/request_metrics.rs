//! [`MeterLayer::per_request_metrics`](crate::MeterLayer::per_request_metrics): vLLM's
//! per-request `metrics` object (`--enable-per-request-metrics`), written by
//! [`ServerMetrics::of`] from the layer's own measurement, added to the final usage chunk of a
//! stream the layer meters.

use bytes::Bytes;
use tokenmeter::Request;
use tokenmeter_openai::chunk::ServerMetrics;

/// Where in `frame` the `metrics` field goes for the usage event `event` read whole from it:
/// before the closing brace of its JSON object. `None` when the event was not read whole from
/// this frame (split across frames: its start is already sent) or does not end with `}`.
pub(crate) fn slot(frame: &[u8], event: &[u8]) -> Option<usize> {
    let base = frame.as_ptr() as usize;
    let start = (event.as_ptr() as usize).checked_sub(base)?;
    if start + event.len() > frame.len() {
        return None;
    }
    let trimmed = event.trim_ascii_end();
    (trimmed.last() == Some(&b'}')).then(|| start + trimmed.len() - 1)
}

/// `frame` with `,"metrics":{...}` of `request` inserted at `at`; `None` before the first token.
pub(crate) fn insert(frame: &Bytes, at: usize, request: &Request) -> Option<Bytes> {
    let metrics = ServerMetrics::of(request)?.to_json().to_string();
    let mut out = Vec::with_capacity(frame.len() + metrics.len() + 12);
    out.extend_from_slice(&frame[..at]);
    out.extend_from_slice(b",\"metrics\":");
    out.extend_from_slice(metrics.as_bytes());
    out.extend_from_slice(&frame[at..]);
    Some(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_is_the_closing_brace_of_an_event_inside_the_frame() {
        let frame = b"data: {\"choices\":[],\"usage\":{}} \n\n";
        // The event with a trailing space: the slot is its last `}`, at 6 + 24.
        let event = &frame[6..32];
        assert_eq!(slot(frame, event), Some(30));
        assert_eq!(frame[30], b'}');
        let elsewhere = b"{\"choices\":[]}".to_vec();
        assert_eq!(
            slot(frame, &elsewhere),
            None,
            "an event copied out of earlier frames"
        );
        assert_eq!(slot(frame, &frame[6..20]), None, "not a whole object");
    }
}
