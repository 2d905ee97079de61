//! `tokenmeter slo`: Prometheus recording and alerting rules from an SLO spec.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use tokenmeter_prometheus::names::{self, exposition_name};
use tokenmeter_slo::SloSpec;
use tokenmeter_slo::rules::{EngineMetrics, RuleOptions, generate};

/// `tokenmeter slo …`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum SloCommand {
    /// Write Prometheus recording rules (Sloth-style `slo:sli_error:ratio_rate5m` …) and alerting
    /// rules (multiwindow burn rates, saturation) for an SLO spec.
    Rules(RulesArgs),
}

/// Options of `tokenmeter slo rules`.
#[derive(Debug, clap::Args)]
pub(crate) struct RulesArgs {
    /// The SLO spec (TOML).
    #[arg(long, value_name = "FILE")]
    spec: PathBuf,
    /// The naming profile of the exporters the saturation alerts read.
    #[arg(long, value_enum, default_value_t = Profile::Semconv)]
    profile: Profile,
    /// Where to write the rules; standard output when absent.
    #[arg(long, short, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// The exporters' naming profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Profile {
    /// OpenTelemetry GenAI names (`tokenmeter_requests_waiting`, ...).
    Semconv,
    /// vLLM names (`vllm:num_requests_waiting`, ...).
    Vllm,
}

/// Reads and validates an SLO spec file (`--slo-spec` of `bench` and `serve`).
pub(crate) fn read_spec(path: &Path) -> anyhow::Result<SloSpec> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the SLO spec {}", path.display()))?;
    SloSpec::from_toml(&text).with_context(|| format!("in {}", path.display()))
}

/// Runs a `tokenmeter slo` command.
pub(crate) fn run(command: SloCommand) -> anyhow::Result<()> {
    match command {
        SloCommand::Rules(args) => rules(&args),
    }
}

fn options(profile: Profile) -> RuleOptions {
    match profile {
        Profile::Semconv => RuleOptions::new(
            exposition_name(&names::semconv::REQUESTS_WAITING),
            exposition_name(&names::semconv::KV_CACHE_USAGE),
        )
        .engine(EngineMetrics::semconv()),
        Profile::Vllm => RuleOptions::new(
            exposition_name(&names::vllm::NUM_REQUESTS_WAITING),
            exposition_name(&names::vllm::KV_CACHE_USAGE),
        )
        .engine(EngineMetrics::vllm()),
    }
}

fn rules(args: &RulesArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.spec)
        .with_context(|| format!("cannot read the SLO spec {}", args.spec.display()))?;
    let spec = SloSpec::from_toml(&text).with_context(|| format!("in {}", args.spec.display()))?;
    let yaml = generate(&spec, &options(args.profile));
    match &args.out {
        Some(path) => std::fs::write(path, yaml)
            .with_context(|| format!("cannot write the rules to {}", path.display()))?,
        None => tokenmeter_bench::console::write_stdout(yaml.as_bytes())
            .context("cannot write the rules to stdout")?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profiles_name_real_gauges() {
        let semconv = options(Profile::Semconv);
        assert_eq!(semconv.waiting_metric, "tokenmeter_requests_waiting");
        assert_eq!(semconv.kv_usage_metric, "tokenmeter_kv_cache_usage_ratio");
        let vllm = options(Profile::Vllm);
        assert_eq!(vllm.waiting_metric, "vllm:num_requests_waiting");
        assert_eq!(vllm.kv_usage_metric, "vllm:kv_cache_usage_perc");
    }
}
