//! Which figures a comparison reads, what each is called, which way is worse, and which of
//! them decide the exit code.

/// What a figure measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Measure {
    /// Time to first token, successful requests.
    Ttft,
    /// Time per output token, successful requests.
    Tpot,
    /// End to end, successful requests.
    E2e,
    /// Inter-token gaps pooled over successful requests.
    Itl,
    /// Successful / sent.
    SuccessRate,
    /// Good (succeeded and met every objective) / sent.
    Attainment,
    /// Successful requests per second.
    RequestThroughput,
    /// Output tokens of successful requests per second.
    OutputThroughput,
    /// Good requests per second.
    Goodput,
}

impl Measure {
    /// The latencies, in the order of the pooled side's sorted lists.
    pub(crate) const LATENCIES: [Self; 4] = [Self::Ttft, Self::Tpot, Self::E2e, Self::Itl];

    /// A rate per second of the run (requests, output tokens, good requests).
    pub(crate) fn is_rate(self) -> bool {
        matches!(
            self,
            Self::RequestThroughput | Self::OutputThroughput | Self::Goodput
        )
    }

    /// Its index among [`Self::LATENCIES`], for a latency.
    pub(crate) fn latency_index(self) -> Option<usize> {
        Self::LATENCIES.iter().position(|&m| m == self)
    }

    fn key(self) -> (&'static str, &'static str) {
        match self {
            Self::Ttft => ("ttft", "TTFT"),
            Self::Tpot => ("tpot", "TPOT"),
            Self::E2e => ("e2e", "E2E"),
            Self::Itl => ("itl", "ITL"),
            Self::SuccessRate => ("success_rate", "Success rate"),
            Self::Attainment => ("attainment", "Attainment"),
            Self::RequestThroughput => ("request_throughput", "Requests/s"),
            Self::OutputThroughput => ("output_throughput", "Output tok/s"),
            Self::Goodput => ("goodput", "Goodput (req/s)"),
        }
    }
}

/// A statistic of a latency's values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Stat {
    /// The percentile (numpy's linear interpolation).
    Percentile(f64),
    /// The mean.
    Mean,
}

/// One figure of a comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Figure {
    /// What it measures.
    pub(crate) measure: Measure,
    /// The statistic, for a latency; `None` for a rate or a fraction.
    pub(crate) stat: Option<Stat>,
    /// A significant regression of it fails the comparison.
    pub(crate) gates: bool,
}

impl Figure {
    /// The JSON name: `ttft_p95_ms`, `success_rate`, …
    pub(crate) fn name(&self) -> String {
        let (key, _) = self.measure.key();
        match self.stat {
            Some(Stat::Percentile(p)) => format!("{key}_p{p}_ms"),
            Some(Stat::Mean) => format!("{key}_mean_ms"),
            None => key.to_owned(),
        }
    }

    /// The table's label: `TTFT p95 (ms)`, `Success rate`, …
    pub(crate) fn label(&self) -> String {
        let (_, label) = self.measure.key();
        match self.stat {
            Some(Stat::Percentile(p)) => format!("{label} p{p} (ms)"),
            Some(Stat::Mean) => format!("{label} mean (ms)"),
            None => label.to_owned(),
        }
    }

    /// Larger is worse: latencies; for rates and fractions smaller is worse.
    pub(crate) fn higher_is_worse(&self) -> bool {
        self.measure.latency_index().is_some()
    }
}

/// Every figure compared, in the table's order; ITL's only when both sides hold the gaps.
/// The gating figures: TTFT, TPOT, E2E and ITL p95, success rate and goodput.
pub(crate) fn figures(itl: bool) -> Vec<Figure> {
    let mut out = Vec::new();
    for measure in Measure::LATENCIES {
        let percents: &[f64] = match measure {
            Measure::Itl if !itl => continue,
            Measure::Itl => &[50.0, 95.0, 99.0],
            _ => &[50.0, 90.0, 95.0, 99.0],
        };
        for &p in percents {
            out.push(Figure {
                measure,
                stat: Some(Stat::Percentile(p)),
                gates: p == 95.0,
            });
        }
        if measure != Measure::Itl {
            out.push(Figure {
                measure,
                stat: Some(Stat::Mean),
                gates: false,
            });
        }
    }
    for (measure, gates) in [
        (Measure::SuccessRate, true),
        (Measure::Attainment, false),
        (Measure::RequestThroughput, false),
        (Measure::OutputThroughput, false),
        (Measure::Goodput, true),
    ] {
        out.push(Figure {
            measure,
            stat: None,
            gates,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_and_their_gates() {
        let with = figures(true);
        let names: Vec<String> = with.iter().map(Figure::name).collect();
        assert_eq!(with.len(), 23, "{names:?}");
        assert!(names.contains(&"itl_p95_ms".to_owned()));
        assert_eq!(with[2].label(), "TTFT p95 (ms)");
        let gates: Vec<String> = with.iter().filter(|f| f.gates).map(Figure::name).collect();
        assert_eq!(
            gates,
            [
                "ttft_p95_ms",
                "tpot_p95_ms",
                "e2e_p95_ms",
                "itl_p95_ms",
                "success_rate",
                "goodput"
            ]
        );
        let without = figures(false);
        assert_eq!(without.len(), 20);
        assert!(without.iter().all(|f| f.measure != Measure::Itl));
        assert!(with[0].higher_is_worse() && !with.last().unwrap().higher_is_worse());
    }
}
