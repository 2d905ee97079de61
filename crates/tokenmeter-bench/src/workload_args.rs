//! The flags of what is sent (`--input-tokens`, `--output-tokens`, `--dataset` and its format,
//! conversations, shared prefixes, `--tokenizer`, cancellation injection): [`WorkloadArgs`],
//! and the `Source` they make.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;

use crate::slo_class::{SloClassArg, SloClasses};

use crate::workload::{
    CancelAt, DatasetFormat, DatasetOptions, Injection, LengthDist, PromptTokenizer, SharedPrefix,
    Source, load_dataset,
};

/// What is sent: part of [`BenchArgs`](crate::BenchArgs).
///
/// ```
/// # fn main() -> anyhow::Result<()> {
/// use tokenmeter_bench::{DatasetFormat, WorkloadArgs};
///
/// let mut workload = WorkloadArgs::default();
/// assert_eq!(workload.dataset_format, DatasetFormat::Auto);
/// workload.input_tokens = "128..512".parse()?;
/// workload.output_tokens = "exp:200".parse()?;
/// workload.shared_prefix = Some("8:1024".parse().map_err(anyhow::Error::msg)?);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WorkloadArgs {
    /// Prompt length in tokens; default [`DEFAULT_INPUT_TOKENS`] (256).
    pub input_tokens: LengthDist,
    /// Output length in tokens (`max_tokens`); default [`DEFAULT_OUTPUT_TOKENS`] (128).
    pub output_tokens: LengthDist,
    /// A dataset file used in order instead of synthetic prompts; `None` (default): synthetic prompts.
    pub dataset: Option<PathBuf>,
    /// The format of `dataset`; default [`DatasetFormat::Auto`] (found from the content).
    pub dataset_format: DatasetFormat,
    /// Send ShareGPT conversations whole, one request per human turn; default false.
    pub multi_turn: bool,
    /// Turns of each synthetic conversation, 1 to 1000; default 1.
    pub turns: u32,
    /// The pause between a turn's answer and the conversation's next turn; default 0.
    pub think_time: Duration,
    /// Synthetic prompts sharing prefixes (groups and tokens); `None` (default): no shared prefix.
    pub shared_prefix: Option<SharedPrefix>,
    /// The fraction of requests that hang up on purpose at `cancel_after`, from 0 to 1; default 0.
    pub cancel_fraction: f64,
    /// When injected cancellations hang up (tokens read or time after the send); `None` (default).
    pub cancel_after: Option<CancelAt>,
    /// A replayed trace's speed factor (2: twice as fast), above 0; default 1.
    pub replay_speed: f64,
    /// A Hugging Face `tokenizer.json` counting prompt tokens; `None` (default): one token per word, estimated.
    pub tokenizer: Option<PathBuf>,
    /// Workload classes sending their own objectives in `x-slo-ttft-ms`/`x-slo-tpot-ms`
    /// (`--slo-class`), taken in turn by weight or named by a dataset line; empty (default): none sent.
    pub slo_classes: Vec<SloClassArg>,
}

/// The prompt length by default ([`WorkloadArgs::input_tokens`]): 256 tokens.
///
/// ```
/// use tokenmeter_bench::{DEFAULT_INPUT_TOKENS, LengthDist};
/// assert_eq!(DEFAULT_INPUT_TOKENS, LengthDist::Fixed(256));
/// ```
pub const DEFAULT_INPUT_TOKENS: LengthDist = LengthDist::Fixed(256);

/// The output length by default ([`WorkloadArgs::output_tokens`]): 128 tokens.
///
/// ```
/// use tokenmeter_bench::{DEFAULT_OUTPUT_TOKENS, LengthDist};
/// assert_eq!(DEFAULT_OUTPUT_TOKENS, LengthDist::Fixed(128));
/// ```
pub const DEFAULT_OUTPUT_TOKENS: LengthDist = LengthDist::Fixed(128);

impl Default for WorkloadArgs {
    fn default() -> Self {
        Self {
            input_tokens: DEFAULT_INPUT_TOKENS,
            output_tokens: DEFAULT_OUTPUT_TOKENS,
            dataset: None,
            dataset_format: DatasetFormat::Auto,
            multi_turn: false,
            turns: 1,
            think_time: Duration::ZERO,
            shared_prefix: None,
            cancel_fraction: 0.0,
            cancel_after: None,
            replay_speed: 1.0,
            tokenizer: None,
            slo_classes: Vec::new(),
        }
    }
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
        let classes = self.slo_classes()?;
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
                let entries = load_dataset(path, options)?;
                for name in entries.iter().filter_map(|e| e.slo_class.as_deref()) {
                    classes.position(name)?;
                }
                Source::Dataset {
                    entries,
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

    /// `--slo-class`, checked.
    pub(crate) fn slo_classes(&self) -> anyhow::Result<SloClasses> {
        SloClasses::new(&self.slo_classes)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A dataset line's `"slo_class"` picks its `--slo-class`; a name no flag declares is an
    /// error that says how to declare it.
    #[test]
    fn a_dataset_names_declared_classes_only() {
        let path = std::env::temp_dir().join(format!("slo-classes-{}.jsonl", std::process::id()));
        std::fs::write(
            &path,
            "{\"prompt\": \"a b\", \"slo_class\": \"batch\"}\n{\"prompt\": \"c\"}\n",
        )
        .unwrap();
        let mut workload = WorkloadArgs {
            dataset: Some(path.clone()),
            ..WorkloadArgs::default()
        };
        let error = workload.source(None, 0).unwrap_err().to_string();
        assert!(
            error.contains("\"batch\", which no --slo-class declares"),
            "{error}"
        );
        workload.slo_classes = vec![
            "interactive:ttft=200ms".parse().unwrap(),
            "batch:ttft=10s".parse().unwrap(),
        ];
        let Source::Dataset { entries, .. } = workload.source(None, 0).unwrap() else {
            panic!("a dataset source")
        };
        let named: Vec<Option<&str>> = entries.iter().map(|e| e.slo_class.as_deref()).collect();
        assert_eq!(named, [Some("batch"), None]);
        let classes = workload.slo_classes().unwrap();
        assert_eq!(classes.tag(0, named[0]).unwrap().unwrap().class, 1);
        assert_eq!(
            classes.tag(2, named[1]).unwrap().unwrap().class,
            0,
            "in turn"
        );
        let _ = std::fs::remove_file(path);
    }
}
