//! [`RunFlags`]: `--label` and `--metadata`, kept in the `run` block of `--json`.

use tokenmeter_bench::{RunArgs, parse};

/// `--label` and `--metadata`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct RunFlags {
    /// A name for this run, kept in the `run` block of --json.
    #[arg(long)]
    pub(crate) label: Option<String>,

    /// `KEY=VALUE` kept in the `run` block of --json (repeatable), e.g. --metadata gpu=H100.
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse::parse_metadata)]
    pub(crate) metadata: Vec<(String, String)>,
}

impl RunFlags {
    /// The library's run-block settings.
    pub(crate) fn settings(self) -> RunArgs {
        let mut run = RunArgs::default();
        run.label = self.label;
        run.metadata = self.metadata;
        run
    }
}
