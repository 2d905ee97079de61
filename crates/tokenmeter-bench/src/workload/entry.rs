//! What a dataset reader makes and how it is told to read: the [`Entry`] of each request,
//! the file's [`Format`], the reading [`Options`] and the [`DatasetError`] every reader returns.
//! The readers (`dataset`, `sharegpt`, `mooncake`) import this; it imports none of them.

use std::path::PathBuf;

use super::{Prompt, PromptTokenizer};

/// One dataset entry.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    /// What to send.
    pub(crate) prompt: Prompt,
    /// The prompt's length in tokens (given, counted with the tokenizer, or estimated from
    /// words).
    pub(crate) input_tokens: u64,
    /// `input_tokens` was given or counted with the tokenizer.
    pub(crate) input_exact: bool,
    /// The output length asked for, when the line gives one.
    pub(crate) output_tokens: Option<u64>,
    /// When to send it, from the start of the run (a replayed trace).
    pub(crate) at: Option<std::time::Duration>,
    /// The turns of the conversation after this one, each with the history before it.
    pub(crate) next: Vec<Entry>,
    /// The `--slo-class` the line names (`"slo_class"`), when it names one.
    pub(crate) slo_class: Option<String>,
}

impl Entry {
    /// A request with no timestamp and no further turn.
    pub(crate) fn single(
        prompt: Prompt,
        input_tokens: u64,
        input_exact: bool,
        output_tokens: Option<u64>,
    ) -> Self {
        Self {
            prompt,
            input_tokens,
            input_exact,
            output_tokens,
            at: None,
            next: Vec::new(),
            slo_class: None,
        }
    }
}

/// The format of a dataset file.
///
/// ```
/// use tokenmeter_bench::{DatasetFormat, WorkloadArgs};
///
/// let mut workload = WorkloadArgs::default();
/// workload.dataset = Some("conversations.json".into());
/// workload.dataset_format = DatasetFormat::Sharegpt;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// From the content: a JSON array is ShareGPT, lines with `timestamp` and `input_length`
    /// a Mooncake trace, other lines JSONL.
    Auto,
    /// One JSON request per line.
    Jsonl,
    /// ShareGPT conversations.
    Sharegpt,
    /// A Mooncake trace.
    Mooncake,
}

/// How a dataset is read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options<'a> {
    /// The format.
    pub(crate) format: Format,
    /// Counts prompt lengths, when given.
    pub(crate) tokenizer: Option<&'a PromptTokenizer>,
    /// Keep whole conversations (ShareGPT) as multi-turn requests.
    pub(crate) multi_turn: bool,
    /// Shuffles ShareGPT conversations, as vLLM does.
    pub(crate) seed: u64,
}

/// Why a dataset could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum DatasetError {
    /// The file could not be read.
    #[error("cannot read dataset {path}: {source}; check the path given to --dataset")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line is not what we expect.
    #[error(
        "dataset {path}, line {line}: {why}; each line must be a JSON object with \"prompt\" \
         (string) or \"messages\" (array), and optionally \"output_tokens\" and \"input_tokens\""
    )]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// No usable line.
    #[error("dataset {0} has no requests; add JSON lines with a \"prompt\"")]
    Empty(PathBuf),
    /// A ShareGPT file that does not parse, or has no usable conversation.
    #[error(
        "dataset {path}: {why}; a ShareGPT file is a JSON array of objects with \
         \"conversations\": [{{\"from\": \"human\", \"value\": ...}}, {{\"from\": \"gpt\", \
         \"value\": ...}}, ...]"
    )]
    ShareGpt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A Mooncake trace line that is not what we expect.
    #[error(
        "dataset {path}, line {line}: {why}; each line of a Mooncake trace is a JSON object with \
         \"timestamp\" (ms), \"input_length\", \"output_length\" and optionally \"hash_ids\""
    )]
    Mooncake {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
}
