//! Mooncake traces (the format of the traces published with Mooncake, Kimi's serving system):
//! JSONL lines `{"timestamp": MS, "input_length": N, "output_length": M, "hash_ids": [...]}`,
//! replayed at their timestamps (scaled by `--replay-speed`).
//!
//! A prompt is made of blocks of 512 tokens, one per hash id: the same id is the same text in
//! every request, so requests that share ids share a prefix (and a server's prefix cache sees
//! it); the last block is cut to `input_length`. Without ids, each request gets text of its
//! own. Words are one token each with `--tokenizer` (exact), else an estimate.

use std::path::Path;
use std::time::Duration;

use rand::SeedableRng as _;
use rand::rngs::StdRng;
use serde::Deserialize;

use super::entry::{DatasetError, Entry};
use super::{Prompt, PromptTokenizer, VOCABULARY};

/// Tokens per hash block, as in the published traces.
pub(crate) const BLOCK_TOKENS: u64 = 512;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    timestamp: f64,
    input_length: u64,
    output_length: u64,
    #[serde(default)]
    hash_ids: Vec<u64>,
}

/// Reads a Mooncake trace.
pub(crate) fn parse(
    text: &str,
    path: &Path,
    tokenizer: Option<&PromptTokenizer>,
) -> Result<Vec<Entry>, DatasetError> {
    let words: Vec<&str> = match tokenizer {
        Some(t) => t.words().iter().map(String::as_str).collect(),
        None => VOCABULARY.to_vec(),
    };
    let mut entries = Vec::new();
    let mut last = 0.0_f64;
    for (index, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let fail = |why: String| DatasetError::Mooncake {
            path: path.to_owned(),
            line: index + 1,
            why,
        };
        let line: Line = serde_json::from_str(raw).map_err(|e| fail(e.to_string()))?;
        if !(line.timestamp.is_finite() && line.timestamp >= 0.0) {
            return Err(fail("\"timestamp\" must be milliseconds, 0 or more".into()));
        }
        if line.timestamp < last {
            return Err(fail(format!(
                "\"timestamp\" {} comes before the line above ({last}); sort the trace by time",
                line.timestamp
            )));
        }
        last = line.timestamp;
        if line.input_length == 0 || line.output_length == 0 {
            return Err(fail(
                "\"input_length\" and \"output_length\" must be at least 1".into(),
            ));
        }
        if (line.hash_ids.len() as u64) * BLOCK_TOKENS < line.input_length
            && !line.hash_ids.is_empty()
        {
            return Err(fail(format!(
                "{} hash ids cover {} tokens, fewer than \"input_length\" {}",
                line.hash_ids.len(),
                line.hash_ids.len() as u64 * BLOCK_TOKENS,
                line.input_length
            )));
        }
        // Without ids, a request's blocks are its own: ids no real trace uses.
        let own = [u64::MAX - index as u64];
        let ids = if line.hash_ids.is_empty() {
            &own[..]
        } else {
            &line.hash_ids[..]
        };
        let prompt = blocks(ids, line.input_length, &words);
        let exact = tokenizer.is_some_and(|t| t.count(&prompt) == line.input_length);
        let mut entry = Entry::single(
            Prompt::Text(prompt),
            line.input_length,
            exact,
            Some(line.output_length),
        );
        entry.at = Some(Duration::from_secs_f64(line.timestamp / 1e3));
        entries.push(entry);
    }
    if entries.is_empty() {
        return Err(DatasetError::Empty(path.to_owned()));
    }
    Ok(entries)
}

/// `tokens` words: the blocks of `ids` in order (a block's words drawn from a generator
/// seeded by its id; the last block, or the only one, as long as needed).
fn blocks(ids: &[u64], tokens: u64, words: &[&str]) -> String {
    let mut text = String::with_capacity(tokens as usize * 6);
    let mut left = tokens;
    for &id in ids {
        if left == 0 {
            break;
        }
        let mut rng = StdRng::seed_from_u64(id);
        let n = if ids.len() == 1 {
            left
        } else {
            left.min(BLOCK_TOKENS)
        };
        for _ in 0..n {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(words[rand::Rng::random_range(&mut rng, 0..words.len())]);
        }
        left -= n;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = r#"{"timestamp": 0, "input_length": 700, "output_length": 10, "hash_ids": [1, 2]}
{"timestamp": 250.5, "input_length": 600, "output_length": 4, "hash_ids": [1, 3]}

{"timestamp": 1000, "input_length": 30, "output_length": 2}
"#;

    #[test]
    fn lines_keep_their_times_lengths_and_shared_blocks() {
        let entries = parse(FIXTURE, Path::new("t.jsonl"), None).unwrap();
        let at: Vec<u128> = entries.iter().map(|e| e.at.unwrap().as_micros()).collect();
        assert_eq!(at, [0, 250_500, 1_000_000]);
        let lengths: Vec<(u64, Option<u64>)> = entries
            .iter()
            .map(|e| (e.input_tokens, e.output_tokens))
            .collect();
        assert_eq!(lengths, [(700, Some(10)), (600, Some(4)), (30, Some(2))]);
        let text = |i: usize| entries[i].prompt.as_text();
        let words = |i: usize| text(i).split(' ').count();
        assert_eq!((words(0), words(1), words(2)), (700, 600, 30));
        // Block 1 is the same 512 words in both requests; what follows differs.
        let first: Vec<String> = (0..2)
            .map(|i| text(i).split(' ').take(512).collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(first[0], first[1]);
        assert_ne!(text(0).split(' ').nth(512), None);
        assert_ne!(
            text(0).split(' ').skip(512).collect::<Vec<_>>(),
            text(1).split(' ').skip(512).take(188).collect::<Vec<_>>()
        );
    }

    #[test]
    fn bad_lines_are_named() {
        for (text, says) in [
            ("{\"timestamp\": 0}", "line 1"),
            (
                "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1}",
                "sort the trace",
            ),
            (
                "{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 1}",
                "at least 1",
            ),
            (
                "{\"timestamp\": 0, \"input_length\": 2000, \"output_length\": 1, \"hash_ids\": [1]}",
                "fewer than",
            ),
            (
                "{\"timestamp\": 0, \"input_length\": 2, \"output_length\": 1, \"extra\": 1}",
                "unknown field",
            ),
        ] {
            let err = parse(text, Path::new("t.jsonl"), None)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(says) && err.contains("Mooncake"),
                "{text}: {err}"
            );
        }
    }
}
