//! The per-request trace: raw timestamps of one request, one JSON line each (`--trace FILE`).
//!
//! Every offset is in integer nanoseconds since the start of the run (one monotonic clock), so
//! the summary can be recomputed exactly from the file.
//!
//! What the server chose (the response id, error messages) is held as [`ServerText`]: cleaned
//! by the run's sanitiser before it was stored, so nothing of the API key and no terminal
//! control sequence reaches the file.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::bench::sanitize::ServerText;

/// Token counts from the final `usage` object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Usage {
    /// `usage.prompt_tokens`.
    pub(crate) prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub(crate) completion_tokens: Option<u64>,
    /// A `usage` of the stream held a count that is not a non-negative integer (a float, a
    /// string, ...): it was ignored, as if absent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) unusable: bool,
}

impl From<tokenmeter_openai::chunk::Usage> for Usage {
    fn from(usage: tokenmeter_openai::chunk::Usage) -> Self {
        Self {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            unusable: usage.unusable,
        }
    }
}

/// `usage.completion_tokens` against the token-bearing chunks the stream carried, when no
/// stream could give both: fewer tokens than token-bearing chunks, or more than `max_tokens`.
/// `usage` is kept (vLLM's rule); the run reports how many requests disagreed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Discrepancy {
    /// What `usage` said.
    pub(crate) completion_tokens: u64,
    /// Token-bearing chunks seen.
    pub(crate) token_chunks: u64,
}

/// Everything measured about one request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Trace {
    /// Index in the run.
    pub(crate) id: u64,
    /// The sweep step's request rate, when sweeping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rate: Option<f64>,
    /// When the request was sent.
    pub(crate) send_ns: u64,
    /// When the first event carrying a token was parsed.
    pub(crate) first_token_ns: Option<u64>,
    /// When the request ended: the stream's end, the error, or the timeout.
    pub(crate) end_ns: u64,
    /// Every SSE data event (`[DONE]` excluded): `[offset_ns, tokens]`, tokens 0 for frames that
    /// carry none (role-only, usage, empty deltas).
    pub(crate) chunks: Vec<(u64, u32)>,
    /// Prompt tokens we sent (generated or estimated).
    pub(crate) input_tokens: u64,
    /// `max_tokens` asked for.
    pub(crate) max_tokens: u64,
    /// The final `usage`, when the server sent one.
    pub(crate) usage: Option<Usage>,
    /// Output tokens: `usage.completion_tokens`, else the sum over chunks.
    pub(crate) output_tokens: u64,
    /// `success`, `error`, `cancelled` or `degraded`.
    pub(crate) outcome: String,
    /// The error class label (`timeout`, `rate_limited`, ...), for errors.
    pub(crate) error_class: Option<String>,
    /// The finish reason the server gave.
    pub(crate) finish_reason: Option<String>,
    /// The HTTP status, when a response arrived.
    pub(crate) status: Option<u16>,
    /// What went wrong, for errors (sanitised: never contains a piece of the API key).
    pub(crate) error: Option<ServerText>,
    /// The response's `id` (its `x-request-id` header, else the chunks' `id`), sanitised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) response_id: Option<ServerText>,
    /// `usage.completion_tokens` disagreed with the stream (see [`Discrepancy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) usage_discrepancy: Option<Discrepancy>,
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn dur(ns: u64) -> Duration {
    Duration::from_nanos(ns)
}

impl Trace {
    /// Offset as stored in a trace.
    pub(crate) fn offset(d: Duration) -> u64 {
        ns(d)
    }

    /// Keeps the latest `usage` of the stream, and whether any was unusable.
    pub(crate) fn note_usage(&mut self, usage: tokenmeter_openai::chunk::Usage) {
        let unusable = self.usage.is_some_and(|u| u.unusable);
        let mut usage = Usage::from(usage);
        usage.unusable |= unusable;
        self.usage = Some(usage);
    }

    /// The outcome, parsed back.
    #[cfg(test)]
    pub(crate) fn outcome(&self) -> tokenmeter::Outcome {
        use tokenmeter::{ErrorClass, Outcome};
        match self.outcome.as_str() {
            "success" => Outcome::Success,
            "cancelled" => Outcome::Cancelled,
            "degraded" => Outcome::Degraded(tokenmeter::Degradation::Other),
            _ => Outcome::Error(
                self.error_class
                    .as_deref()
                    .and_then(ErrorClass::parse)
                    .unwrap_or(ErrorClass::Other),
            ),
        }
    }

    /// True for a full success.
    pub(crate) fn succeeded(&self) -> bool {
        self.outcome == "success"
    }

    /// First token − send (`vllm bench serve` TTFT).
    pub(crate) fn ttft(&self) -> Option<Duration> {
        self.first_token_ns
            .map(|first| dur(first.saturating_sub(self.send_ns)))
    }

    /// Last data event − send (`vllm bench serve` E2EL); the end − send when no event arrived.
    pub(crate) fn e2e(&self) -> Duration {
        let last = self.chunks.last().map_or(self.end_ns, |c| c.0);
        dur(last.saturating_sub(self.send_ns))
    }

    /// (E2EL − TTFT) / (output tokens − 1), for more than one output token.
    pub(crate) fn tpot(&self) -> Option<Duration> {
        let ttft = self.ttft()?;
        let steps = self.output_tokens.checked_sub(1).filter(|&n| n > 0)?;
        let decode = self.e2e().saturating_sub(ttft);
        Some(dur(ns(decode) / steps))
    }

    /// Gaps between consecutive token-bearing events.
    pub(crate) fn itls(&self) -> impl Iterator<Item = Duration> + '_ {
        let mut previous: Option<u64> = None;
        self.chunks
            .iter()
            .filter(|c| c.1 > 0)
            .filter_map(move |&(at, _)| {
                let gap = previous.map(|p| dur(at.saturating_sub(p)));
                previous = Some(at);
                gap
            })
    }

    /// Input tokens: `usage.prompt_tokens`, else what we sent.
    pub(crate) fn prompt_tokens(&self) -> u64 {
        self.usage
            .and_then(|u| u.prompt_tokens)
            .unwrap_or(self.input_tokens)
    }
}

/// Writes one JSON line per trace.
pub(crate) fn write_jsonl(path: &Path, traces: &[Trace]) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let file = std::fs::File::create(path)
        .with_context(|| format!("cannot create trace file {}; check --trace", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    for trace in traces {
        serde_json::to_writer(&mut out, trace)?;
        out.write_all(b"\n")?;
    }
    out.flush()
        .with_context(|| format!("cannot write trace file {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace() -> Trace {
        Trace {
            send_ns: 1_000,
            first_token_ns: Some(11_000),
            end_ns: 60_000,
            chunks: vec![
                (5_000, 0),
                (11_000, 1),
                (21_000, 2),
                (31_000, 1),
                (41_000, 0),
            ],
            output_tokens: 4,
            outcome: "success".into(),
            ..Trace::default()
        }
    }

    #[test]
    fn follows_the_vllm_bench_formulas() {
        let t = trace();
        assert_eq!(t.ttft(), Some(dur(10_000)));
        assert_eq!(t.e2e(), dur(40_000), "last data event − send");
        assert_eq!(t.tpot(), Some(dur(10_000)), "(40µs − 10µs) / 3");
        assert_eq!(t.itls().collect::<Vec<_>>(), [dur(10_000), dur(10_000)]);
        assert!(t.succeeded());
    }

    #[test]
    fn round_trips_through_json() {
        let t = trace();
        let line = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<Trace>(&line).unwrap(), t);
    }
}
