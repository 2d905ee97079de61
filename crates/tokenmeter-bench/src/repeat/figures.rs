//! The figures reported across repeated runs, and how each is read from one run and from all
//! runs pooled: latency percentiles from the requests as the run's summary reads them, rates
//! over the runs' summed durations, the attainment over every request sent.

use tokenmeter::report::{Bounds, Confidence, Summary, percentile, quantile_bounds, wilson};

use super::across::AcrossRuns;
use crate::finished::Run;
use crate::gaps::Gaps;
use crate::measured::Measured;
use crate::reqs::Reqs;
use crate::summary::BenchSummary;

/// A latency of the run's summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Latency {
    Ttft,
    Tpot,
    Itl,
    E2e,
}

/// A percentile the table reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum P {
    P50,
    P95,
    P99,
}

impl P {
    fn percent(self) -> f64 {
        match self {
            Self::P50 => 50.0,
            Self::P95 => 95.0,
            Self::P99 => 99.0,
        }
    }

    /// This percentile of a summary, or `None` for no sample.
    fn of(self, summary: &Summary) -> Option<f64> {
        (summary.count > 0).then_some(match self {
            Self::P50 => summary.p50,
            Self::P95 => summary.p95,
            Self::P99 => summary.p99,
        })
    }
}

/// How a figure is read.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// A percentile of a latency (seconds).
    Percentile(Latency, P),
    /// Successful requests per second.
    RequestRate,
    /// Output tokens of successful requests per second.
    OutputRate,
    /// Good requests per second.
    Goodput,
    /// Good requests over requests sent.
    Attainment,
}

/// One figure: its JSON key, its label, its unit, how it is read.
struct Figure(&'static str, &'static str, &'static str, Kind);

/// The figures, in the table's order.
const FIGURES: [Figure; 13] = [
    Figure(
        "ttft_p50",
        "TTFT p50",
        "s",
        Kind::Percentile(Latency::Ttft, P::P50),
    ),
    Figure(
        "ttft_p95",
        "TTFT p95",
        "s",
        Kind::Percentile(Latency::Ttft, P::P95),
    ),
    Figure(
        "ttft_p99",
        "TTFT p99",
        "s",
        Kind::Percentile(Latency::Ttft, P::P99),
    ),
    Figure(
        "tpot_p50",
        "TPOT p50",
        "s",
        Kind::Percentile(Latency::Tpot, P::P50),
    ),
    Figure(
        "tpot_p95",
        "TPOT p95",
        "s",
        Kind::Percentile(Latency::Tpot, P::P95),
    ),
    Figure(
        "itl_p50",
        "ITL p50",
        "s",
        Kind::Percentile(Latency::Itl, P::P50),
    ),
    Figure(
        "itl_p95",
        "ITL p95",
        "s",
        Kind::Percentile(Latency::Itl, P::P95),
    ),
    Figure(
        "e2e_p50",
        "E2E p50",
        "s",
        Kind::Percentile(Latency::E2e, P::P50),
    ),
    Figure(
        "e2e_p95",
        "E2E p95",
        "s",
        Kind::Percentile(Latency::E2e, P::P95),
    ),
    Figure(
        "request_throughput",
        "throughput",
        "req/s",
        Kind::RequestRate,
    ),
    Figure("output_throughput", "output", "tok/s", Kind::OutputRate),
    Figure("goodput", "goodput", "req/s", Kind::Goodput),
    Figure("attainment", "attainment", "fraction", Kind::Attainment),
];

/// Every figure of `runs` at `level`.
pub(super) fn of(runs: &[Run], level: Confidence) -> Vec<AcrossRuns> {
    let parts: Vec<Part<'_>> = runs
        .iter()
        .map(|run| Part {
            measured: (&run.collected.measured).into(),
            gaps: &run.collected.gaps,
            summary: &run.summary,
        })
        .collect();
    of_parts(&parts, level)
}

/// What the figures read of one run: its requests, their gaps and its summary.
pub(super) struct Part<'a> {
    pub(super) measured: Reqs<'a>,
    pub(super) gaps: &'a Gaps,
    pub(super) summary: &'a BenchSummary,
}

