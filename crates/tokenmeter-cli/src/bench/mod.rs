//! `tokenmeter bench`: the flags ([`BenchFlags`], one file per group as `--help` shows them),
//! mapped onto the `tokenmeter-bench` library's settings, which runs everything.
//!
//! | Module | Flags |
//! |---|---|
//! | [`args`] | the target, objectives, outputs, sweep; the groups below flattened in |
//! | [`load`] | `--rate`, `--arrival`, the ramp, `--concurrency`, `--duration`, `--stage` |
//! | [`workload`] | `--input-tokens`, `--dataset`, conversations, prefixes, cancellations |
//! | [`shape`] | `--header`, `--extra-body`, `--max-tokens-field`, streaming |
//! | [`peer`] | `--goodput`, percentiles, `--result-format` |
//! | [`run_block`] | `--label`, `--metadata` |
//! | [`slices`] | `--slice`, `--server-metrics`, `--scrape-interval` |
//! | [`shard`] | `--shard`, `--shards`, `--start-at` |
//! | [`merge`] | the `merge` subcommand |
//! | [`compare`] | the `compare` subcommand |
//! | [`enums`] | the possible values of the enum flags |

mod args;
mod compare;
mod enums;
mod load;
mod merge;
mod peer;
mod run_block;
mod shape;
mod shard;
mod slices;
mod workload;

#[cfg(test)]
mod tests;

pub(crate) use args::BenchFlags;

/// Runs `tokenmeter bench`, or its `merge` or `compare` subcommand.
pub(crate) async fn run(mut flags: BenchFlags) -> anyhow::Result<()> {
    match flags.command.take() {
        Some(merge::BenchCommand::Merge(merge)) => tokenmeter_bench::merge(&merge.settings()),
        Some(merge::BenchCommand::Compare(compare)) => {
            let comparison = tokenmeter_bench::compare::run(&compare.settings())?;
            tokenmeter_bench::compare::verdict(&comparison)
        }
        None => tokenmeter_bench::run(flags.settings()).await,
    }
}
