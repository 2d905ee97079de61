//! A trace line back into a [`Measured`]: its events are replayed through the core (a meter
//! on a clock set to each instant of the line), so the record is the core's, with the same
//! integer nanoseconds the line holds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::bail;
use tokenmeter::{
    Clock, Degradation, ErrorClass, FinishReason, Labels, Meter, Outcome, TimeSource,
};

use crate::gaps::GapSpan;
use crate::measured::Measured;
use crate::records::Records;
use crate::trace::Trace;

/// A clock the replay sets to any instant, backwards too (lines are not in time order).
#[derive(Debug, Default)]
struct Settable(AtomicU64);

impl TimeSource for Settable {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Acquire))
    }
}

/// Turns trace lines into the measurements they were written from.
#[derive(Debug)]
pub(crate) struct Replay {
    time: Arc<Settable>,
    meter: Meter,
    records: Records,
}

impl Default for Replay {
    fn default() -> Self {
        let time = Arc::new(Settable::default());
        let records = Records::default();
        let meter = Meter::builder()
            .clock(Clock::custom(time.clone()))
            .sink(records.clone())
            .build();
        Self {
            time,
            meter,
            records,
        }
    }
}

impl Replay {
    fn set(&self, ns: u64) {
        self.time.0.store(ns, Ordering::Release);
    }

    /// The measurement `trace` was written from; an error names a field that no trace holds.
    pub(crate) fn measured(&self, trace: &Trace) -> anyhow::Result<Measured> {
        let outcome = outcome(trace)?;
        let lost = trace.send_ns == 0
            && trace.end_ns == 0
            && trace.first_token_ns.is_none()
            && trace.chunks.is_empty()
            && matches!(
                outcome,
                Outcome::Cancelled | Outcome::Error(ErrorClass::Other)
            );
        let record = if lost {
            // A request cancelled by an interrupt, or whose task was lost: no record.
            None
        } else {
            self.record(trace, outcome)?
        };
        Ok(Measured {
            id: trace.id,
            rate: trace.rate,
            stage: u32::try_from(trace.stage).unwrap_or(u32::MAX),
            turn: trace.turn,
            // Traces do not keep the --slo-class: a merged run has no breakdown by it.
            slo_class: None,
            cancelled: record.is_none() && outcome == Outcome::Cancelled,
            record: record.map(crate::kept_record::KeptRecord::from),
            input_tokens: trace.input_tokens,
            input_exact: trace.input_exact,
            output_counted: trace.output_counted,
            not_streamed: trace.not_streamed,
            max_tokens: trace.max_tokens,
            usage: trace.usage,
            status: trace.status,
            rare: crate::rare::RareFields {
                error: trace.error.clone(),
                usage_discrepancy: trace.usage_discrepancy,
                oddities: trace.oddities,
                server_ttft: trace.server_ttft_ns.map(Duration::from_nanos),
                server_queue: trace.server_queue_ns.map(Duration::from_nanos),
                response_id: trace.response_id.clone(),
            }
            .into(),
            // Not settled yet: the record holds the chunk times.
            gaps: GapSpan::default(),
            max_gap: None,
            due: trace.due_ns.map(Duration::from_nanos),
            ready: trace.ready_ns.map(Duration::from_nanos),
        })
    }

    fn record(
        &self,
        trace: &Trace,
        outcome: Outcome,
    ) -> anyhow::Result<Option<tokenmeter::RequestRecord>> {
        if trace.end_ns < trace.send_ns {
            bail!(
                "end_ns {} is before send_ns {}",
                trace.end_ns,
                trace.send_ns
            );
        }
        if trace.first_token_ns != trace.chunks.first().map(|c| c.0) {
            bail!("first_token_ns is not the time of the first chunk");
        }
        self.set(trace.send_ns);
        let mut request = self
            .meter
            .series(&Labels::client("chat"))
            .start_at(Duration::from_nanos(trace.send_ns));
        request.set_input_tokens(trace.input_tokens);
        for &(at, tokens) in &trace.chunks {
            if at < trace.send_ns || tokens == 0 {
                bail!("chunk [{at}, {tokens}]: a chunk is [offset_ns ≥ send_ns, tokens > 0]");
            }
            request.record_tokens_at(tokens, Duration::from_nanos(at));
        }
        request.set_output_tokens(trace.output_tokens);
        if let Some(reason) = &trace.finish_reason {
            request.set_finish_reason(FinishReason::parse(reason));
        }
        if let Outcome::Degraded(how) = outcome {
            request.mark_degraded(how);
        }
        self.set(trace.end_ns);
        request.end(match outcome {
            Outcome::Degraded(_) => Outcome::Success,
            other => other,
        });
        Ok(self.records.end(request))
    }
}

/// The line's outcome (a degraded answer's reason is not in the trace: `_OTHER`).
fn outcome(trace: &Trace) -> anyhow::Result<Outcome> {
    Ok(match trace.outcome.as_str() {
        "success" => Outcome::Success,
        "cancelled" => Outcome::Cancelled,
        "degraded" => Outcome::Degraded(Degradation::Other),
        "error" => {
            let class = trace.error_class.as_deref().unwrap_or("_OTHER");
            match ErrorClass::parse(class) {
                Some(class) => Outcome::Error(class),
                None => bail!("error_class {class:?} is not one tokenmeter writes"),
            }
        }
        other => bail!("outcome {other:?}: one of success, error, cancelled, degraded"),
    })
}
