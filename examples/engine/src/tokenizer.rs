//! The tokenizer: one token per whitespace-separated word, each word hashed into the
//! vocabulary (FNV-1a), and each token id written back as a made-up word.
//!
//! Deterministic and simple on purpose: `tokenmeter bench --input-tokens N` sends N words
//! (without `--tokenizer` it counts one token per word), so `usage.prompt_tokens` here is exactly
//! what the bench asked for, and an answer of K tokens is K words the bench can count again.

/// Words to ids and ids to words, over a vocabulary of `vocab` ids.
#[derive(Clone, Debug)]
pub struct Tokenizer {
    vocab: u32,
}

/// Syllables of the made-up words an id is written as (16 of them: one per hex digit).
const SYLLABLES: [&str; 16] = [
    "ka", "lo", "mi", "ne", "ru", "ta", "vo", "si", "pe", "du", "ga", "ho", "ze", "bi", "fu", "yo",
];

impl Tokenizer {
    /// A tokenizer over `vocab` ids (at least 2).
    pub fn new(vocab: u32) -> Self {
        Self {
            vocab: vocab.max(2),
        }
    }

    /// The ids of `text`: one per whitespace-separated word.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        text.split_whitespace().map(|w| self.id(w)).collect()
    }

    /// A word's id: its FNV-1a hash modulo the vocabulary.
    pub fn id(&self, word: &str) -> u32 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in word.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        (hash % u64::from(self.vocab)) as u32
    }

    /// The word an id is written as (its hex digits as syllables): one whitespace-free word.
    pub fn word(&self, id: u32) -> String {
        let mut word = String::new();
        let mut rest = id;
        loop {
            word.push_str(SYLLABLES[(rest % 16) as usize]);
            rest /= 16;
            if rest == 0 {
                return word;
            }
        }
    }

    /// The text of one output token: its word, after a space unless it is the first.
    pub fn piece(&self, id: u32, first: bool) -> String {
        let word = self.word(id);
        if first { word } else { format!(" {word}") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_token_per_word_and_words_count_back() {
        let t = Tokenizer::new(4096);
        let ids = t.encode("  the meter\tof a\ntoken ");
        assert_eq!(ids.len(), 5);
        assert!(ids.iter().all(|&id| id < 4096));
        assert_eq!(t.encode("meter"), t.encode("meter"), "deterministic");
        let text: String = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| t.piece(id, i == 0))
            .collect();
        assert_eq!(t.encode(&text).len(), 5, "{text:?}");
    }
}
