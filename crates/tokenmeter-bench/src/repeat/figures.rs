//! The figures reported across repeated runs, and how each is read from one run and from all
//! runs pooled: latency percentiles from the requests as the run's summary reads them, rates
//! over the runs' summed durations, the attainment over every request sent.

use tokenmeter::report::{Bounds, Confidence, Summary, percentile, quantile_bounds, wilson};

use super::across::AcrossRuns;
use crate::finished::Run;
use crate::gaps::Gaps;
use crate::measured::Measured;
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
            measured: &run.collected.measured,
            gaps: &run.collected.gaps,
            summary: &run.summary,
        })
        .collect();
    of_parts(&parts, level)
}

/// What the figures read of one run: its requests, their gaps and its summary.
struct Part<'a> {
    measured: &'a [Measured],
    gaps: &'a Gaps,
    summary: &'a BenchSummary,
}

/// Every figure of the runs `parts` at `level`.
fn of_parts(parts: &[Part<'_>], level: Confidence) -> Vec<AcrossRuns> {
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
        let ttft = |m: &Measured| m.record.as_ref().and_then(|r| r.ttft);
        Self {
            ttft: sorted(ok().filter_map(|(_, m)| ttft(m)).map(secs).collect()),
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokenmeter::ErrorClass;

    use super::*;
    use crate::slo::Slo;
    use crate::summary::summarize;
    use crate::tests::manual_run::{MS, Run as Manual};

    /// `ttfts` successes of 3 tokens 10 ms apart, sent 100 ms apart, and `errors` errors.
    fn run(ttfts: &[u32], errors: usize) -> Manual {
        let mut run = Manual::new();
        let mut at = Duration::ZERO;
        for ttft in ttfts {
            run.ok(at, MS * *ttft, 10 * MS, 3);
            at += 100 * MS;
        }
        for _ in 0..errors {
            run.error(at, at + MS, ErrorClass::ServerError);
            at += 100 * MS;
        }
        run
    }

    #[test]
    fn pooled_is_one_sample_of_every_run_and_each_run_its_own_summary() {
        let slo: Slo = "ttft=35ms".parse().unwrap();
        let (a, b) = (run(&[10, 20, 30], 0), run(&[40, 50, 60, 70], 1));
        let summaries = [&a, &b].map(|r| summarize(&r.measured, &r.gaps, &slo));
        let parts: Vec<Part<'_>> = [&a, &b]
            .iter()
            .zip(&summaries)
            .map(|(r, summary)| Part {
                measured: &r.measured,
                gaps: &r.gaps,
                summary,
            })
            .collect();
        let figures = of_parts(&parts, Confidence::P95);
        let get = |name: &str| figures.iter().find(|f| f.name == name).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;

        // Each run's TTFT p50 is its own summary's; the mean is theirs.
        let p50 = get("ttft_p50");
        assert!(close(p50.runs[0].unwrap(), 0.020) && close(p50.runs[1].unwrap(), 0.055));
        assert!(close(p50.mean.unwrap(), 0.0375));
        // Pooled: the median of the seven TTFTs 10..70 ms, with an order-statistic interval
        // (7 samples are enough for a median at 95%), and no p95 interval (needs 72).
        assert!(close(p50.pooled.unwrap(), 0.040));
        let (lo, hi) = p50.pooled_bounds.unwrap().interval().unwrap();
        assert!(lo < 0.040 && 0.040 < hi, "{lo} {hi}");
        assert_eq!(
            get("ttft_p95").pooled_bounds,
            Some(Bounds::TooFew { have: 7, need: 72 })
        );
        // ITL: every gap is 10 ms, in every run.
        assert!(close(get("itl_p95").pooled.unwrap(), 0.010));

        // Rates pool over the summed durations; no interval of their own.
        let duration = summaries[0].duration_s + summaries[1].duration_s;
        let rate = get("request_throughput");
        assert!(close(rate.pooled.unwrap(), 7.0 / duration));
        assert_eq!(rate.pooled_bounds, None);
        assert!(close(
            rate.runs[0].unwrap(),
            summaries[0].request_throughput
        ));

        // Attainment: good (TTFT ≤ 35 ms: 3 of 3, then 0 of 5) over all sent, Wilson.
        let attainment = get("attainment");
        assert_eq!(attainment.runs, vec![Some(1.0), Some(0.0)]);
        // Its t interval (0.5 ± 6.35) is clipped to what an attainment can be.
        assert_eq!(attainment.mean_bounds, Bounds::Within { lo: 0.0, hi: 1.0 });
        let (lo, _) = get("ttft_p50").mean_bounds.interval().unwrap();
        assert!(lo >= 0.0, "a latency is not negative: {lo}");
        assert!(close(attainment.pooled.unwrap(), 3.0 / 8.0));
        let (lo, hi) = wilson(3, 8, Confidence::P95.z()).unwrap();
        assert_eq!(attainment.pooled_bounds, Some(Bounds::Within { lo, hi }));
        assert_eq!(figures.len(), FIGURES.len());
    }

    #[test]
    fn a_run_with_no_success_has_no_latency_and_is_left_out_of_the_mean() {
        let slo = Slo::default();
        let (a, b) = (run(&[10, 30], 0), run(&[], 2));
        let summaries = [&a, &b].map(|r| summarize(&r.measured, &r.gaps, &slo));
        let parts: Vec<Part<'_>> = [&a, &b]
            .iter()
            .zip(&summaries)
            .map(|(r, summary)| Part {
                measured: &r.measured,
                gaps: &r.gaps,
                summary,
            })
            .collect();
        let figures = of_parts(&parts, Confidence::P95);
        let p50 = figures.iter().find(|f| f.name == "ttft_p50").unwrap();
        assert!((p50.runs[0].unwrap() - 0.020).abs() < 1e-9 && p50.runs[1].is_none());
        assert_eq!(p50.mean, p50.runs[0]);
        assert_eq!(p50.mean_bounds, Bounds::TooFew { have: 1, need: 2 });
    }
}
