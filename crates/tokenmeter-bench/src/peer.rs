//! The peers' habits: vLLM's `--goodput ttft:500 tpot:50 e2el:1000` (milliseconds), folded
//! into the same objectives as `--slo` ([`Slo`]); `--percentile-metrics` and
//! `--metric-percentiles`; `--result-format vllm` and `--save-detailed`. The flag aliases
//! (`--request-rate`, `--num-prompts`, `--max-concurrency`, ...) sit on the flags themselves
//! in [`args`](crate::args).

use std::time::Duration;

use crate::slo::Slo;

/// What `--json` writes.
///
/// ```
/// use tokenmeter_bench::{BenchArgs, ResultFormat};
///
/// let mut args = BenchArgs::default();
/// assert_eq!(args.peer.result_format, ResultFormat::Tokenmeter);
/// args.peer.result_format = ResultFormat::Vllm;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultFormat {
    /// tokenmeter's own summary, with the `run` block.
    #[default]
    Tokenmeter,
    /// The keys `vllm bench serve --save-result` writes (single runs).
    Vllm,
}

/// A metric of `--percentile-metrics`.
///
/// ```
/// use tokenmeter_bench::{PeerArgs, PercentileMetric};
///
/// let mut peer = PeerArgs::default();
/// peer.percentile_metrics = Some(vec![PercentileMetric::Ttft, PercentileMetric::E2el]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PercentileMetric {
    /// Time to first token.
    Ttft,
    /// Time per output token.
    Tpot,
    /// Inter-token latency.
    Itl,
    /// End-to-end latency (to the last token).
    E2el,
    /// Client queue time: send − due, over every request sent (vLLM 0.33).
    ClientQueueTime,
    /// E2E from the schedule: client queue time + E2E, over every request sent, a failed
    /// one's E2E 0 (vLLM 0.33's `e2el_including_client_queue`).
    E2elIncludingClientQueue,
}

impl PercentileMetric {
    /// vLLM's name, in its keys (`mean_ttft_ms`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Ttft => "ttft",
            Self::Tpot => "tpot",
            Self::Itl => "itl",
            Self::E2el => "e2el",
            Self::ClientQueueTime => "client_queue_time",
            Self::E2elIncludingClientQueue => "e2el_including_client_queue",
        }
    }
}

/// The settings that follow `vllm bench serve`'s: part of [`BenchArgs`](crate::BenchArgs).
///
/// ```
/// use tokenmeter_bench::PeerArgs;
///
/// let mut peer = PeerArgs::default();
/// // vLLM's `--goodput ttft:500 tpot:50` and `--metric-percentiles 50,99`.
/// peer.goodput = vec!["ttft:500".to_owned(), "tpot:50".to_owned()];
/// peer.metric_percentiles = Some(vec![50.0, 99.0]);
/// assert!(!peer.save_detailed);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct PeerArgs {
    /// Goodput objectives in milliseconds, `KEY:VALUE` (vLLM's or AIPerf's keys), replacing `slo`; empty (default).
    pub goodput: Vec<String>,
    /// The metrics whose percentiles are reported; `None` (default): TTFT, TPOT, ITL and E2EL.
    pub percentile_metrics: Option<Vec<PercentileMetric>>,
    /// The percentiles reported, each in (0, 100]; `None` (default): 99.
    pub metric_percentiles: Option<Vec<f64>>,
    /// The format of `--json`; default [`ResultFormat::Tokenmeter`].
    pub result_format: ResultFormat,
    /// With the vLLM result format, add the per-request lists; default false.
    pub save_detailed: bool,
}

/// The metrics of `--percentile-metrics` when it is not given: all four.
const ALL_METRICS: [PercentileMetric; 4] = [
    PercentileMetric::Ttft,
    PercentileMetric::Tpot,
    PercentileMetric::Itl,
    PercentileMetric::E2el,
];

impl PeerArgs {
    /// The metrics of `--percentile-metrics` (all four when not given).
    pub(crate) fn metrics(&self) -> &[PercentileMetric] {
        self.percentile_metrics.as_deref().unwrap_or(&ALL_METRICS)
    }

    /// The percentiles of `--metric-percentiles` (vLLM's default, 99, when not given).
    pub(crate) fn percentiles(&self) -> &[f64] {
        self.metric_percentiles.as_deref().unwrap_or(&[99.0])
    }

    /// True when either percentile flag was given: our own outputs report the choice too.
    pub(crate) fn percentiles_chosen(&self) -> bool {
        self.percentile_metrics.is_some() || self.metric_percentiles.is_some()
    }
}

/// A percentile in (0, 100] (`--metric-percentiles`).
///
/// ```
/// use tokenmeter_bench::parse::parse_percentile;
///
/// assert_eq!(parse_percentile("99.9"), Ok(99.9));
/// assert!(parse_percentile("0").is_err());
/// ```
pub fn parse_percentile(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) && p > 0.0 => Ok(p),
        _ => Err(format!(
            "`{text}` is not a percentile; give numbers in (0, 100], e.g. 50,90,99"
        )),
    }
}

