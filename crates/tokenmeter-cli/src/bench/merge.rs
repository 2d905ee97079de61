//! [`BenchCommand`]: `tokenmeter bench merge` and its flags ([`MergeFlags`]); `compare`'s are
//! in [`compare`](super::compare).

use std::path::PathBuf;

use tokenmeter_bench::MergeArgs;

use super::enums::JudgedFrom;

/// The subcommands of `tokenmeter bench`.
#[derive(Clone, Debug, clap::Subcommand)]
pub(crate) enum BenchCommand {
    /// Merge the --trace files of several bench processes (the shards of one run, see
    /// --shard) into the summary, JSON and HTML of their union.
    Merge(MergeFlags),
    /// Compare two runs (their --json or --trace files, or --repeat's runs): each figure's
    /// difference, its confidence interval and a verdict; exit code 1 on a significant
    /// regression beyond --threshold.
    Compare(super::compare::CompareFlags),
}

/// Options of `tokenmeter bench merge`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct MergeFlags {
    /// The trace files, one per process.
    #[arg(required = true, value_name = "TRACE")]
    pub(crate) traces: Vec<PathBuf>,

    /// Write the summary as JSON to FILE (`-`: stdout, the table then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,

    /// Write a self-contained HTML report with charts to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,

    /// Per-request objectives for goodput, as the runs' --slo.
    #[arg(long, default_value = "ttft=1s,tpot=50ms")]
    pub(crate) slo: tokenmeter_bench::Slo,

    /// From when TTFT and E2E are judged against --slo, as the runs' --slo-from.
    #[arg(long, value_enum, default_value = "schedule", value_name = "FROM")]
    pub(crate) slo_from: JudgedFrom,

    /// Confidence level of the interval beside every figure, in percent (`95`, `99.5`,
    /// `95%`), as the runs' --confidence.
    #[arg(long, value_parser = tokenmeter_bench::parse::parse_confidence, default_value = "95", value_name = "PERCENT")]
    pub(crate) confidence: tokenmeter::report::Confidence,
}

impl MergeFlags {
    /// The library's merge settings.
    pub(crate) fn settings(self) -> MergeArgs {
        let mut merge = MergeArgs::default();
        merge.traces = self.traces;
        merge.json = self.json;
        merge.html = self.html;
        merge.slo = self.slo;
        merge.slo_from = self.slo_from.into();
        merge.confidence = self.confidence;
        merge
    }
}
