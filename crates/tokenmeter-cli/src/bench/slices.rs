//! [`SliceFlags`]: `--slice`, `--server-metrics`, `--no-server-metrics`, `--scrape-interval`.

use std::time::Duration;

use tokenmeter_bench::{MetricsTarget, SliceArgs, parse};

/// Options of the time slices and of the server's view.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SliceFlags {
    /// Report percentiles, throughput and goodput per interval of this length (e.g. 10s): a
    /// table in the terminal, `slices` in --json, charts over time in --html. Without it,
    /// --json and --html get slices of an automatic width (a round number of seconds, about
    /// 20 slices over the run) and the terminal none.
    #[arg(long, value_parser = parse::positive_duration, value_name = "DURATION")]
    pub(crate) slice: Option<Duration>,

    /// Scrape this Prometheus endpoint during the run (vLLM's names or tokenmeter's) and
    /// report the server's queue, KV-cache usage and TTFT/ITL percentiles per slice beside
    /// the client's; `auto` for /metrics on --url's host. Default: the embedded simulator's
    /// /metrics; nothing with --url. No API key or --header is ever sent to it.
    #[arg(long, value_parser = parse::parse_target, value_name = "URL|auto")]
    pub(crate) server_metrics: Option<MetricsTarget>,

    /// Do not scrape the embedded simulator's /metrics.
    #[arg(long, conflicts_with = "server_metrics")]
    pub(crate) no_server_metrics: bool,

    /// Time between scrapes of --server-metrics [default: a quarter of --slice, from 50 ms to
    /// 1 s; 1 s without --slice]. Each scrape gives up after this long (at least 500 ms, at
    /// most 2 s).
    #[arg(long, value_parser = parse::positive_duration, value_name = "DURATION")]
    pub(crate) scrape_interval: Option<Duration>,
}

impl SliceFlags {
    /// The library's slice settings.
    pub(crate) fn settings(self) -> SliceArgs {
        let mut slices = SliceArgs::default();
        slices.slice = self.slice;
        slices.server_metrics = self.server_metrics;
        slices.no_server_metrics = self.no_server_metrics;
        slices.scrape_interval = self.scrape_interval;
        slices
    }
}