/// Compiles `--goodput` objectives (milliseconds), in vLLM's form (`ttft:500 tpot:50`, each its
/// own argument) or AIPerf's (`"time_to_first_token:100 inter_token_latency:3.40"`, one quoted
/// argument), into an [`Slo`]: the same objectives as `--slo`.
pub(crate) fn parse_goodput(parts: &[String]) -> anyhow::Result<Slo> {
    let mut slo = Slo::default();
    for part in parts.iter().flat_map(|p| p.split_whitespace()) {
        let Some((key, value)) = part.split_once(':') else {
            anyhow::bail!(
                "--goodput `{part}` is not KEY:MILLISECONDS; write e.g. --goodput ttft:500 tpot:50 \
                 (vLLM) or --goodput \"time_to_first_token:100 inter_token_latency:3.40\" (AIPerf)"
            );
        };
        let key = key.trim().to_ascii_lowercase();
        let slot = match goodput_metric(&key)? {
            PercentileMetric::Ttft => &mut slo.ttft,
            PercentileMetric::Tpot => &mut slo.tpot,
            PercentileMetric::E2el => &mut slo.e2e,
            PercentileMetric::Itl => &mut slo.itl,
            // Not goodput keys: goodput_metric never names them.
            PercentileMetric::ClientQueueTime | PercentileMetric::E2elIncludingClientQueue => {
                anyhow::bail!("--goodput: `{key}` is not an objective; use ttft, tpot, e2el or itl")
            }
        };
        if slot.is_some() {
            anyhow::bail!(
                "--goodput: objective `{key}` is given twice (or under both names); keep one"
            );
        }
        let ms = value
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|ms| ms.is_finite() && *ms >= 0.0);
        let Some(ms) = ms else {
            anyhow::bail!(
                "--goodput {key}: `{value}` is not a number of milliseconds (e.g. {key}:500)"
            );
        };
        *slot = Some(Duration::from_secs_f64(ms / 1e3));
    }
    Ok(slo)
}

/// The objective a `--goodput` key names: vLLM's keys, or AIPerf's metric tags (its
/// `inter_token_latency` is `(request_latency − ttft) / (output tokens − 1)`: vLLM's TPOT).
fn goodput_metric(key: &str) -> anyhow::Result<PercentileMetric> {
    Ok(match key {
        "ttft" | "time_to_first_token" => PercentileMetric::Ttft,
        "tpot" | "inter_token_latency" => PercentileMetric::Tpot,
        "e2el" | "e2e" | "request_latency" => PercentileMetric::E2el,
        "itl" => PercentileMetric::Itl,
        "output_token_throughput_per_user" => anyhow::bail!(
            "--goodput: output_token_throughput_per_user (tokens/s) is not supported; give its \
             inverse as inter_token_latency in milliseconds (1000 / tokens per second)"
        ),
        _ => anyhow::bail!(
            "--goodput: unknown objective `{key}`; use ttft, tpot, e2el or itl (vLLM, e.g. \
             ttft:500), or time_to_first_token, inter_token_latency or request_latency (AIPerf)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goodput(parts: &[&str]) -> anyhow::Result<Slo> {
        parse_goodput(&parts.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn goodput_compiles_into_the_same_objectives_as_slo() {
        let vllm = goodput(&["ttft:500", "tpot:50", "e2el:1000"]).unwrap();
        let ours: Slo = "ttft=500ms,tpot=50ms,e2e=1s".parse().unwrap();
        assert_eq!(vllm, ours);
        assert_eq!(vllm.class(), ours.class(), "one spec");
        assert_eq!(
            goodput(&["itl:2.5"]).unwrap().itl,
            Some(Duration::from_micros(2500))
        );
        let err = |p: &[&str]| goodput(p).unwrap_err().to_string();
        assert!(err(&["ttft=500"]).contains("KEY:MILLISECONDS"));
        assert!(err(&["queue:5"]).contains("unknown objective"));
        assert!(err(&["ttft:5", "ttft:6"]).contains("twice"));
        assert!(err(&["ttft:5ms"]).contains("milliseconds"));
        assert!(err(&["ttft:-1"]).contains("milliseconds"));
    }

    #[test]
    fn aiperf_goodput_compiles_into_the_same_objectives() {
        let aiperf =
            goodput(&["time_to_first_token:100 inter_token_latency:3.40 request_latency:900"])
                .unwrap();
        let vllm = goodput(&["ttft:100", "tpot:3.4", "e2el:900"]).unwrap();
        let ours: Slo = "ttft=100ms,tpot=3.4ms,e2e=900ms".parse().unwrap();
        assert_eq!(aiperf, ours);
        assert_eq!(vllm, ours);
        assert_eq!(aiperf.class(), ours.class(), "one spec");
        assert_eq!(
            goodput(&["  time_to_first_token:100\tttft:x "])
                .unwrap_err()
                .to_string(),
            "--goodput: objective `ttft` is given twice (or under both names); keep one",
            "AIPerf's tag and vLLM's key name one objective"
        );
        let err = |p: &[&str]| goodput(p).unwrap_err().to_string();
        assert!(err(&["time_to_first_token=100"]).contains("(AIPerf)"));
        assert!(err(&["output_token_throughput_per_user:50"]).contains("inverse"));
        assert!(err(&["inter_chunk_latency:5"]).contains("unknown objective"));
        // Mixed forms in one command line.
        let mixed = goodput(&["ttft:250", "inter_token_latency:20"]).unwrap();
        assert_eq!(mixed, "ttft=250ms,tpot=20ms".parse().unwrap());
    }

    #[test]
    fn percentiles_are_in_range() {
        assert_eq!(parse_percentile("99.9"), Ok(99.9));
        for bad in ["0", "101", "p99", "NaN"] {
            assert!(parse_percentile(bad).is_err(), "{bad}");
        }
    }
}
