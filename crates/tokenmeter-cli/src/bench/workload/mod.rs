//! What to send and when: request specs (synthetic prompts or a dataset) and arrival times.

mod arrival;
mod dataset;
mod length;

pub(crate) use crate::tokenizer::PromptTokenizer;
pub(crate) use arrival::{ArrivalKind, Arrivals, Curve, Ramp, Span};
pub(crate) use dataset::{Entry, load as load_dataset};
pub(crate) use length::LengthDist;

use std::sync::Arc;

use rand::Rng;
use serde_json::Value;

/// The prompt of one request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Prompt {
    /// A text prompt (a single user message on the chat endpoint).
    Text(String),
    /// OpenAI chat messages, sent as given.
    Messages(Vec<Value>),
}

impl Prompt {
    /// A rough token count: whitespace-separated words of every text part.
    pub(crate) fn estimate_tokens(&self) -> u64 {
        match self {
            Prompt::Text(text) => words(text),
            Prompt::Messages(messages) => messages
                .iter()
                .filter_map(|m| m.get("content").and_then(Value::as_str))
                .map(words)
                .sum(),
        }
    }

    /// The prompt as one text (messages' contents joined by new lines).
    pub(crate) fn as_text(&self) -> String {
        match self {
            Prompt::Text(text) => text.clone(),
            Prompt::Messages(messages) => messages
                .iter()
                .filter_map(|m| m.get("content").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// One request to send.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RequestSpec {
    /// Index in the run, from 0.
    pub(crate) id: u64,
    /// What to send.
    pub(crate) prompt: Prompt,
    /// The prompt's length in tokens, as we generated or estimated it.
    pub(crate) input_tokens: u64,
    /// `input_tokens` is exact (counted with the tokenizer, or given by the dataset), not an
    /// estimate from words.
    pub(crate) input_exact: bool,
    /// `max_tokens` asked for.
    pub(crate) max_tokens: u64,
}

/// Where prompts come from.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// Synthetic prompts with these input and output length distributions.
    Synthetic {
        /// Input tokens.
        input: LengthDist,
        /// Output tokens.
        output: LengthDist,
        /// Makes prompts of exact lengths, when given.
        tokenizer: Option<Arc<PromptTokenizer>>,
    },
    /// A dataset, taken in order and cycled; `output` for lines without an output length.
    Dataset {
        /// The entries.
        entries: Vec<Entry>,
        /// Output tokens for entries that give none.
        output: LengthDist,
    },
}

/// Short words that are one token in common tokenizers.
const VOCABULARY: [&str; 32] = [
    "the", "of", "and", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are",
    "as", "with", "his", "they", "at", "be", "this", "have", "from", "or", "one", "had", "by",
    "word", "but", "not", "what", "all",
];

/// `n` request specs from `source`.
pub(crate) fn specs(source: &Source, n: usize, rng: &mut impl Rng) -> Vec<RequestSpec> {
    Specs::new(source, rng).take(n).collect()
}

/// The request specs of `source`, one after another without end (a dataset is cycled).
#[derive(Debug)]
pub(crate) struct Specs<'a, R> {
    source: &'a Source,
    rng: R,
    next: u64,
}

impl<'a, R: Rng> Specs<'a, R> {
    /// Specs drawn from `source` with `rng`.
    pub(crate) fn new(source: &'a Source, rng: R) -> Self {
        Self {
            source,
            rng,
            next: 0,
        }
    }
}

impl<R: Rng> Iterator for Specs<'_, R> {
    type Item = RequestSpec;

    fn next(&mut self) -> Option<RequestSpec> {
        let id = self.next;
        self.next += 1;
        let rng = &mut self.rng;
        let (prompt, input_tokens, input_exact, max_tokens) = match self.source {
            Source::Synthetic {
                input,
                output,
                tokenizer,
            } => {
                let length = input.sample(rng);
                let prompt = match tokenizer {
                    // A length the tokenizer cannot make exactly falls back to words (and
                    // says so: the length is then an estimate).
                    Some(t) => t.prompt(length, rng).ok().map(Prompt::Text),
                    None => None,
                };
                let exact = prompt.is_some();
                let prompt = prompt.unwrap_or_else(|| synthetic_prompt(length, rng));
                (prompt, length, exact, output.sample(rng))
            }
            Source::Dataset { entries, output } => {
                let entry = &entries[(id % entries.len() as u64) as usize];
                let max = entry.output_tokens.unwrap_or_else(|| output.sample(rng));
                (
                    entry.prompt.clone(),
                    entry.input_tokens,
                    entry.input_exact,
                    max,
                )
            }
        };
        Some(RequestSpec {
            id,
            prompt,
            input_tokens,
            input_exact,
            max_tokens,
        })
    }
}

fn synthetic_prompt(words: u64, rng: &mut impl Rng) -> Prompt {
    let mut text = String::with_capacity(words as usize * 5);
    for i in 0..words {
        if i > 0 {
            text.push(' ');
        }
        text.push_str(VOCABULARY[rng.random_range(0..VOCABULARY.len())]);
    }
    Prompt::Text(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn synthetic_prompts_have_the_sampled_length() {
        let source = Source::Synthetic {
            input: LengthDist::Uniform(5, 50),
            output: LengthDist::Fixed(9),
            tokenizer: None,
        };
        let specs = specs(&source, 20, &mut StdRng::seed_from_u64(3));
        for (i, spec) in specs.iter().enumerate() {
            assert_eq!(spec.id, i as u64);
            assert_eq!(spec.prompt.estimate_tokens(), spec.input_tokens);
            assert_eq!(spec.max_tokens, 9);
        }
    }

    #[test]
    fn datasets_are_cycled() {
        let entries = vec![
            Entry {
                prompt: Prompt::Text("a b".into()),
                input_tokens: 2,
                input_exact: true,
                output_tokens: Some(4),
            },
            Entry {
                prompt: Prompt::Text("c".into()),
                input_tokens: 1,
                input_exact: false,
                output_tokens: None,
            },
        ];
        let source = Source::Dataset {
            entries,
            output: LengthDist::Fixed(7),
        };
        let specs = specs(&source, 3, &mut StdRng::seed_from_u64(0));
        let got: Vec<(u64, u64)> = specs
            .iter()
            .map(|s| (s.input_tokens, s.max_tokens))
            .collect();
        assert_eq!(got, [(2, 4), (1, 7), (2, 4)]);
    }
}
