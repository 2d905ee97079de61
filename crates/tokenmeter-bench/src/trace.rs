//! The per-request trace (`--trace FILE`): one JSON line per request, written from the core's
//! record of it ([`Measured`]) as soon as the request ends ([`TraceWriter`]), in the order
//! requests end.
//!
//! Every offset is in integer nanoseconds since the start of the run (one monotonic clock): the
//! send, the first token, every token-bearing chunk and the end of the stream, so the summary
//! can be recomputed exactly from the file.
//!
//! What the server chose (the response id, error messages) is held as [`ServerText`]: cleaned
//! by the run's sanitiser before it was stored, so nothing of the API key and no terminal
//! control sequence reaches the file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::measured::{Measured, Usage};
use crate::oddities::Oddities;
use crate::rare::Discrepancy;
use crate::sanitize::ServerText;

/// Everything measured about one request, as written.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Trace {
    /// Index in the run.
    pub(crate) id: u64,
    /// The sweep step's request rate, when sweeping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rate: Option<f64>,
    /// The index of the stage that sent it, in a run of several stages (absent: 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) stage: usize,
    /// Its turn in a conversation (absent: 0, the first or a request alone).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub(crate) turn: u32,
    /// When the load model said it was due (`docs/src/reference/metrics.md`, "Timed from the
    /// schedule"): its arrival, its timestamp in a replay, when its slot opened in a closed
    /// loop. `send_ns − due_ns` is the client queue time. Absent in traces of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) due_ns: Option<u64>,
    /// When it could have left at the earliest: due, and a slot of the concurrency cap free.
    /// `send_ns − ready_ns` is the client's own dispatch lag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ready_ns: Option<u64>,
    /// When the request was sent.
    pub(crate) send_ns: u64,
    /// When the first chunk carrying a token was parsed.
    pub(crate) first_token_ns: Option<u64>,
    /// When the request ended: the stream's end, the error, or the timeout.
    pub(crate) end_ns: u64,
    /// Every chunk that carried a token: `[offset_ns, tokens]`, when it was parsed.
    pub(crate) chunks: Vec<(u64, u32)>,
    /// Prompt tokens we sent (generated or estimated).
    pub(crate) input_tokens: u64,
    /// `input_tokens` is exact (counted with `--tokenizer`, or given by the dataset).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) input_exact: bool,
    /// Output tokens are the streamed text counted with `--tokenizer` (no `usage` came).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) output_counted: bool,
    /// The answer came whole (`--no-stream`): no TPOT, ITL or time to second token.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) not_streamed: bool,
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
    /// Events the stream held that were skipped (another event type, empty data, comments)
    /// and chunks that gave a field twice (absent: none).
    #[serde(default, skip_serializing_if = "Oddities::is_none")]
    pub(crate) oddities: Oddities,
    /// The wall-clock time of the run's origin (offset 0), in nanoseconds since the Unix
    /// epoch: `tokenmeter bench merge` puts the traces of several processes on one time line
    /// with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) run_start_unix_ns: Option<u64>,
    /// The run's `--seed`: `tokenmeter bench merge` reports it (absent in traces of older
    /// versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) seed: Option<u64>,
    /// The `--shard I/N` that sent it, in a run split over processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shard: Option<String>,
    /// The server's TTFT of the request from its arrival, in nanoseconds, from the `metrics`
    /// object it sent (`queue_time_ms` + `time_to_first_token_ms`; vLLM's
    /// `--enable-per-request-metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) server_ttft_ns: Option<u64>,
    /// The server's queue time of the request in nanoseconds (`metrics.queue_time_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) server_queue_ns: Option<u64>,
}

/// What every line of one run's trace carries: the run's wall-clock origin, seed and shard.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TraceRun {
    /// See [`Trace::run_start_unix_ns`].
    pub(crate) run_start_unix_ns: Option<u64>,
    /// See [`Trace::seed`].
    pub(crate) seed: Option<u64>,
    /// See [`Trace::shard`].
    pub(crate) shard: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// Nanoseconds, saturating.
