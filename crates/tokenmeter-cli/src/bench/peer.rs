//! [`PeerFlags`]: vLLM's and AIPerf's `--goodput`, `--percentile-metrics`,
//! `--metric-percentiles`, `--result-format`, `--save-detailed`.

use tokenmeter_bench::{PeerArgs, parse};

use super::enums::{PercentileMetric, ResultFormat};

/// The flags that follow `vllm bench serve`'s.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct PeerFlags {
    /// Goodput objectives in milliseconds, `KEY:VALUE`: vLLM's keys ttft, tpot, e2el (and itl,
    /// every gap), e.g. --goodput ttft:500 tpot:50, or AIPerf's metric tags time_to_first_token,
    /// inter_token_latency (AIPerf's ITL is the per-request mean gap, vLLM's TPOT) and
    /// request_latency, e.g. --goodput "time_to_first_token:100 inter_token_latency:3.40".
    /// Replaces --slo.
    #[arg(long, num_args = 1.., value_delimiter = ',', value_name = "KEY:MS")]
    pub(crate) goodput: Vec<String>,

    /// The metrics whose chosen percentiles are reported (ttft,tpot,itl,e2el when not given;
    /// also client_queue_time and e2el_including_client_queue, vLLM 0.33's, which the vLLM
    /// result format adds by itself when a request waited in the client): in the table,
    /// --json, --html and the vLLM result format.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    pub(crate) percentile_metrics: Option<Vec<PercentileMetric>>,

    /// The percentiles reported for --percentile-metrics, e.g. 50,90,99.9 (the vLLM result
    /// format's default: 99): in the table, --json, --html and the vLLM result format.
    #[arg(long, value_delimiter = ',', value_parser = parse::parse_percentile, value_name = "LIST")]
    pub(crate) metric_percentiles: Option<Vec<f64>>,

    /// The format of --json: tokenmeter's own, or `vllm` (the keys of `vllm bench serve
    /// --save-result`).
    #[arg(long, value_enum, default_value = "tokenmeter")]
    pub(crate) result_format: ResultFormat,

    /// With --result-format vllm: add the per-request lists (input_lens, output_lens, ttfts,
    /// itls, start_times, generated_texts, errors).
    #[arg(long)]
    pub(crate) save_detailed: bool,
}

impl PeerFlags {
    /// The library's peer settings.
    pub(crate) fn settings(self) -> PeerArgs {
        let mut peer = PeerArgs::default();
        peer.goodput = self.goodput;
        peer.percentile_metrics = self
            .percentile_metrics
            .map(|metrics| metrics.into_iter().map(Into::into).collect());
        peer.metric_percentiles = self.metric_percentiles;
        peer.result_format = self.result_format.into();
        peer.save_detailed = self.save_detailed;
        peer
    }
}
