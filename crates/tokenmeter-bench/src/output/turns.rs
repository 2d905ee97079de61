//! A run of conversations (`--turns`, `--multi-turn`): TTFT and input length by turn, since a
//! later turn carries the history before it (a longer prompt, or a prefix the server may have
//! cached). One line per turn in the terminal, one summary per turn in the JSON (`turns`).

use std::fmt::Write as _;

use serde::Serialize;

use crate::gaps::Gaps;
use crate::reqs::Reqs;
use crate::slo::Slo;
use crate::summary::{BenchSummary, summarize};

/// One turn's results, over every conversation that reached it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TurnResult {
    /// The turn, from 0.
    pub(crate) turn: u32,
    /// Its requests' summary.
    pub(crate) summary: BenchSummary,
}

/// The results by turn, when some request is a later turn (`None` otherwise).
pub(crate) fn results<'r>(
    measured: impl Into<Reqs<'r>>,
    gaps: &Gaps,
    slo: &Slo,
) -> Option<Vec<TurnResult>> {
    let measured: Reqs<'r> = measured.into();
    let last = measured.iter().map(|m| m.turn).max().filter(|&t| t > 0)?;
    Some(
        (0..=last)
            .map(|turn| {
                let mine = measured.filter(|m| m.turn == turn);
                TurnResult {
                    turn,
                    summary: summarize(&mine, gaps, slo),
                }
            })
            .collect(),
    )
}

/// The terminal's table of turns.
pub(crate) fn render(results: &[TurnResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nby turn (each carries the conversation before it):");
    let _ = writeln!(
        out,
        "  {:>5}{:>8}{:>12}{:>12}{:>12}{:>12}",
        "turn", "sent", "input tok", "p50 TTFT", "p99 TTFT", "attainment"
    );
    for r in results {
        let s = &r.summary;
        let _ = writeln!(
            out,
            "  {:>5}{:>8}{:>12.0}{:>10.1}ms{:>10.1}ms{:>11.1}%",
            r.turn + 1,
            s.requests,
            s.input_tokens.mean,
            s.ttft.p50 * 1e3,
            s.ttft.p99 * 1e3,
            s.attainment * 100.0
        );
    }
    out
}
