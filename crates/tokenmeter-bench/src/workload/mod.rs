//! What to send and when: request specs (synthetic prompts or a dataset) and arrival times.

mod arrival;
mod cancel;
mod dataset;
mod describe;
mod entry;
mod length;
mod mooncake;
mod sharegpt;

pub use arrival::{ArrivalKind, Curve};
pub(crate) use arrival::{Arrivals, Ramp, Span};
pub use cancel::CancelAt;
pub(crate) use cancel::Injection;
pub(crate) use dataset::load as load_dataset;
pub use entry::Format as DatasetFormat;
pub(crate) use entry::{Entry, Options as DatasetOptions};
pub use length::{LengthDist, LengthError};
pub(crate) use tokenmeter_server::tokenizer::PromptTokenizer;

use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng as _};

use crate::slo_class::SloTag;
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
    /// When to send it, from the start of the stage (a replayed trace).
    pub(crate) at: Option<Duration>,
    /// Its turn in a conversation (0: the first, or a request alone).
    pub(crate) turn: u32,
    /// For a later turn: the pause after the previous turn's answer before it is sent.
    pub(crate) think: Duration,
    /// The later turns of its conversation, sent one after another once it is answered.
    pub(crate) next: Vec<RequestSpec>,
    /// Hang up at this point (an injected cancellation).
    pub(crate) cancel: Option<CancelAt>,
    /// Another shard's (`--shard`): its arrival is drawn, but it is not sent.
    pub(crate) skip: bool,
    /// The `--slo-class` a dataset line names.
    pub(crate) slo_class: Option<String>,
    /// Its `--slo-class`: the objective headers it sends.
    pub(crate) slo: Option<SloTag>,
}

impl RequestSpec {
    /// A request alone.
    pub(crate) fn single(id: u64, prompt: Prompt, input_tokens: u64, max_tokens: u64) -> Self {
        Self {
            id,
            prompt,
            input_tokens,
            input_exact: false,
            max_tokens,
            at: None,
            turn: 0,
            think: Duration::ZERO,
            next: Vec::new(),
            cancel: None,
            skip: false,
            slo_class: None,
            slo: None,
        }
    }
}

/// A shared-prefix workload: `groups` prefixes of `tokens` tokens, request `i` starting with
/// prefix `i mod groups`, then a suffix of its own of `--input-tokens`.
///
/// ```
/// use tokenmeter_bench::SharedPrefix;
///
/// assert!("8:1024".parse::<SharedPrefix>().is_ok());
/// assert!("8".parse::<SharedPrefix>().unwrap_err().contains("GROUPS:TOKENS"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedPrefix {
    /// Distinct prefixes.
    pub(crate) groups: u64,
    /// Tokens of each prefix.
    pub(crate) tokens: u64,
}

impl std::str::FromStr for SharedPrefix {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let parsed = text.split_once(':').and_then(|(g, t)| {
            let (g, t) = (g.trim().parse::<u64>().ok()?, t.trim().parse::<u64>().ok()?);
            (g > 0 && t > 0 && t <= length::MAX_TOKENS).then_some(Self {
                groups: g,
                tokens: t,
            })
        });
        parsed.ok_or_else(|| {
            format!(
                "`{text}` is not a shared prefix; give GROUPS:TOKENS, e.g. 8:1024 (8 prefixes of \
                 1024 tokens)"
            )
        })
    }
}

/// Where prompts come from.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// Synthetic prompts with these input and output length distributions.
    Synthetic {
        /// Input tokens (of each turn's new message, after any shared prefix).
        input: LengthDist,
        /// Output tokens.
        output: LengthDist,
        /// Makes prompts of exact lengths, when given.
        tokenizer: Option<Arc<PromptTokenizer>>,
        /// Prefixes shared between requests.
        shared_prefix: Option<SharedPrefix>,
        /// Turns per conversation (1: requests alone).
        turns: u32,
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
pub(crate) const VOCABULARY: [&str; 32] = [
    "the", "of", "and", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are",
    "as", "with", "his", "they", "at", "be", "this", "have", "from", "or", "one", "had", "by",
    "word", "but", "not", "what", "all",
];

/// `n` request specs from `source` (conversations count as one).
pub(crate) fn specs(source: &Source, n: usize, rng: &mut impl Rng) -> Vec<RequestSpec> {
    Specs::new(source, rng, Duration::ZERO).take(n).collect()
}

/// The request specs of `source`, one after another without end (a dataset is cycled). Each
/// item is a request alone or the first turn of a conversation, carrying its later turns; ids
/// count every turn.
#[derive(Debug)]
pub(crate) struct Specs<'a, R> {
    source: &'a Source,
    rng: R,
    think: Duration,
    next_id: u64,
    index: u64,
}

