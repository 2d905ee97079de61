//! Which phase caused a breach, said in one sentence.

use serde::Serialize;

use crate::spec::{LatencyMetric, Objective, ObjectiveKind};
use crate::window::Counts;

/// What mostly caused an objective's breach.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Cause {
    /// Time in the queue before scheduling.
    Queueing,
    /// Prefill (prompt processing).
    Prefill,
    /// Time outside the engine's phases (network, the path to the client), or phases unknown.
    Other,
    /// Decode: the time between tokens.
    Decode,
    /// Failed, degraded or rate-limited requests.
    Errors,
    /// The time to first token, not split: the data hold no queue or prefill time (a
    /// client's view), so queue, prefill and the network cannot be told apart.
    FirstToken,
    /// The end-to-end time: its objective alone does not tell the first token from decode.
    EndToEnd,
}

impl Cause {
    /// What to do about it.
    pub const fn advice(self) -> &'static str {
        match self {
            Cause::Queueing => "scale on queue depth",
            Cause::Prefill => {
                "prompts are long or prefill is slow: cap input length, cache prefixes or add prefill capacity"
            }
            Cause::Other => {
                "the time is outside queue and prefill: check the network path and the first decode step"
            }
            Cause::Decode => "decode is slow: lower the maximum batch size or add decode capacity",
            Cause::Errors => "look at the errors by class",
            Cause::FirstToken => {
                "queue, prefill and the network are not told apart here: read the server's queue and prefill times to place it"
            }
            Cause::EndToEnd => {
                "compare the TTFT and TPOT objectives (or add them) to tell the first token from decode"
            }
        }
    }

    /// A short noun for the sentence.
    pub const fn as_str(self) -> &'static str {
        match self {
            Cause::Queueing => "queueing",
            Cause::Prefill => "prefill",
            Cause::Other => "outside queue and prefill",
            Cause::Decode => "decode",
            Cause::Errors => "errors",
            Cause::FirstToken => "time to first token",
            Cause::EndToEnd => "end-to-end time",
        }
    }
}

/// The diagnosis of one breached objective.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Diagnosis {
    /// The objective.
    pub objective: String,
    /// The window it was read over.
    pub window: String,
    /// Attainment over that window.
    pub attainment: f64,
    /// The target.
    pub target: f64,
    /// The dominant cause.
    pub cause: Cause,
    /// The cause's share of the excess (TTFT: of the phase time by which breaching requests
    /// exceed good ones), 0–1.
    pub share: f64,
    /// The whole diagnosis in one sentence.
    pub sentence: String,
}

/// Diagnoses `objective`, breached over `window` with `counts`.
pub(crate) fn diagnose(
    objective: &Objective,
    window: &str,
    counts: &Counts,
    index: usize,
) -> Diagnosis {
    let (good, events) = counts.objectives[index];
    let attainment = good as f64 / events.max(1) as f64;
    let (cause, share) = match objective.kind {
        ObjectiveKind::Latency {
            metric: LatencyMetric::Ttft,
            ..
        } => ttft_cause(counts),
        ObjectiveKind::Latency {
            metric: LatencyMetric::Queue,
            ..
        } => (Cause::Queueing, 1.0),
        ObjectiveKind::Latency {
            metric: LatencyMetric::Tpot,
            ..
        } => (Cause::Decode, 1.0),
        ObjectiveKind::Latency {
            metric: LatencyMetric::E2e,
            ..
        } => (Cause::EndToEnd, 1.0),
        _ => (Cause::Errors, 1.0),
    };
    let label = label(objective);
    let sentence = format!(
        "{label} breached over {window} (attainment {:.1}% < {:.1}%); {:.0}% of the excess is {}: {}",
        attainment * 100.0,
        objective.target * 100.0,
        share * 100.0,
        cause.as_str(),
        cause.advice()
    );
    Diagnosis {
        objective: objective.name.clone(),
        window: window.to_string(),
        attainment,
        target: objective.target,
        cause,
        share,
        sentence,
    }
}

/// "TTFT p95", "success rate", ...
fn label(objective: &Objective) -> String {
    match objective.kind {
        ObjectiveKind::Latency { metric, .. } => {
            format!(
                "{} p{}",
                metric.as_str().to_uppercase(),
                trim(objective.target * 100.0)
            )
        }
        _ => objective.name.replace('_', " "),
    }
}

fn trim(x: f64) -> String {
    let rounded = (x * 1000.0).round() / 1000.0;
    format!("{rounded}")
}

/// Splits the excess TTFT of breaching requests over good ones into queue, prefill and the rest.
fn ttft_cause(counts: &Counts) -> (Cause, f64) {
    let bad = &counts.ttft_bad;
    let ok = &counts.ttft_ok;
    if bad.n == 0 {
        return (Cause::Other, 0.0);
    }
    if bad.queue + bad.prefill + ok.queue + ok.prefill == 0.0 {
        // No phase was observed (a client's records): the whole TTFT is one unsplit phase.
        return (Cause::FirstToken, 1.0);
    }
    let mean = |sum: f64, n: u64| if n == 0 { 0.0 } else { sum / n as f64 };
    let phases = [
        (
            Cause::Queueing,
            mean(bad.queue, bad.n),
            mean(ok.queue, ok.n),
        ),
        (
            Cause::Prefill,
            mean(bad.prefill, bad.n),
            mean(ok.prefill, ok.n),
        ),
        (Cause::Other, mean(bad.other, bad.n), mean(ok.other, ok.n)),
    ];
    let excess: Vec<(Cause, f64)> = phases
        .iter()
        .map(|(c, b, o)| (*c, (b - o).max(0.0)))
        .collect();
    let total: f64 = excess.iter().map(|e| e.1).sum();
    let (weights, total) = if total > 0.0 {
        (excess, total)
    } else {
        let raw: Vec<(Cause, f64)> = phases.iter().map(|(c, b, _)| (*c, *b)).collect();
        let t = raw.iter().map(|e| e.1).sum();
        (raw, t)
    };
    let (cause, top) = weights
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((Cause::Other, 0.0));
    (cause, if total > 0.0 { top / total } else { 0.0 })
}
