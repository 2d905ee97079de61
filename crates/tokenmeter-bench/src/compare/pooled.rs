//! [`Pooled`]: a side's requests laid out for resampling — every run's requests in one list,
//! each latency's values sorted once with the request they belong to — and the figures of a
//! resample given as each request's multiplicity.

use super::figures::{Figure, Measure, Stat};
use super::side::Side;
use crate::resample::{percentile_counted, percentile_unsorted};

/// One run's requests in the pooled list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunSpan {
    /// Its first request's index.
    pub(crate) start: usize,
    /// Its request count.
    pub(crate) len: usize,
    /// Its duration in seconds.
    pub(crate) duration_s: f64,
}

/// A side's requests, ready to be resampled.
#[derive(Debug)]
pub(crate) struct Pooled {
    ok: Vec<bool>,
    good: Vec<bool>,
    /// Output tokens of a successful request (0 for a failed one).
    output: Vec<f64>,
    /// TTFT, TPOT, E2E and ITL in ms of successful requests, ascending, with their request.
    sorted: [Vec<(f64, u32)>; 4],
    /// Each request's finite ITL gaps in `sorted` (0 for a failed one): the resample's gap
    /// count without a walk over every gap.
    gaps: Vec<u32>,
    /// The runs.
    pub(crate) runs: Vec<RunSpan>,
}

