//! Which phase grew: when the time from the schedule to the first token or to the end grew
//! through a run, the part of the request that grew with it, named from the data at hand.
//!
//! The successful first turns, ordered by when they were due, are cut in thirds; each phase's
//! median over the first third is held against its median over the last:
//!
//! | Phase | Per request | Needs |
//! |---|---|---|
//! | `client queue` | send − due: the wait in the client, for a slot or for the client | — |
//! | `server queue` | the server's own queue time | the server's per-request `metrics` |
//! | `prefill` | the server's TTFT − its queue time | the server's per-request `metrics` |
//! | `network and client` | the client's TTFT − the server's | the server's per-request `metrics` |
//! | `before the first token` | the client's TTFT (queue, prefill and network together) | — (used without the server's metrics) |
//! | `decode` | E2E − TTFT: from the first token to the last | — |
//!
//! The phase that grew the most, by more than [`GREW`] and by more than half of its first
//! value, is named; the others that grew as much are listed after it.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use tokenmeter::report::percentile;

use crate::measured::Measured;
use crate::reqs::Reqs;

/// A phase grew when its median rose by more than this (and by more than half).
pub(crate) const GREW: Duration = Duration::from_millis(10);

/// One phase, at the start and at the end of the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Phase {
    /// Its name (see the module).
    pub(crate) name: &'static str,
    /// Median over the first third of requests (s).
    pub(crate) first: f64,
    /// Median over the last third (s).
    pub(crate) last: f64,
}

impl Phase {
    fn grew(&self) -> bool {
        let by = self.last - self.first;
        by > GREW.as_secs_f64() && by > 0.5 * self.first
    }
}

/// The phases of a run and the one that grew.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Phases {
    /// Every phase that could be measured.
    pub(crate) phases: Vec<Phase>,
    /// The phases that grew, the most first.
    pub(crate) grew: Vec<&'static str>,
    /// In words, when one grew.
    pub(crate) diagnosis: Option<String>,
}

type Part = fn(&Measured) -> Option<Duration>;

fn server_ttft(m: &Measured) -> Option<Duration> {
    m.rare.server_ttft
}

fn client_ttft(m: &Measured) -> Option<Duration> {
    m.record()?.ttft
}

/// Whole nanoseconds of `d` (saturating at 584 years): what a request's times are.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The p50 (s) of `value` over the first and the last of `parts` equal parts of the
/// successful first turns that have it, ordered by due time; `None` with fewer than two
/// requests a part. (The load check holds quarters against each other, [`of`] thirds.)
///
/// Each request is held in 16 bytes (due time and value in nanoseconds, in the order of the
/// `Duration`s: a request's times are whole nanoseconds), not 32 as a pair of `Duration`s.
pub(crate) fn medians_at_ends<'r>(
    measured: impl Into<Reqs<'r>>,
    value: impl Fn(&Measured) -> Option<Duration>,
    parts: usize,
) -> Option<(f64, f64)> {
    let measured: Reqs<'r> = measured.into();
    let mut timed: Vec<(u64, u64)> = measured
        .iter()
        .filter(|m| m.turn == 0 && m.succeeded())
        .filter_map(|m| Some((nanos(m.due()?), nanos(value(&m)?))))
        .collect();
    let part = timed.len() / parts.max(1);
    if part < 2 {
        return None;
    }
    timed.sort_unstable();
    let median = |of: &[(u64, u64)]| {
        let mut seconds: Vec<f64> = of
            .iter()
            .map(|&(_, v)| Duration::from_nanos(v).as_secs_f64())
            .collect();
        seconds.sort_by(f64::total_cmp);
        percentile(&seconds, 50.0)
    };
    Some((
        median(&timed[..part])?,
        median(&timed[timed.len() - part..])?,
    ))
}

