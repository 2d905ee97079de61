//! Simulated log probabilities (`logprobs`), in OpenAI's shapes.
//!
//! The simulator has no model, so the values are made up, deterministically from the token's
//! text, its position and its choice: the generated token is the most likely, with a
//! probability from 0.35 to 0.95; the alternatives are other words of the simulator's
//! vocabulary, each half as likely as the one before, sharing what is left. They have the
//! shape, order and ranges of real ones (every logprob at most 0, the probabilities of a
//! position summing to at most 1), so that clients that read them work; they mean nothing.
//!
//! | Endpoint | Asked with | Per token |
//! |---|---|---|
//! | chat | `"logprobs": true`, `"top_logprobs": k` | `logprobs.content[]`: `{token, logprob, bytes, top_logprobs: [k × {token, logprob, bytes}]}` |
//! | completions | `"logprobs": k` | `logprobs.tokens[]`, `token_logprobs[]`, `top_logprobs[]` (`{token: logprob}`, the generated token and `k` in all), `text_offset[]` |

use serde_json::{Map, Value, json};
use tokenmeter_sim::VOCABULARY;

/// One generated token's simulated log probabilities.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TokenLogprobs {
    /// The token's text.
    pub(crate) token: &'static str,
    /// The alternatives, most likely first: the token itself, then others.
    pub(crate) top: Vec<(&'static str, f64)>,
    /// The token's logprob.
    pub(crate) logprob: f64,
}

impl TokenLogprobs {
    /// The logprobs of `token`, at `position` of choice `choice`, with `k` alternatives.
    pub(crate) fn simulate(token: &'static str, position: u32, choice: u32, k: u8) -> Self {
        let mut seed = mix(u64::from(position) << 32 | u64::from(choice));
        for byte in token.bytes() {
            seed = mix(seed ^ u64::from(byte));
        }
        let chosen = 0.35 + 0.6 * (seed >> 11) as f64 / (1u64 << 53) as f64;
        let logprob = round(chosen.ln());
        let start = (seed % VOCABULARY.len() as u64) as usize;
        let others = (0..VOCABULARY.len())
            .map(|i| VOCABULARY[(start + i) % VOCABULARY.len()])
            .filter(|word| *word != token);
        let mut top = Vec::with_capacity(usize::from(k));
        if k > 0 {
            top.push((token, logprob));
        }
        let mut left = 1.0 - chosen;
        for word in others.take(usize::from(k).saturating_sub(1)) {
            left /= 2.0;
            top.push((word, round(left.ln())));
        }
        Self {
            token,
            top,
            logprob,
        }
    }

    /// A chat `logprobs.content` entry.
    pub(crate) fn chat_entry(&self) -> Value {
        let top: Vec<Value> = self
            .top
            .iter()
            .map(|(token, logprob)| json!({"token": token, "logprob": logprob, "bytes": token.as_bytes()}))
            .collect();
        json!({
            "token": self.token,
            "logprob": self.logprob,
            "bytes": self.token.as_bytes(),
            "top_logprobs": top,
        })
    }

    /// A completion's `top_logprobs` entry: `{token: logprob}`, the generated token included.
    fn completion_top(&self) -> Value {
        let mut top: Map<String, Value> = self
            .top
            .iter()
            .map(|(token, logprob)| ((*token).to_owned(), json!(logprob)))
            .collect();
        top.insert(self.token.to_owned(), json!(self.logprob));
        Value::Object(top)
    }
}

/// A chat choice's `logprobs`: `{"content": [...]}`.
pub(crate) fn chat(tokens: &[TokenLogprobs]) -> Value {
    json!({"content": tokens.iter().map(TokenLogprobs::chat_entry).collect::<Vec<_>>()})
}

/// A completion choice's `logprobs`; `offsets` are the tokens' byte offsets in the text.
pub(crate) fn completion(tokens: &[TokenLogprobs], offsets: &[usize]) -> Value {
    json!({
        "tokens": tokens.iter().map(|t| t.token).collect::<Vec<_>>(),
        "token_logprobs": tokens.iter().map(|t| t.logprob).collect::<Vec<_>>(),
        "top_logprobs": tokens.iter().map(TokenLogprobs::completion_top).collect::<Vec<_>>(),
        "text_offset": offsets,
    })
}

/// Four decimals, as the numbers are made up anyway (and shorter to send).
fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_plausible_and_deterministic() {
        for position in 0..50 {
            let lp = TokenLogprobs::simulate(" model", position, 1, 5);
            assert_eq!(lp, TokenLogprobs::simulate(" model", position, 1, 5));
            assert_eq!(lp.top.len(), 5);
            assert_eq!(lp.top[0], (" model", lp.logprob));
            assert!(lp.logprob <= 0.0 && lp.logprob > -1.1, "{lp:?}");
            let total: f64 = lp.top.iter().map(|(_, l)| l.exp()).sum();
            assert!(total <= 1.001, "{lp:?}");
            assert!(lp.top.windows(2).all(|w| w[0].1 >= w[1].1), "{lp:?}");
            assert!(lp.top[1..].iter().all(|(t, _)| *t != " model"));
        }
        assert!(TokenLogprobs::simulate(" a", 0, 0, 0).top.is_empty());
    }

    #[test]
    fn shapes_are_openais() {
        let tokens = [
            TokenLogprobs::simulate(" a", 0, 0, 2),
            TokenLogprobs::simulate(" b", 1, 0, 2),
        ];
        let chat = chat(&tokens);
        assert_eq!(chat["content"][1]["token"], " b");
        assert_eq!(chat["content"][0]["bytes"], json!([32, 97]));
        assert_eq!(
            chat["content"][0]["top_logprobs"].as_array().map(Vec::len),
            Some(2)
        );
        let text = completion(&tokens, &[0, 2]);
        assert_eq!(text["tokens"], json!([" a", " b"]));
        assert_eq!(text["text_offset"], json!([0, 2]));
        assert_eq!(text["top_logprobs"][0].as_object().map(Map::len), Some(2));
    }
}