pub(crate) fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Trace {
    /// The line of `measured`.
    pub(crate) fn of(measured: &Measured) -> Self {
        let record = measured.record();
        let record = record.as_deref();
        let arrival = record.map_or(Duration::ZERO, |r| r.arrival);
        let outcome = measured.outcome();
        Self {
            id: measured.id,
            rate: measured.rate(),
            stage: measured.stage as usize,
            turn: measured.turn,
            due_ns: measured.due().map(ns),
            ready_ns: measured.ready().map(ns),
            send_ns: ns(arrival),
            first_token_ns: record.and_then(|r| r.ttft).map(|t| ns(arrival + t)),
            end_ns: record.map_or(0, |r| ns(r.end())),
            chunks: record
                .and_then(|r| r.item_times.as_deref())
                .unwrap_or_default()
                .iter()
                .map(|item| (ns(arrival + item.offset), item.tokens))
                .collect(),
            input_tokens: measured.input_tokens,
            input_exact: measured.input_exact,
            output_counted: measured.output_counted,
            not_streamed: measured.not_streamed,
            max_tokens: measured.max_tokens,
            usage: measured.usage(),
            output_tokens: measured.output_tokens(),
            outcome: outcome.as_str().to_owned(),
            error_class: outcome.error_class().map(|c| c.as_str().to_owned()),
            finish_reason: record
                .and_then(|r| r.finish_reason)
                .map(|f| f.as_str().to_owned()),
            status: measured.status,
            error: measured.rare.error.clone(),
            response_id: measured.response_id().cloned(),
            usage_discrepancy: measured.rare.usage_discrepancy,
            oddities: measured.rare.oddities,
            run_start_unix_ns: None,
            seed: None,
            shard: None,
            server_ttft_ns: measured.rare.server_ttft.map(ns),
            server_queue_ns: measured.rare.server_queue.map(ns),
        }
    }

    /// The line of `measured` in the run `run`.
    pub(crate) fn of_run(measured: &Measured, run: &TraceRun) -> Self {
        Self {
            run_start_unix_ns: run.run_start_unix_ns,
            seed: run.seed,
            shard: run.shard.clone(),
            ..Self::of(measured)
        }
    }
}

/// Writes the trace as the run goes: one JSON line per request, as it ends (so in the order
/// requests end, not by id), through a buffer.
///
/// A write that fails is remembered (the run goes on) and reported by [`finish`](Self::finish).
pub(crate) struct TraceWriter {
    out: Box<dyn Write + Send>,
    path: PathBuf,
    run: TraceRun,
    failed: Option<std::io::Error>,
}

impl std::fmt::Debug for TraceWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceWriter")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl TraceWriter {
    /// Creates (or truncates) the trace at `path` (`-`: stdout) for the run `run`.
    pub(crate) fn create(path: &Path, run: TraceRun) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let out: Box<dyn Write + Send> = if crate::console::is_stdout(path) {
            Box::new(std::io::BufWriter::new(crate::console::Stdout))
        } else {
            let file = std::fs::File::create(path).with_context(|| {
                format!("cannot create trace file {}; check --trace", path.display())
            })?;
            Box::new(std::io::BufWriter::new(file))
        };
        Ok(Self {
            out,
            path: path.to_owned(),
            run,
            failed: None,
        })
    }

    /// Writes the line of `measured` (whose record still holds its chunk times).
    pub(crate) fn write(&mut self, measured: &Measured) {
        if self.failed.is_some() {
            return;
        }
        let line = Trace::of_run(measured, &self.run);
        let written = serde_json::to_writer(&mut self.out, &line)
            .map_err(std::io::Error::from)
            .and_then(|()| self.out.write_all(b"\n"));
        self.failed = written.err();
    }

    /// Flushes the buffer; the first write that failed, if any, is the error.
    pub(crate) fn finish(mut self) -> anyhow::Result<()> {
        let flushed = match self.failed.take() {
            Some(error) => Err(error),
            None => self.out.flush(),
        };
        flushed.map_err(|error| {
            anyhow::anyhow!(
                "cannot write trace file {}: {error}",
                if crate::console::is_stdout(&self.path) {
                    "(stdout)".to_owned()
                } else {
                    self.path.display().to_string()
                }
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json() {
        let t = Trace {
            send_ns: 1_000,
            first_token_ns: Some(11_000),
            end_ns: 60_000,
            chunks: vec![(11_000, 1), (21_000, 2)],
            output_tokens: 3,
            outcome: "success".into(),
            ..Trace::default()
        };
        let line = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<Trace>(&line).unwrap(), t);
    }
}