impl<'a, R: Rng> Specs<'a, R> {
    /// Specs drawn from `source` with `rng`; later turns of a conversation wait `think` after
    /// the answer before.
    pub(crate) fn new(source: &'a Source, rng: R, think: Duration) -> Self {
        Self {
            source,
            rng,
            think,
            next_id: 0,
            index: 0,
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    fn synthetic(
        &mut self,
        input: &LengthDist,
        output: &LengthDist,
        tokenizer: Option<&PromptTokenizer>,
        shared_prefix: Option<SharedPrefix>,
        turns: u32,
    ) -> RequestSpec {
        let index = self.index;
        let mut history: Vec<Value> = Vec::new();
        let (mut history_tokens, mut history_exact) = (0_u64, true);
        let mut specs = Vec::with_capacity(turns as usize);
        for turn in 0..turns.max(1) {
            let rng = &mut self.rng;
            let length = input.sample(rng);
            let max_tokens = output.sample(rng);
            let (mut text, mut exact) = text_of(length, tokenizer, rng);
            let mut tokens = length;
            if let (0, Some(prefix)) = (turn, shared_prefix) {
                let group = index % prefix.groups;
                let mut group_rng = rand::rngs::StdRng::seed_from_u64(PREFIX_SEED ^ group);
                let (head, head_exact) = text_of(prefix.tokens, tokenizer, &mut group_rng);
                text = format!("{head} {text}");
                tokens += prefix.tokens;
                exact = head_exact && exact && tokenizer.is_some_and(|t| t.count(&text) == tokens);
            }
            let prompt = if turns > 1 {
                history.push(serde_json::json!({"role": "user", "content": text}));
                Prompt::Messages(history.clone())
            } else {
                Prompt::Text(text)
            };
            let mut spec = RequestSpec::single(0, prompt, history_tokens + tokens, max_tokens);
            spec.input_exact = exact && history_exact;
            spec.turn = turn;
            if turn > 0 {
                spec.think = self.think;
            }
            specs.push(spec);
            if turns > 1 {
                // The assistant's turn as the history holds it: text of the length asked.
                let (reply, reply_exact) = text_of(max_tokens, tokenizer, &mut self.rng);
                history.push(serde_json::json!({"role": "assistant", "content": reply}));
                history_tokens += tokens + max_tokens;
                history_exact &= exact && reply_exact;
            }
        }
        self.chain(specs)
    }

    /// Numbers `specs` (a conversation's turns) and nests the later ones in the first.
    fn chain(&mut self, specs: Vec<RequestSpec>) -> RequestSpec {
        let mut specs = specs.into_iter();
        let mut first = specs
            .next()
            .unwrap_or_else(|| RequestSpec::single(0, Prompt::Text(String::new()), 0, 1));
        first.id = self.id();
        for mut later in specs {
            later.id = self.id();
            first.next.push(later);
        }
        first
    }
}

/// Mixed into a shared prefix's group number for its words.
const PREFIX_SEED: u64 = 0x9_4e_f1;

/// Text of `tokens` tokens: exact with the tokenizer (`true`), else that many words.
fn text_of(tokens: u64, tokenizer: Option<&PromptTokenizer>, rng: &mut impl Rng) -> (String, bool) {
    if let Some(prompt) = tokenizer.and_then(|t| t.prompt(tokens, rng).ok()) {
        return (prompt, true);
    }
    let Prompt::Text(text) = synthetic_prompt(tokens, rng) else {
        unreachable!("synthetic prompts are text")
    };
    (text, false)
}

impl<R: Rng> Iterator for Specs<'_, R> {
    type Item = RequestSpec;

    fn next(&mut self) -> Option<RequestSpec> {
        let spec = match self.source {
            Source::Synthetic {
                input,
                output,
                tokenizer,
                shared_prefix,
                turns,
            } => self.synthetic(input, output, tokenizer.as_deref(), *shared_prefix, *turns),
            Source::Dataset { entries, output } => {
                let entry = &entries[(self.index % entries.len() as u64) as usize];
                let mut turns = Vec::with_capacity(1 + entry.next.len());
                for (turn, one) in std::iter::once(entry).chain(&entry.next).enumerate() {
                    let max = one
                        .output_tokens
                        .unwrap_or_else(|| output.sample(&mut self.rng));
                    let mut spec =
                        RequestSpec::single(0, one.prompt.clone(), one.input_tokens, max);
                    spec.input_exact = one.input_exact;
                    spec.at = one.at;
                    spec.slo_class.clone_from(&entry.slo_class);
                    spec.turn = turn as u32;
                    if turn > 0 {
                        spec.think = self.think;
                    }
                    turns.push(spec);
                }
                self.chain(turns)
            }
        };
        self.index += 1;
        Some(spec)
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
            shared_prefix: None,
            turns: 1,
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
            Entry::single(Prompt::Text("a b".into()), 2, true, Some(4)),
            Entry::single(Prompt::Text("c".into()), 1, false, None),
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
