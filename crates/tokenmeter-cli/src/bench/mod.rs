//! `tokenmeter bench`. Being written: see the bench helper.

/// Options of `tokenmeter bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {}

/// Runs the benchmark.
pub(crate) async fn run(_args: BenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("`tokenmeter bench` is not written yet")
}
