//! The flags of what is sent (`--input-tokens`, `--output-tokens`, `--dataset` and its format,
//! conversations, shared prefixes, `--tokenizer`, cancellation injection), and the [`Source`]
//! they make.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;

use crate::args::{parse_duration_arg, parse_fraction};
use crate::schedule::parse_burstiness;
use crate::workload::{
    CancelAt, DatasetFormat, DatasetOptions, Injection, LengthDist, PromptTokenizer, SharedPrefix,
    Source, load_dataset,
};

/// What is sent.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct WorkloadArgs {
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
    #[arg(long, default_value = "0s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) think_time: Duration,

    /// Synthetic prompts that share prefixes: GROUPS:TOKENS (e.g. 8:1024), request i starting
    /// with prefix i mod GROUPS, then --input-tokens of its own (prefix-cache behaviour).
    #[arg(long, value_name = "GROUPS:TOKENS")]
    pub(crate) shared_prefix: Option<SharedPrefix>,

    /// The fraction of requests that hang up on purpose (at --cancel-after), counted as
    /// `cancelled` with the tokens they read, e.g. 0.1.
    #[arg(long, default_value_t = 0.0, value_parser = parse_fraction, value_name = "FRACTION", requires = "cancel_after")]
    pub(crate) cancel_fraction: f64,

    /// When injected cancellations hang up: after N tokens (`20tok`) or a time after the send
    /// (`500ms`).
    #[arg(long, value_name = "POINT", requires = "cancel_fraction")]
    pub(crate) cancel_after: Option<CancelAt>,

    /// A replayed trace's speed: 2 sends it twice as fast (its timestamps halved).
    #[arg(long, default_value_t = 1.0, value_parser = parse_burstiness, value_name = "FACTOR")]
    pub(crate) replay_speed: f64,

    /// A Hugging Face `tokenizer.json` (the model's own): synthetic prompts of exactly
    /// --input-tokens tokens, dataset prompts counted with it. Without it, prompt lengths are
    /// estimates (one token per word) and every output says so.
    #[arg(long, value_name = "FILE")]
    pub(crate) tokenizer: Option<PathBuf>,
}

impl WorkloadArgs {
    /// `--tokenizer`, loaded.
    pub(crate) fn tokenizer(&self) -> anyhow::Result<Option<Arc<PromptTokenizer>>> {
        Ok(match &self.tokenizer {
            Some(path) => Some(Arc::new(PromptTokenizer::load(path)?)),
            None => None,
        })
    }

    /// Where prompts come from (a dataset is read now); `seed` shuffles ShareGPT.
    pub(crate) fn source(
        &self,
        tokenizer: Option<Arc<PromptTokenizer>>,
        seed: u64,
    ) -> anyhow::Result<Source> {
        let source = match &self.dataset {
            Some(path) => {
                if self.turns > 1 || self.shared_prefix.is_some() {
                    bail!(
                        "--turns and --shared-prefix shape synthetic prompts; with --dataset, \
                         use --multi-turn (ShareGPT conversations) or drop them"
                    );
                }
                let options = DatasetOptions {
                    format: self.dataset_format,
                    tokenizer: tokenizer.as_deref(),
                    multi_turn: self.multi_turn,
                    seed,
                };
                Source::Dataset {
                    entries: load_dataset(path, options)?,
                    output: self.output_tokens,
                }
            }
            None => {
                if self.multi_turn && self.turns == 1 {
                    bail!(
                        "--multi-turn reads ShareGPT conversations (--dataset); for synthetic conversations give --turns N"
                    );
                }
                Source::Synthetic {
                    input: self.input_tokens,
                    output: self.output_tokens,
                    tokenizer: tokenizer.clone(),
                    shared_prefix: self.shared_prefix,
                    turns: self.turns,
                }
            }
        };
        Ok(source)
    }

    /// The cancellation injection, when asked.
    pub(crate) fn injection(&self) -> Option<Injection> {
        let at = self.cancel_after?;
        (self.cancel_fraction > 0.0).then_some(Injection {
            fraction: self.cancel_fraction,
            at,
        })
    }
}