/// Every figure of the runs `parts` at `level`.
pub(super) fn of_parts(parts: &[Part<'_>], level: Confidence) -> Vec<AcrossRuns> {
    let pooled = Pooled::of(parts);
    FIGURES
        .iter()
        .map(|Figure(name, label, unit, kind)| {
            let each: Vec<Option<f64>> = parts
                .iter()
                .map(|run| one_run(run.summary, *kind))
                .collect();
            let (mean, mean_bounds) = AcrossRuns::mean_of(&each, level);
            let mean_bounds = possible(mean_bounds, unit);
            let (value, bounds) = pooled.figure(*kind, level);
            AcrossRuns {
                name,
                label,
                unit,
                runs: each,
                mean,
                mean_bounds,
                pooled: value,
                pooled_bounds: bounds,
            }
        })
        .collect()
}

/// `bounds` clipped to the values the figure can take (every figure is at least 0; a
/// fraction at most 1): the true mean lies there, so the clipped interval covers it as often.
fn possible(bounds: Bounds, unit: &str) -> Bounds {
    match bounds {
        Bounds::Within { lo, hi } => {
            let top = if unit == "fraction" {
                1.0
            } else {
                f64::INFINITY
            };
            Bounds::Within {
                lo: lo.clamp(0.0, top),
                hi: hi.clamp(0.0, top),
            }
        }
        too_few => too_few,
    }
}

/// The figure of one run, as its own report prints it; `None` for a latency of a run where
/// no request succeeded.
fn one_run(s: &BenchSummary, kind: Kind) -> Option<f64> {
    match kind {
        Kind::Percentile(latency, percent) => {
            let summary = match latency {
                Latency::Ttft => &s.ttft,
                Latency::Tpot => &s.tpot,
                Latency::Itl => &s.itl,
                Latency::E2e => &s.e2e,
            };
            percent.of(summary)
        }
        Kind::RequestRate => Some(s.request_throughput),
        Kind::OutputRate => Some(s.output_throughput),
        Kind::Goodput => Some(s.goodput),
        Kind::Attainment => (s.requests > 0).then_some(s.attainment),
    }
}

/// All runs' requests as one sample: each latency's values sorted, the counts, the durations.
struct Pooled {
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    itl: Vec<f64>,
    e2e: Vec<f64>,
    sent: u64,
    successful: u64,
    good: u64,
    output_tokens: u64,
    duration_s: f64,
}

impl Pooled {
    fn of(runs: &[Part<'_>]) -> Self {
        let ok = || {
            runs.iter().flat_map(|run| {
                run.measured
                    .iter()
                    .filter(|m| m.succeeded())
                    .map(move |m| (run, m))
            })
        };
        let sorted = |values: Vec<f64>| {
            let mut values: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
            values.sort_by(f64::total_cmp);
            values
        };
        let ttft = |m: &Measured| m.record().and_then(|r| r.ttft);
        Self {
            ttft: sorted(ok().filter_map(|(_, m)| ttft(&m)).map(secs).collect()),
            tpot: sorted(ok().filter_map(|(_, m)| m.tpot_seconds()).collect()),
            itl: sorted(
                ok().flat_map(|(run, m)| run.gaps.raw(m.gaps))
                    .map(|ns| ns as f64 / 1e9)
                    .collect(),
            ),
            e2e: sorted(ok().filter_map(|(_, m)| m.latency()).map(secs).collect()),
            sent: runs.iter().map(|r| r.summary.requests).sum(),
            successful: runs.iter().map(|r| r.summary.successful).sum(),
            good: runs.iter().map(|r| r.summary.good_requests).sum(),
            output_tokens: runs
                .iter()
                .map(|r| r.summary.total_output_tokens)
                .fold(0, u64::saturating_add),
            duration_s: runs.iter().map(|r| r.summary.duration_s.max(0.0)).sum(),
        }
    }

    /// The pooled figure and its interval.
    fn figure(&self, kind: Kind, level: Confidence) -> (Option<f64>, Option<Bounds>) {
        let rate = |count: u64| (self.duration_s > 0.0).then(|| count as f64 / self.duration_s);
        match kind {
            Kind::Percentile(latency, percent) => {
                let sorted = match latency {
                    Latency::Ttft => &self.ttft,
                    Latency::Tpot => &self.tpot,
                    Latency::Itl => &self.itl,
                    Latency::E2e => &self.e2e,
                };
                let percent = percent.percent();
                (
                    percentile(sorted, percent),
                    Some(quantile_bounds(sorted, percent, level)),
                )
            }
            Kind::RequestRate => (rate(self.successful), None),
            Kind::OutputRate => (rate(self.output_tokens), None),
            Kind::Goodput => (rate(self.good), None),
            Kind::Attainment => {
                let value = (self.sent > 0).then(|| self.good as f64 / self.sent as f64);
                let bounds = match wilson(self.good, self.sent, level.z()) {
                    Some((lo, hi)) => Bounds::Within { lo, hi },
                    None => Bounds::TooFew {
                        have: self.sent,
                        need: 1,
                    },
                };
                (value, Some(bounds))
            }
        }
    }
}

fn secs(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64()
}
