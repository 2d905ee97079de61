//! [`Token`]: one generated token, and the vocabulary its text comes from.

use rand::Rng;
use tokenmeter::FinishReason;

/// The words generated text is drawn from; each is one token and starts with a space (a
/// server that simulates log probabilities can draw the alternatives of a token from it).
pub const VOCABULARY: [&str; 32] = [
    " the", " a", " model", " token", " stream", " latency", " of", " and", " to", " is", " first",
    " time", " request", " server", " batch", " queue", " cache", " fast", " slow", " user",
    " answer", " text", " in", " on", " for", " with", " each", " step", " decode", " prefill",
    " goodput", " again",
];

/// A generated token: its position, its text, and on the last one the finish reason.
///
/// # Examples
///
/// ```
/// use tokenmeter_sim::Token;
/// # fn show(token: Token) {
/// print!("{}", token.text);
/// if let Some(reason) = token.finish_reason {
///     println!(" [{reason}] after {} tokens", token.index + 1);
/// }
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Token {
    /// Position in the output, from 0.
    pub index: u32,
    /// The token's text: one word with a leading space.
    pub text: &'static str,
    /// Set on the last token only.
    pub finish_reason: Option<FinishReason>,
    /// True for a reasoning token (the request's first
    /// [`reasoning_tokens`](crate::GenerateRequest::reasoning_tokens)).
    pub reasoning: bool,
    /// Prompt tokens of its request that the prefix cache had (the prefill skipped them):
    /// what an OpenAI-compatible server reports as `usage.prompt_tokens_details.cached_tokens`.
    pub cached_prompt_tokens: u32,
}

/// Draws a word.
pub(crate) fn word(rng: &mut impl Rng) -> &'static str {
    VOCABULARY[rng.random_range(0..VOCABULARY.len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_is_one_space_then_letters() {
        for word in VOCABULARY {
            let rest = word.strip_prefix(' ').expect("leading space");
            assert!(
                !rest.is_empty() && rest.chars().all(|c| c.is_ascii_lowercase()),
                "{word:?}"
            );
        }
    }
}
