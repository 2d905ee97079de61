//! A run of several stages (`--stage`, a list of `--concurrency` levels): one line per stage in
//! the terminal and one summary per stage in the JSON, each computed from that stage's requests
//! alone with the same formulas as the run's.

use std::fmt::Write as _;

use serde::Serialize;

use crate::gaps::Gaps;
use crate::output::table::outcomes_line;
use crate::reqs::Reqs;
use crate::schedule::{Stage, StageInfo};
use crate::slo::Slo;
use crate::summary::{BenchSummary, summarize};

/// One stage's results.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StageResult {
    /// Index from 0, in the order run.
    pub(crate) index: usize,
    /// What the stage was.
    pub(crate) stage: StageInfo,
    /// Its requests' summary.
    pub(crate) summary: BenchSummary,
}

/// The results of each stage, from the measurements of the whole run.
pub(crate) fn results<'r>(
    stages: &[Stage],
    measured: impl Into<Reqs<'r>>,
    gaps: &Gaps,
    slo: &Slo,
) -> Vec<StageResult> {
    let measured: Reqs<'r> = measured.into();
    stages
        .iter()
        .enumerate()
        .map(|(index, stage)| {
            let mine = measured.filter(|m| m.stage as usize == index);
            StageResult {
                index,
                stage: StageInfo::from(stage),
                summary: summarize(&mine, gaps, slo),
            }
        })
        .collect()
}

/// The terminal's table of stages.
pub(crate) fn render(results: &[StageResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nby stage:");
    let _ = writeln!(
        out,
        "  {:>5}{:>8}{:>10}{:>12}{:>12}{:>12}{:>12}{:>12}  load · outcomes",
        "stage", "sent", "req/s", "out tok/s", "attainment", "p50 TTFT", "p99 TTFT", "p50 ITL"
    );
    for r in results {
        let s = &r.summary;
        let _ = writeln!(
            out,
            "  {:>5}{:>8}{:>10.2}{:>12.1}{:>11.1}%{:>10.1}ms{:>10.1}ms{:>10.2}ms  {} · {}",
            r.index + 1,
            s.requests,
            s.request_throughput,
            s.output_throughput,
            s.attainment * 100.0,
            s.ttft.p50 * 1e3,
            s.ttft.p99 * 1e3,
            s.itl.p50 * 1e3,
            r.stage.load,
            outcomes_line(&s.outcomes)
        );
    }
    out
}