/// The phases of `measured` (see the module); empty with fewer than 9 successful first turns.
pub(crate) fn of<'r>(measured: impl Into<Reqs<'r>>) -> Phases {
    let measured: Reqs<'r> = measured.into();
    // Filtered again where needed, not collected: no list of the requests is held.
    let ok = || {
        measured
            .iter()
            .filter(|m| m.turn == 0 && m.succeeded() && m.due().is_some())
    };
    if ok().nth(8).is_none() {
        return Phases::default();
    }
    let with_server = ok().all(|m| m.rare.server_ttft.is_some() && m.rare.server_queue.is_some());
    let mut parts: Vec<(&'static str, Part)> = vec![("client queue", Measured::client_queue)];
    if with_server {
        parts.push(("server queue", |m| m.rare.server_queue));
        parts.push(("prefill", |m| {
            Some(server_ttft(m)?.saturating_sub(m.rare.server_queue?))
        }));
        parts.push(("network and client", |m| {
            Some(client_ttft(m)?.saturating_sub(server_ttft(m)?))
        }));
    } else {
        parts.push(("before the first token", client_ttft));
    }
    parts.push(("decode", |m| {
        let record = m.record()?;
        Some(m.latency()?.saturating_sub(record.ttft?))
    }));
    let phases: Vec<Phase> = parts
        .into_iter()
        .filter_map(|(name, part)| {
            let (first, last) = medians_at_ends(measured, part, 3)?;
            Some(Phase { name, first, last })
        })
        .collect();
    let mut grew: Vec<&Phase> = phases.iter().filter(|p| p.grew()).collect();
    grew.sort_by(|a, b| (b.last - b.first).total_cmp(&(a.last - a.first)));
    let diagnosis = grew.first().map(|top| {
        let ms = |s: f64| s * 1e3;
        let mut text = format!(
            "{} grew the most through the run: {:.1} ms (median of the first third of \
             requests) to {:.1} ms (the last third)",
            top.name,
            ms(top.first),
            ms(top.last)
        );
        for other in &grew[1..] {
            let _ = write!(
                text,
                "; {} too, {:.1} to {:.1} ms",
                other.name,
                ms(other.first),
                ms(other.last)
            );
        }
        if !with_server && top.name == "before the first token" {
            text.push_str(
                " (the server's queue and prefill are told apart when it sends per-request \
                 metrics, as vLLM's --enable-per-request-metrics does)",
            );
        }
        text
    });
    Phases {
        grew: grew.iter().map(|p| p.name).collect(),
        phases,
        diagnosis,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::manual_run::{MS, Run};

    /// 12 requests 100 ms apart: request k waits `queue(k)` in the server (reported in its
    /// metrics when `metrics`), then 20 ms of prefill, then 5 tokens 10 ms apart.
    fn run(queue: impl Fn(u32) -> Duration, metrics: bool) -> Vec<Measured> {
        let mut run = Run::new();
        for k in 0..12u32 {
            let due = MS * (100 * k);
            let ttft = queue(k) + 20 * MS;
            run.ok(due, ttft, 10 * MS, 5);
            run.due(due, due);
            if metrics {
                let m = run.measured.last_mut().unwrap();
                m.rare.server_queue = Some(queue(k));
                m.rare.server_ttft = Some(ttft - MS / 2);
            }
        }
        run.measured
    }

    #[test]
    fn a_growing_server_queue_is_named_from_the_servers_metrics() {
        let phases = of(&run(|k| MS * (30 * k), true));
        assert_eq!(phases.grew, ["server queue"], "{phases:?}");
        let text = phases.diagnosis.unwrap();
        assert!(text.starts_with("server queue grew the most"), "{text}");
    }

    #[test]
    fn without_the_servers_metrics_the_time_to_first_token_is_named() {
        let phases = of(&run(|k| MS * (30 * k), false));
        assert_eq!(phases.grew, ["before the first token"], "{phases:?}");
        assert!(phases.diagnosis.unwrap().contains("per-request metrics"));
    }

    #[test]
    fn a_steady_run_names_nothing() {
        let phases = of(&run(|k| MS * (k % 3), true));
        assert!(
            phases.grew.is_empty() && phases.diagnosis.is_none(),
            "{phases:?}"
        );
        assert_eq!(phases.phases.len(), 5);
        assert!(
            of(&run(|_| MS, true)[..8]).phases.is_empty(),
            "too few requests"
        );
    }
}
