//! `--enable-per-request-metrics`: the server's own timings of one request, in the `metrics`
//! object vLLM adds next to `usage` (the final usage chunk of a stream, or the whole answer).
//!
//! Every value is read from the request's core [`Request`] as the server metered it, when its
//! last token has been taken (before `[DONE]` or the JSON is handed over), so they are the
//! values its `/metrics` histograms observe (`tests/request_metrics.rs` checks their sums).
//!
//! The object is written by [`ServerMetrics::of`] (its table gives each field's value), the
//! writer the axum layer uses too. `queue_time_ms` is the engine's queue (scheduled − arrival);
//! `time_to_first_token_ms` is vLLM's, from scheduling (queue + this is the TTFT of the TTFT
//! histogram). A field whose events did not happen is left out. With `n` > 1, or a batch of
//! prompts, the first choice's.

use serde_json::Value;
use tokenmeter::Request;
use tokenmeter_openai::chunk::ServerMetrics;

/// The `metrics` object of `request`; `None` before its first token.
pub(crate) fn of(request: &Request) -> Option<Value> {
    ServerMetrics::of(request).map(|metrics| metrics.to_json())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokenmeter::{Labels, ManualClock, Meter};

    use super::*;

    #[test]
    fn the_timings_are_the_requests_own() {
        let clock = ManualClock::new();
        let (meter, _memory) = Meter::manual(&clock);
        let mut request = meter.series(&Labels::server("chat")).start();
        assert_eq!(of(&request), None, "no token yet");
        clock.advance(Duration::from_millis(4));
        request.mark_scheduled();
        clock.advance(Duration::from_millis(30));
        request.record_tokens(1);
        for _ in 0..4 {
            clock.advance(Duration::from_millis(10));
            request.record_tokens(1);
        }
        let metrics = of(&request).unwrap();
        let get = |k: &str| metrics[k].as_f64().unwrap();
        assert!((get("queue_time_ms") - 4.0).abs() < 1e-9);
        assert!((get("time_to_first_token_ms") - 30.0).abs() < 1e-9);
        assert!((get("generation_time_ms") - 40.0).abs() < 1e-9);
        assert!((get("mean_itl_ms") - 10.0).abs() < 1e-9);
        assert!((get("tokens_per_second") - 125.0).abs() < 1e-9);
        // What the bench reads back: the TTFT since arrival.
        let parsed = tokenmeter_openai::chunk::ServerMetrics::from_answer(
            &serde_json::json!({ "metrics": metrics }),
        )
        .unwrap();
        let back = parsed.ttft_since_arrival().unwrap().as_secs_f64();
        assert!((back - request.ttft().unwrap().as_secs_f64()).abs() < 1e-9);
        request.succeed();
    }
}
