//! `tokenmeter serve`. Being written: see the sim/serve helper.

/// Options of `tokenmeter serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {}

/// Runs the server until interrupted.
pub(crate) async fn run(_args: ServeArgs) -> anyhow::Result<()> {
    anyhow::bail!("`tokenmeter serve` is not written yet")
}
