//! [`ShardFlags`]: `--shard`, `--shards`, `--start-at` (one run split over processes).

use tokenmeter_bench::{Shard, ShardArgs, StartAt, parse};

/// `--shard`, `--shards`, `--start-at`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct ShardFlags {
    /// Send only this shard's part of the run: `I/N` sends the k-th request (or conversation)
    /// when k modulo N is I (0 ≤ I < N), at the times the whole run would send it. Run N processes with the
    /// same flags and seed, then `tokenmeter bench merge` their --trace files.
    #[arg(long, value_name = "I/N", value_parser = parse::parse_shard, conflicts_with = "shards")]
    pub(crate) shard: Option<Shard>,

    /// The number of shards, this one's index read from JOB_COMPLETION_INDEX (a Kubernetes
    /// Indexed Job).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) shards: Option<u64>,

    /// Wait until this wall-clock time before the first request: seconds since the Unix
    /// epoch (`1767225600`, `$(( $(date +%s) + 60 ))`) or UTC `2026-01-01T00:00:00Z`. At most
    /// an hour ahead, at most 5 s past.
    #[arg(long, value_name = "TIME", value_parser = parse::parse_start_at)]
    pub(crate) start_at: Option<StartAt>,
}

impl ShardFlags {
    /// The library's shard settings.
    pub(crate) fn settings(self) -> ShardArgs {
        let mut shard = ShardArgs::default();
        shard.shard = self.shard;
        shard.shards = self.shards;
        shard.start_at = self.start_at;
        shard
    }
}
