//! [`WorkloadFlags`]: what is sent (`--input-tokens`, `--output-tokens`, `--dataset` and its
//! format, conversations, shared prefixes, `--tokenizer`, cancellation injection).

use std::path::PathBuf;
use std::time::Duration;

use tokenmeter_bench::{CancelAt, LengthDist, SharedPrefix, SloClassArg, WorkloadArgs, parse};

use super::enums::DatasetFormat;

/// What is sent.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct WorkloadFlags {
    /// Prompt length in tokens: N, LO..HI (uniform), normal:MEAN:SD or exp:MEAN.
    #[arg(
        long,
        visible_alias = "random-input-len",
        default_value = "256",
        value_name = "DIST"
    )]
    pub(crate) input_tokens: LengthDist,

    /// Output length in tokens (max_tokens): N, LO..HI, normal:MEAN:SD or exp:MEAN.
    #[arg(
        long,
        visible_alias = "random-output-len",
        default_value = "128",
        value_name = "DIST"
    )]
    pub(crate) output_tokens: LengthDist,

    /// A JSONL dataset: one {"prompt": ..., "output_tokens": ...} or {"messages": [...]} per
    /// line, used in order instead of synthetic prompts.
    #[arg(long, visible_alias = "dataset-path", value_name = "FILE")]
    pub(crate) dataset: Option<PathBuf>,

    /// The format of --dataset: jsonl, sharegpt (vLLM's filtering rules) or mooncake (a
    /// timestamped trace, replayed at its times). Default: found from the content.
    #[arg(
        long,
        value_enum,
        default_value = "auto",
        visible_alias = "dataset-name"
    )]
    pub(crate) dataset_format: DatasetFormat,

    /// Send ShareGPT conversations whole: one request per human turn, each with the
    /// conversation before it; or, with synthetic prompts, see --turns.
    #[arg(long)]
    pub(crate) multi_turn: bool,

    /// Synthetic conversations of this many turns: each turn a new user message of
    /// --input-tokens after the history (replies of --output-tokens); -n counts conversations.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) turns: u32,

    /// The pause between a turn's answer and the next turn of its conversation (the user
    /// reading and typing), e.g. 2s.
    #[arg(long, default_value = "0s", value_parser = parse::parse_duration_arg, value_name = "DURATION")]
    pub(crate) think_time: Duration,

    /// Synthetic prompts that share prefixes: GROUPS:TOKENS (e.g. 8:1024), request i starting
    /// with prefix i mod GROUPS, then --input-tokens of its own (prefix-cache behaviour).
    #[arg(long, value_name = "GROUPS:TOKENS")]
    pub(crate) shared_prefix: Option<SharedPrefix>,

    /// The fraction of requests that hang up on purpose (at --cancel-after), counted as
    /// `cancelled` with the tokens they read, e.g. 0.1.
    #[arg(long, default_value_t = 0.0, value_parser = parse::parse_fraction, value_name = "FRACTION", requires = "cancel_after")]
    pub(crate) cancel_fraction: f64,

    /// When injected cancellations hang up: after N tokens (`20tok`) or a time after the send
    /// (`500ms`).
    #[arg(long, value_name = "POINT", requires = "cancel_fraction")]
    pub(crate) cancel_after: Option<CancelAt>,

    /// A replayed trace's speed: 2 sends it twice as fast (its timestamps halved).
    #[arg(long, default_value_t = 1.0, value_parser = parse::parse_burstiness, value_name = "FACTOR")]
    pub(crate) replay_speed: f64,

    /// A Hugging Face `tokenizer.json` (the model's own): synthetic prompts of exactly
    /// --input-tokens tokens, dataset prompts counted with it. Without it, prompt lengths are
    /// estimates (one token per word) and every output says so.
    #[arg(long, value_name = "FILE")]
    pub(crate) tokenizer: Option<PathBuf>,

    /// A workload class whose requests send their own objectives in the `x-slo-ttft-ms` and
    /// `x-slo-tpot-ms` headers: NAME:ttft=200ms,tpot=50ms[:WEIGHT] (whole milliseconds). Repeat
    /// it for several classes (at most 16): requests take them in turn by weight, or the one a
    /// dataset line names in `"slo_class"`. The report gives each class's attainment beside
    /// the server's `tokenmeter_slo_requests_good_total{slo_class}` (with --server-metrics).
    #[arg(long, value_name = "NAME:OBJECTIVES[:WEIGHT]")]
    pub(crate) slo_class: Vec<SloClassArg>,
}

impl WorkloadFlags {
    /// The library's workload settings.
    pub(crate) fn settings(self) -> WorkloadArgs {
        let mut workload = WorkloadArgs::default();
        workload.input_tokens = self.input_tokens;
        workload.output_tokens = self.output_tokens;
        workload.dataset = self.dataset;
        workload.dataset_format = self.dataset_format.into();
        workload.multi_turn = self.multi_turn;
        workload.turns = self.turns;
        workload.think_time = self.think_time;
        workload.shared_prefix = self.shared_prefix;
        workload.cancel_fraction = self.cancel_fraction;
        workload.cancel_after = self.cancel_after;
        workload.replay_speed = self.replay_speed;
        workload.tokenizer = self.tokenizer;
        workload.slo_classes = self.slo_class;
        workload
    }
}
