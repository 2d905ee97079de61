//! `--dataset FILE.jsonl`: one request per line.
//!
//! Each line is a JSON object with either `"prompt"` (a string) or `"messages"` (an OpenAI chat
//! message array, sent as is), and optionally `"output_tokens"` (or `"max_tokens"`) and
//! `"input_tokens"` (the prompt's length in tokens, when known; otherwise it is estimated from
//! the words of the prompt). Blank lines are skipped.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

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
}

#[derive(Deserialize)]
struct Line {
    prompt: Option<String>,
    messages: Option<Vec<Value>>,
    #[serde(alias = "max_tokens", alias = "output_len")]
    output_tokens: Option<u64>,
    #[serde(alias = "prompt_len")]
    input_tokens: Option<u64>,
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
}

/// Reads a JSONL dataset; prompt lengths not given are counted with `tokenizer`, else estimated
/// from words.
pub(crate) fn load(
    path: &Path,
    tokenizer: Option<&PromptTokenizer>,
) -> Result<Vec<Entry>, DatasetError> {
    let text = std::fs::read_to_string(path).map_err(|source| DatasetError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(&text, path, tokenizer)
}

fn parse(
    text: &str,
    path: &Path,
    tokenizer: Option<&PromptTokenizer>,
) -> Result<Vec<Entry>, DatasetError> {
    let mut entries = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let fail = |why: String| DatasetError::Line {
            path: path.to_owned(),
            line: index + 1,
            why,
        };
        let line: Line = serde_json::from_str(raw).map_err(|e| fail(e.to_string()))?;
        let prompt = match (line.prompt, line.messages) {
            (Some(text), None) => Prompt::Text(text),
            (None, Some(messages)) if !messages.is_empty() => Prompt::Messages(messages),
            (Some(_), Some(_)) => return Err(fail("both \"prompt\" and \"messages\"".into())),
            _ => return Err(fail("no \"prompt\" and no non-empty \"messages\"".into())),
        };
        if line.output_tokens == Some(0) {
            return Err(fail("\"output_tokens\" must be at least 1".into()));
        }
        let (input_tokens, input_exact) = match (line.input_tokens, tokenizer) {
            (Some(n), _) => (n, true),
            (None, Some(t)) => (t.count(&prompt.as_text()), true),
            (None, None) => (prompt.estimate_tokens(), false),
        };
        entries.push(Entry {
            prompt,
            input_tokens,
            input_exact,
            output_tokens: line.output_tokens,
        });
    }
    if entries.is_empty() {
        return Err(DatasetError::Empty(path.to_owned()));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_prompts_and_messages() {
        let text = r#"{"prompt": "one two three", "output_tokens": 5}

{"messages": [{"role": "user", "content": "hi there"}], "input_tokens": 9}
"#;
        let entries = parse(text, Path::new("d.jsonl"), None).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].prompt, Prompt::Text("one two three".into()));
        assert_eq!(
            (entries[0].input_tokens, entries[0].output_tokens),
            (3, Some(5))
        );
        assert_eq!(
            (entries[1].input_tokens, entries[1].output_tokens),
            (9, None)
        );
    }

    #[test]
    fn names_the_bad_line() {
        let err = parse(
            "{\"prompt\": \"a\"}\n{\"nope\": 1}\n",
            Path::new("d.jsonl"),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("line 2") && err.contains("\"prompt\""),
            "{err}"
        );
        let err = parse("not json", Path::new("d.jsonl"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1"), "{err}");
        let err = parse("\n\n", Path::new("d.jsonl"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no requests"), "{err}");
        let err = load(Path::new("/nonexistent/d.jsonl"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--dataset"), "{err}");
    }
}
