//! `--enable-per-request-metrics`: the server's own timings of one request, in the `metrics`
//! object vLLM adds next to `usage` (the final usage chunk of a stream, or the whole answer).
//!
//! Every value is read from the request's core [`Request`] as the server metered it, when its
//! last token has been taken (before `[DONE]` or the JSON is handed over), so they are the
//! values its `/metrics` histograms observe:
//!
//! | Field | Value |
//! |---|---|
//! | `queue_time_ms` | scheduled − arrival (the engine's queue) |
//! | `time_to_first_token_ms` | first token − scheduled (vLLM's definition: the queue excluded; queue + this is the TTFT of `vllm:time_to_first_token_seconds`) |
//! | `generation_time_ms` | last token − first token |
//! | `mean_itl_ms` | generation time ÷ (output tokens − 1), with at least 2 tokens |
//! | `tokens_per_second` | output tokens ÷ generation time, when it is above 0 |
//!
//! A field whose events did not happen is left out. With `n` > 1, the first choice's.

use std::time::Duration;

use serde_json::{Map, Value};
use tokenmeter::Request;

fn ms(d: Duration) -> Value {
    Value::from(d.as_secs_f64() * 1e3)
}

/// The `metrics` object of `request`; `None` before its first token.
pub(crate) fn of(request: &Request) -> Option<Value> {
    let ttft = request.ttft()?;
    let queue = request.queue();
    let generation = request
        .time_to_last_token()
        .map_or(Duration::ZERO, |last| last.saturating_sub(ttft));
    let tokens = request.output_tokens();
    let mut out = Map::new();
    out.insert(
        "time_to_first_token_ms".into(),
        ms(ttft.saturating_sub(queue.unwrap_or_default())),
    );
    if let Some(queue) = queue {
        out.insert("queue_time_ms".into(), ms(queue));
    }
    out.insert("generation_time_ms".into(), ms(generation));
    if tokens >= 2 {
        out.insert(
            "mean_itl_ms".into(),
            ms(generation.div_f64((tokens - 1) as f64)),
        );
    }
    if !generation.is_zero() {
        let per_second = tokens as f64 / generation.as_secs_f64();
        out.insert("tokens_per_second".into(), Value::from(per_second));
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
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
