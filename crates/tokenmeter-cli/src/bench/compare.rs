//! `tokenmeter bench compare BASE NEW` and its flags ([`CompareFlags`]).

use std::path::PathBuf;

use tokenmeter::report::Confidence;
use tokenmeter_bench::compare::CompareArgs;

use super::enums::JudgedFrom;

/// Options of `tokenmeter bench compare`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct CompareFlags {
    /// The base run: its --json (one run, or --repeat's runs) or its --trace file.
    #[arg(value_name = "BASE")]
    pub(crate) base: PathBuf,

    /// The new run, as BASE.
    #[arg(value_name = "NEW")]
    pub(crate) new: PathBuf,

    /// A relative difference that does not matter, in percent of the base's value: a figure
    /// regresses only when it is significantly worse by more than this (`5%` or `5`).
    #[arg(long, default_value = "5%", value_parser = tokenmeter_bench::parse::parse_threshold, value_name = "PERCENT")]
    pub(crate) threshold: f64,

    /// The confidence level of the intervals, in percent (`95` or `95%`).
    #[arg(long, default_value = "95", value_parser = tokenmeter_bench::parse::parse_confidence, value_name = "PERCENT")]
    pub(crate) confidence: Confidence,

    /// Bootstrap resamples of each side's requests.
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u32).range(100..=1_000_000))]
    pub(crate) resamples: u32,

    /// The bootstrap's seed: the same files and seed give the same intervals.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,

    /// Per-request objectives a --trace's requests are judged by for goodput, as the runs'
    /// --slo (a --json holds its run's own verdicts).
    #[arg(long, default_value = "ttft=1s,tpot=50ms")]
    pub(crate) slo: tokenmeter_bench::Slo,

    /// From when a --trace's TTFT and E2E are judged against --slo, as the runs' --slo-from.
    #[arg(long, value_enum, default_value = "schedule", value_name = "FROM")]
    pub(crate) slo_from: JudgedFrom,

    /// Compare runs of different shapes (model, lengths, load, objectives) anyway.
    #[arg(long)]
    pub(crate) allow_different_shapes: bool,

    /// Write the comparison as JSON to FILE (`-`: stdout, the table then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,

    /// Write a self-contained HTML page (both runs' CDFs, the differences) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
}

impl CompareFlags {
    /// The library's compare settings.
    pub(crate) fn settings(self) -> CompareArgs {
        let mut args = CompareArgs::new(self.base, self.new);
        args.settings.threshold = self.threshold;
        args.settings.confidence = self.confidence;
        args.settings.resamples = self.resamples;
        args.settings.seed = self.seed;
        args.settings.allow_different_shapes = self.allow_different_shapes;
        args.slo = self.slo;
        args.slo_from = self.slo_from.into();
        args.json = self.json;
        args.html = self.html;
        args
    }
}
