//! The writer of vLLM's per-request `metrics` object ([`ServerMetrics::of`],
//! [`ServerMetrics::to_json`]): the one `tokenmeter serve` and the axum layer both add.

use std::time::Duration;

use serde_json::{Map, Value};
use tokenmeter::Request;

use super::ServerMetrics;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl ServerMetrics {
    /// vLLM's `metrics` object of a request as `request` measured it, read when its last
    /// token has been recorded; `None` before its first token. With vLLM's definitions:
    ///
    /// | Field | Value |
    /// |---|---|
    /// | `queue_time_ms` | scheduled − arrival; absent when the request was never marked scheduled |
    /// | `time_to_first_token_ms` | first token − scheduled (vLLM's: the queue excluded), or − arrival without a scheduled mark |
    /// | `generation_time_ms` | last token − first token |
    /// | `mean_itl_ms` | generation time ÷ (output tokens − 1), with at least 2 tokens |
    /// | `tokens_per_second` | output tokens ÷ generation time, when it is above 0 |
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter::{Labels, ManualClock, Meter};
    /// use tokenmeter_openai::chunk::ServerMetrics;
    ///
    /// let clock = ManualClock::new();
    /// let (meter, _records) = Meter::manual(&clock);
    /// let mut request = meter.series(&Labels::server("chat")).start();
    /// clock.advance(Duration::from_millis(30));
    /// request.record_tokens(1);
    /// clock.advance(Duration::from_millis(10));
    /// request.record_tokens(1);
    /// let metrics = ServerMetrics::of(&request).unwrap();
    /// assert_eq!(metrics.time_to_first_token_ms, Some(30.0));
    /// assert_eq!(metrics.queue_time_ms, None); // never marked scheduled
    /// assert_eq!(metrics.mean_itl_ms, Some(10.0));
    /// assert_eq!(metrics.to_json()["generation_time_ms"], 10.0);
    /// ```
    pub fn of(request: &Request) -> Option<Self> {
        let ttft = request.ttft()?;
        let queue = request.queue();
        let generation = request
            .time_to_last_token()
            .map_or(Duration::ZERO, |last| last.saturating_sub(ttft));
        let tokens = request.output_tokens();
        Some(Self {
            time_to_first_token_ms: Some(ms(ttft.saturating_sub(queue.unwrap_or_default()))),
            queue_time_ms: queue.map(ms),
            generation_time_ms: Some(ms(generation)),
            mean_itl_ms: (tokens >= 2).then(|| ms(generation.div_f64((tokens - 1) as f64))),
            tokens_per_second: (!generation.is_zero())
                .then(|| tokens as f64 / generation.as_secs_f64()),
            unusable: false,
        })
    }

    /// The object as vLLM writes it: the fields that are `Some`, in vLLM's order.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        for (name, value) in [
            ("time_to_first_token_ms", self.time_to_first_token_ms),
            ("queue_time_ms", self.queue_time_ms),
            ("generation_time_ms", self.generation_time_ms),
            ("mean_itl_ms", self.mean_itl_ms),
            ("tokens_per_second", self.tokens_per_second),
        ] {
            if let Some(value) = value {
                out.insert(name.into(), Value::from(value));
            }
        }
        Value::Object(out)
    }
}
