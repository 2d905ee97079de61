//! `--dataset FILE`: requests from a file, in one of three formats (`--dataset-format`, found
//! from the content by default):
//!
//! - **JSONL** (`jsonl`): each line a JSON object with either `"prompt"` (a string) or
//!   `"messages"` (an OpenAI chat message array, sent as is), and optionally `"output_tokens"`
//!   (or `"max_tokens"`) and `"input_tokens"` (the prompt's length in tokens, when known;
//!   otherwise counted with `--tokenizer` or estimated from the words), and `"slo_class"` (the
//!   name of a `--slo-class` whose objective headers it sends). Blank lines are skipped.
//! - **ShareGPT** (`sharegpt`, [`super::sharegpt`]): a JSON array of `{"conversations": [...]}`.
//! - **Mooncake traces** (`mooncake`, [`super::mooncake`]): JSONL of timestamped lengths.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::entry::{DatasetError, Entry, Format, Options};
use super::{Prompt, PromptTokenizer};

#[derive(Deserialize)]
struct Line {
    prompt: Option<String>,
    messages: Option<Vec<Value>>,
    #[serde(alias = "max_tokens", alias = "output_len")]
    output_tokens: Option<u64>,
    #[serde(alias = "prompt_len")]
    input_tokens: Option<u64>,
    /// The `--slo-class` whose objective headers the request sends.
    slo_class: Option<String>,
}

/// Reads a dataset; prompt lengths not given are counted with the tokenizer, else estimated
/// from words.
pub(crate) fn load(path: &Path, options: Options<'_>) -> Result<Vec<Entry>, DatasetError> {
    let text = std::fs::read_to_string(path).map_err(|source| DatasetError::Read {
        path: path.to_owned(),
        source,
    })?;
    let format = match options.format {
        Format::Auto => detect(&text),
        known => known,
    };
    match format {
        Format::Sharegpt => super::sharegpt::parse(&text, path, options),
        Format::Mooncake => super::mooncake::parse(&text, path, options.tokenizer),
        Format::Jsonl | Format::Auto => parse(&text, path, options.tokenizer),
    }
}

/// The format of `text`: a JSON array is ShareGPT; a first line with `timestamp` and
/// `input_length` is a Mooncake trace; anything else is read as JSONL (whose errors say what a
/// line must hold).
fn detect(text: &str) -> Format {
    let start = text.trim_start();
    if start.starts_with('[') {
        return Format::Sharegpt;
    }
    let first = start.lines().next().unwrap_or("");
    match serde_json::from_str::<Value>(first) {
        Ok(Value::Object(o)) if o.contains_key("timestamp") && o.contains_key("input_length") => {
            Format::Mooncake
        }
        _ => Format::Jsonl,
    }
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
        let mut entry = Entry::single(prompt, input_tokens, input_exact, line.output_tokens);
        entry.slo_class = line.slo_class;
        entries.push(entry);
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
    fn formats_are_found_from_the_content() {
        assert_eq!(detect("  [{\"conversations\": []}]"), Format::Sharegpt);
        assert_eq!(
            detect("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2}\n"),
            Format::Mooncake
        );
        assert_eq!(detect("{\"prompt\": \"a\"}"), Format::Jsonl);
        assert_eq!(detect("garbage"), Format::Jsonl);
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
        let options = Options {
            format: Format::Auto,
            tokenizer: None,
            multi_turn: false,
            seed: 0,
        };
        let err = load(Path::new("/nonexistent/d.jsonl"), options)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--dataset"), "{err}");
    }
}