impl Pooled {
    /// Lays out `side`'s runs.
    pub(crate) fn of(side: &Side) -> Self {
        let mut pooled = Self {
            ok: Vec::new(),
            good: Vec::new(),
            output: Vec::new(),
            sorted: Default::default(),
            gaps: Vec::new(),
            runs: Vec::new(),
        };
        for run in &side.runs {
            pooled.runs.push(RunSpan {
                start: pooled.ok.len(),
                len: run.requests.len(),
                duration_s: run.duration_s,
            });
            for r in &run.requests {
                let i = pooled.ok.len() as u32;
                pooled.ok.push(r.ok);
                pooled.good.push(r.good);
                let finite = r.itl.iter().filter(|g| g.is_finite()).count();
                pooled.gaps.push(if r.ok { finite as u32 } else { 0 });
                pooled
                    .output
                    .push(if r.ok { r.output_tokens as f64 } else { 0.0 });
                if !r.ok {
                    continue;
                }
                for (list, value) in pooled.sorted.iter_mut().zip([r.ttft, r.tpot, r.e2e]) {
                    list.extend(value.filter(|v| v.is_finite()).map(|v| (v * 1e3, i)));
                }
                let gaps = r.itl.iter().filter(|g| g.is_finite());
                pooled.sorted[3].extend(gaps.map(|&g| (g * 1e3, i)));
            }
        }
        for list in &mut pooled.sorted {
            list.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        pooled
    }

    /// Requests in all runs.
    pub(crate) fn requests(&self) -> usize {
        self.ok.len()
    }

    /// The values of `figure`'s measure in the whole side (requests for a rate or fraction).
    pub(crate) fn sample_size(&self, figure: &Figure) -> u64 {
        match figure.measure.latency_index() {
            Some(l) => self.sorted[l].len() as u64,
            None => self.ok.len() as u64,
        }
    }

    /// The figures of the side itself (numpy's statistics of its values; rates over the sum
    /// of its runs' durations), into `out`.
    pub(crate) fn point(&self, figures: &[Figure], out: &mut Vec<f64>) {
        let ones = vec![1u32; self.ok.len()];
        let duration: f64 = self.runs.iter().map(|r| r.duration_s).sum();
        self.resampled(figures, &ones, duration, out);
        // The percentiles once more straight from the values: the same numbers as the summary's.
        for (figure, value) in figures.iter().zip(out.iter_mut()) {
            if let (Some(l), Some(Stat::Percentile(p))) =
                (figure.measure.latency_index(), figure.stat)
            {
                let mut values: Vec<f64> = self.sorted[l].iter().map(|v| v.0).collect();
                *value = percentile_unsorted(&mut values, p).unwrap_or(f64::NAN);
            }
        }
    }

    /// The figures of the resample in which request `i` appears `counts[i]` times and whose
    /// runs last `duration_s` in all, into `out` (NaN where the resample has no value).
    pub(crate) fn resampled(
        &self,
        figures: &[Figure],
        counts: &[u32],
        duration_s: f64,
        out: &mut Vec<f64>,
    ) {
        let mut sent = 0u64;
        let (mut ok, mut good, mut tokens, mut gaps) = (0u64, 0u64, 0.0, 0u64);
        for (i, &c) in counts.iter().enumerate() {
            let c = u64::from(c);
            sent += c;
            ok += c * u64::from(self.ok[i]);
            good += c * u64::from(self.good[i]);
            tokens += c as f64 * self.output[i];
            gaps += c * u64::from(self.gaps[i]);
        }
        // Each latency's value count and sum in the resample (ITL has no mean: its count is
        // the gaps', its sum unused).
        let mut totals = [(0u64, 0.0f64); 4];
        totals[3].0 = gaps;
        for (list, total) in self.sorted[..3].iter().zip(&mut totals) {
            for &(v, i) in list {
                let c = counts[i as usize];
                total.0 += u64::from(c);
                total.1 += f64::from(c) * v;
            }
        }
        let fraction = |x: u64| {
            if sent == 0 {
                f64::NAN
            } else {
                x as f64 / sent as f64
            }
        };
        let rate = |x: f64| {
            if duration_s > 0.0 {
                x / duration_s
            } else {
                f64::NAN
            }
        };
        out.clear();
        out.extend(figures.iter().map(|figure| match figure.measure {
            Measure::SuccessRate => fraction(ok),
            Measure::Attainment => fraction(good),
            Measure::RequestThroughput => rate(ok as f64),
            Measure::OutputThroughput => rate(tokens),
            Measure::Goodput => rate(good as f64),
            latency => {
                let l = latency.latency_index().unwrap_or_default();
                let (n, sum) = totals[l];
                match figure.stat {
                    Some(Stat::Percentile(p)) => {
                        percentile_counted(&self.sorted[l], counts, n, p).unwrap_or(f64::NAN)
                    }
                    _ if n == 0 => f64::NAN,
                    _ => sum / n as f64,
                }
            }
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::super::figures::figures;
    use super::super::side::{RequestFigures, RunRequests};
    use super::*;

    fn request(ok: bool, ttft: f64, gaps: &[f64]) -> RequestFigures {
        RequestFigures {
            ok,
            good: ok && ttft < 0.25,
            ttft: ok.then_some(ttft),
            tpot: ok.then_some(0.01),
            e2e: ok.then_some(ttft + 0.5),
            output_tokens: 10,
            itl: gaps.to_vec(),
        }
    }

    #[test]
    fn the_point_figures_are_the_summarys() {
        let side = Side {
            runs: vec![
                RunRequests {
                    requests: vec![
                        request(true, 0.1, &[0.01, 0.03]),
                        request(true, 0.3, &[0.02]),
                    ],
                    duration_s: 2.0,
                },
                RunRequests {
                    requests: vec![request(false, 9.0, &[]), request(true, 0.2, &[0.04])],
                    duration_s: 2.0,
                },
            ],
            itl_known: true,
            ..Side::default()
        };
        let pooled = Pooled::of(&side);
        let figures = figures(true);
        let mut point = Vec::new();
        pooled.point(&figures, &mut point);
        let value = |name: &str| point[figures.iter().position(|f| f.name() == name).unwrap()];
        assert!((value("ttft_p50_ms") - 200.0).abs() < 1e-9);
        assert!((value("ttft_mean_ms") - 200.0).abs() < 1e-9);
        assert!((value("itl_p50_ms") - 25.0).abs() < 1e-9);
        assert_eq!(value("success_rate"), 0.75);
        assert_eq!(value("attainment"), 0.5);
        assert_eq!(value("request_throughput"), 0.75);
        assert_eq!(value("output_throughput"), 7.5);
        assert_eq!(value("goodput"), 0.5);
        // Counting request 1 twice and request 0 not at all: its TTFT weighs double.
        let mut counted = Vec::new();
        pooled.resampled(&figures, &[0, 2, 1, 1], 4.0, &mut counted);
        let at = |name: &str| counted[figures.iter().position(|f| f.name() == name).unwrap()];
        assert!((at("ttft_mean_ms") - (300.0 * 2.0 + 200.0) / 3.0).abs() < 1e-9);
        assert!((at("itl_p50_ms") - 20.0).abs() < 1e-9);
        assert_eq!(at("success_rate"), 0.75);
    }
}
