//! `--tokenizer tokenizer.json`: a Hugging Face tokenizer (the `tokenizers` crate, loaded from a
//! file; nothing is fetched) for exact lengths, in `bench` (prompts, counts) and `serve` (the
//! prompt tokens of `usage`).
//!
//! Prompts of exactly N tokens are made of vocabulary words that are one token both at the
//! start of a text and after a space, joined by spaces, and checked by encoding the result
//! (without special tokens: a server's chat template or BOS adds its own, the same for every
//! request). Dataset prompts are counted with it instead of by words.

use std::path::{Path, PathBuf};

use rand::Rng;
use tokenizers::Tokenizer;

/// A tokenizer and the one-token words it makes prompts of.
#[derive(Clone)]
pub struct PromptTokenizer {
    path: PathBuf,
    tokenizer: Tokenizer,
    words: Vec<String>,
}

impl std::fmt::Debug for PromptTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptTokenizer")
            .field("path", &self.path)
            .field("words", &self.words.len())
            .finish_non_exhaustive()
    }
}

/// Why a tokenizer cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenizerError {
    /// The file is not a tokenizer the crate reads.
    #[error(
        "cannot load tokenizer {path}: {why}; give the `tokenizer.json` of the model (Hugging \
         Face format, e.g. from the model's repository)"
    )]
    Load {
        /// The file.
        path: PathBuf,
        /// What the loader said.
        why: String,
    },
    /// Too few words encode as one token to make prompts.
    #[error(
        "tokenizer {path} has {found} words that are one token (at least {MIN_WORDS} are \
         needed to make prompts of exact lengths); use the model's own tokenizer.json"
    )]
    FewWords {
        /// The file.
        path: PathBuf,
        /// One-token words found.
        found: usize,
    },
    /// A prompt of the asked length could not be made.
    #[error("tokenizer {path} could not make a prompt of exactly {tokens} tokens")]
    Length {
        /// The file.
        path: PathBuf,
        /// The length asked.
        tokens: u64,
    },
}

/// The fewest one-token words a tokenizer must offer.
const MIN_WORDS: usize = 16;

/// The most one-token words kept (they are drawn uniformly).
const MAX_WORDS: usize = 4_096;

/// Tries per prompt before giving up (a join of one-token words rarely merges).
const TRIES: usize = 8;

impl PromptTokenizer {
    /// Loads `path` and finds its one-token words.
    pub fn load(path: &Path) -> Result<Self, TokenizerError> {
        let tokenizer = Tokenizer::from_file(path).map_err(|e| TokenizerError::Load {
            path: path.to_owned(),
            why: e.to_string(),
        })?;
        let mut vocab: Vec<(String, u32)> = tokenizer.get_vocab(false).into_iter().collect();
        vocab.sort_by_key(|(_, id)| *id);
        let mut words = Vec::new();
        for (_, id) in vocab {
            let Ok(text) = tokenizer.decode(&[id], true) else {
                continue;
            };
            let word = text.trim();
            let plain =
                (2..=12).contains(&word.len()) && word.bytes().all(|b| b.is_ascii_lowercase());
            if !plain || words.iter().any(|w: &String| w == word) {
                continue;
            }
            let one = |text: &str| {
                tokenizer
                    .encode(text, false)
                    .is_ok_and(|e| e.get_ids().len() == 1)
            };
            if one(word) && one(&format!(" {word}")) {
                words.push(word.to_owned());
                if words.len() == MAX_WORDS {
                    break;
                }
            }
        }
        if words.len() < MIN_WORDS {
            return Err(TokenizerError::FewWords {
                path: path.to_owned(),
                found: words.len(),
            });
        }
        Ok(Self {
            path: path.to_owned(),
            tokenizer,
            words,
        })
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The words that are one token each, alone or after a space: text made of them joined by
    /// spaces has as many tokens as words (checked by [`prompt`](Self::prompt)).
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// Tokens of `text`, without special tokens (0 when it cannot be encoded).
    pub fn count(&self, text: &str) -> u64 {
        self.tokenizer
            .encode(text, false)
            .map_or(0, |e| e.get_ids().len() as u64)
    }

    /// A prompt of exactly `tokens` tokens.
    pub fn prompt(&self, tokens: u64, rng: &mut impl Rng) -> Result<String, TokenizerError> {
        for _ in 0..TRIES {
            let mut text = String::with_capacity(tokens as usize * 6);
            for i in 0..tokens {
                if i > 0 {
                    text.push(' ');
                }
                text.push_str(&self.words[rng.random_range(0..self.words.len())]);
            }
            if self.count(&text) == tokens {
                return Ok(text);
            }
        }
        Err(TokenizerError::Length {
            path: self.path.clone(),
            tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use tokenmeter_tests::tokenizer::small_bpe;

    #[test]
    fn prompts_have_exactly_the_asked_number_of_tokens() {
        let dir = std::env::temp_dir().join(format!("tm-tok-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = small_bpe(&dir);
        let tokenizer = PromptTokenizer::load(&path).expect("it loads");
        let mut rng = StdRng::seed_from_u64(1);
        for tokens in [1, 2, 7, 64, 500, 3000] {
            let prompt = tokenizer.prompt(tokens, &mut rng).expect("a prompt");
            assert_eq!(tokenizer.count(&prompt), tokens, "{prompt}");
            // Not a count of words by accident: the tokenizer splits other text differently.
            assert_ne!(tokenizer.count("tokenization"), 1);
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn bad_files_are_named() {
        let dir = std::env::temp_dir().join(format!("tm-tok-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokenizer.json");
        std::fs::write(&path, "{\"not\": \"a tokenizer\"}").unwrap();
        let err = PromptTokenizer::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("tokenizer.json") && err.contains("cannot load"),
            "{err}"
        );
        let err = PromptTokenizer::load(&dir.join("missing.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing.json"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
