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
//! | completions | `"logprobs": k` | `logprobs.tokens[]`, `token_logprobs[]`, `top_logprobs[]` (`{token: logprob}`, the generated token first, and `k` in all), `text_offset[]` |
//!
//! They are written straight as JSON bytes ([`JsonLogprobs`]): a whole answer appends each
//! token's entry as the token comes and keeps nothing else of it, so the answer's memory is
//! its own size (a tree of `serde_json::Value`s, a map node, key strings and a byte array per
//! alternative, took about 30 times that in heap and 40 times in resident memory).

use std::io::Write as _;
use std::sync::OnceLock;

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
    /// The index in [`VOCABULARY`] of the token, then of each alternative (`None` for a text
    /// not in it), whose JSON is written once ([`words`]) rather than for every token.
    words: Vec<Option<u8>>,
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
            .map(|i| (start + i) % VOCABULARY.len())
            .filter(|&i| VOCABULARY[i] != token);
        let own = VOCABULARY.iter().position(|w| *w == token).map(|i| i as u8);
        let mut top = Vec::with_capacity(usize::from(k));
        let mut words = Vec::with_capacity(usize::from(k) + 1);
        words.push(own);
        if k > 0 {
            top.push((token, logprob));
            words.push(own);
        }
        let mut left = 1.0 - chosen;
        for i in others.take(usize::from(k).saturating_sub(1)) {
            left /= 2.0;
            top.push((VOCABULARY[i], round(left.ln())));
            words.push(Some(i as u8));
        }
        Self {
            token,
            top,
            logprob,
            words,
        }
    }

    /// Appends its chat `logprobs.content` entry:
    /// `{"token","logprob","bytes","top_logprobs":[{"token","logprob","bytes"}, …]}`.
    pub(crate) fn write_chat_entry(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{");
        write_alternative(out, self.token, self.word(0), self.logprob);
        out.extend_from_slice(br#","top_logprobs":["#);
        for (i, (token, logprob)) in self.top.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'{');
            write_alternative(out, token, self.word(i + 1), *logprob);
            out.push(b'}');
        }
        out.extend_from_slice(b"]}");
    }

    /// The written JSON of word `i` (0: the token, then the alternatives), if in the
    /// vocabulary.
    fn word(&self, i: usize) -> Option<&'static WordJson> {
        let index = (*self.words.get(i)?)?;
        words().get(usize::from(index))
    }

    /// Appends its completion `top_logprobs` entry: `{token: logprob, …}`, the generated
    /// token first, then the other alternatives, most likely first.
    pub(crate) fn write_completion_top(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        write_key(out, self.token, self.word(0));
        write_number(out, self.logprob);
        for (i, (token, logprob)) in self.top.iter().enumerate() {
            if *token != self.token {
                out.push(b',');
                write_key(out, token, self.word(i + 1));
                write_number(out, *logprob);
            }
        }
        out.push(b'}');
    }

    /// The `logprobs` of a chunk that carries this token alone, in the endpoint's shape
    /// (`chat`, else completions); `offset` is the token's byte offset in the choice's text.
    pub(crate) fn chunk_json(&self, chat: bool, offset: usize) -> Vec<u8> {
        let mut json = JsonLogprobs::new(chat);
        json.push(self, offset);
        json.finish()
    }
}

/// A choice's `logprobs`, written as JSON as its tokens come: each token's entry is appended to
/// the bytes of the answer and nothing else of it is kept (a whole answer holds its JSON, not a
/// tree of values).
#[derive(Debug)]
pub(crate) enum JsonLogprobs {
    /// Chat: `{"content":[` and the entries so far, comma-separated.
    Chat {
        /// The object so far.
        content: Vec<u8>,
    },
    /// Completions: the four parallel arrays' items so far, each comma-separated.
    Completion {
        /// `tokens`.
        tokens: Vec<u8>,
        /// `token_logprobs`.
        token_logprobs: Vec<u8>,
        /// `top_logprobs`.
        top: Vec<u8>,
        /// `text_offset`.
        offsets: Vec<u8>,
    },
}

impl JsonLogprobs {
    /// No token yet, in the shape of a chat answer (`chat`) or a completion.
    pub(crate) fn new(chat: bool) -> Self {
        if chat {
            Self::Chat {
                content: CHAT_HEAD.to_vec(),
            }
        } else {
            Self::Completion {
                tokens: Vec::new(),
                token_logprobs: Vec::new(),
                top: Vec::new(),
                offsets: Vec::new(),
            }
        }
    }

    /// Appends one token's entry; `offset` is its byte offset in the choice's text.
    pub(crate) fn push(&mut self, token: &TokenLogprobs, offset: usize) {
        match self {
            Self::Chat { content } => {
                if content.len() > CHAT_HEAD.len() {
                    content.push(b',');
                }
                token.write_chat_entry(content);
            }
            Self::Completion {
                tokens,
                token_logprobs,
                top,
                offsets,
            } => {
                separate(tokens);
                write_json_str(tokens, token.token);
                separate(token_logprobs);
                write_number(token_logprobs, token.logprob);
                separate(top);
                token.write_completion_top(top);
                separate(offsets);
                write_u64(offsets, offset as u64);
            }
        }
    }

    /// The bytes written so far (an upper bound on what [`JsonLogprobs::finish`] adds is
    /// [`JsonLogprobs::FRAME`]).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Chat { content } => content.len(),
            Self::Completion {
                tokens,
                token_logprobs,
                top,
                offsets,
            } => tokens.len() + token_logprobs.len() + top.len() + offsets.len(),
        }
    }

    /// The most bytes [`JsonLogprobs::finish`] adds around the entries.
    pub(crate) const FRAME: usize =
        r#"{"tokens":[],"token_logprobs":[],"top_logprobs":[],"text_offset":[]}"#.len();

    /// The whole `logprobs` object. A chat object is closed where it was written; a
    /// completion's four arrays are joined.
    pub(crate) fn finish(self) -> Vec<u8> {
        match self {
            Self::Chat { mut content } => {
                content.extend_from_slice(b"]}");
                content
            }
            Self::Completion {
                tokens,
                token_logprobs,
                top,
                offsets,
            } => {
                let mut out = Vec::with_capacity(
                    Self::FRAME + tokens.len() + token_logprobs.len() + top.len() + offsets.len(),
                );
                for (key, items) in [
                    (&br#"{"tokens":["#[..], tokens),
                    (br#"],"token_logprobs":["#, token_logprobs),
                    (br#"],"top_logprobs":["#, top),
                    (br#"],"text_offset":["#, offsets),
                ] {
                    out.extend_from_slice(key);
                    out.extend_from_slice(&items);
                }
                out.extend_from_slice(b"]}");
                out
            }
        }
    }
}

/// How a chat `logprobs` object starts.
const CHAT_HEAD: &[u8] = br#"{"content":["#;

/// The most bytes a simulated logprob takes written: `-99.9999` (each is above -100; the
/// least likely of 20 alternatives is about -17).
const NUMBER_BOUND: u64 = 8;

/// The most bytes one token adds to a choice's `logprobs` with `k` alternatives, in the
/// endpoint's shape (`chat`, else completions): what [`JsonLogprobs::push`] writes for the
/// longest word of the vocabulary with the longest logprob, and at most 20 digits of offset.
pub(crate) fn worst_entry_bytes(chat: bool, k: u8) -> u64 {
    let widest = |f: fn(&WordJson) -> usize| words().iter().map(f).max().unwrap_or(0) as u64;
    let k = u64::from(k);
    if chat {
        let alternative = widest(|w| w.head.len() + w.bytes.len()) + NUMBER_BOUND;
        // `,` `{` alternative `,"top_logprobs":[` k × `{` alternative `}` (k - 1) × `,` `]}`
        let list = br#","top_logprobs":["#.len() as u64;
        2 + alternative + list + k * (alternative + 3) + 2
    } else {
        let key = widest(|w| w.key.len());
        // tokens `,"w"`; token_logprobs `,n`; top `,{` max(k, 1) × `"w":n` with commas `}`;
        // text_offset `,` and 20 digits.
        key + (1 + NUMBER_BOUND) + (3 + k.max(1) * (key + NUMBER_BOUND + 1)) + 21
    }
}

/// A comma before every item but the first.
fn separate(items: &mut Vec<u8>) {
    if !items.is_empty() {
        items.push(b',');
    }
}

/// A word's JSON, written once: the pieces of an alternative around its logprob.
#[derive(Debug)]
struct WordJson {
    /// `"token":"w","logprob":`.
    head: Vec<u8>,
    /// `,"bytes":[…]`.
    bytes: Vec<u8>,
    /// `"w":`.
    key: Vec<u8>,
}

impl WordJson {
    fn of(word: &str) -> Self {
        let mut head = br#""token":"#.to_vec();
        write_json_str(&mut head, word);
        head.extend_from_slice(br#","logprob":"#);
        let mut bytes = br#","bytes":["#.to_vec();
        for (i, &byte) in word.as_bytes().iter().enumerate() {
            if i > 0 {
                bytes.push(b',');
            }
            write_u8(&mut bytes, byte);
        }
        bytes.push(b']');
        let mut key = Vec::new();
        write_json_str(&mut key, word);
        key.push(b':');
        Self { head, bytes, key }
    }
}

/// The JSON of every word of [`VOCABULARY`], by index.
fn words() -> &'static [WordJson] {
    static WORDS: OnceLock<Vec<WordJson>> = OnceLock::new();
    WORDS.get_or_init(|| VOCABULARY.iter().map(|w| WordJson::of(w)).collect())
}

/// `"token":…,"logprob":…,"bytes":[…]`, from `json` (the token's, written once) when given.
fn write_alternative(out: &mut Vec<u8>, token: &str, json: Option<&WordJson>, logprob: f64) {
    let written;
    let json = match json {
        Some(json) => json,
        None => {
            written = WordJson::of(token);
            &written
        }
    };
    out.extend_from_slice(&json.head);
    write_number(out, logprob);
    out.extend_from_slice(&json.bytes);
}

/// `"token":`, from `json` when given.
fn write_key(out: &mut Vec<u8>, token: &str, json: Option<&WordJson>) {
    match json {
        Some(json) => out.extend_from_slice(&json.key),
        None => {
            write_json_str(out, token);
            out.push(b':');
        }
    }
}

/// A JSON string, escaped as serde_json escapes it. Written by hand when nothing needs
/// escaping (every word of the vocabulary): this runs 21 times per token of an answer with
/// `top_logprobs` 20.
pub(crate) fn write_json_str(out: &mut Vec<u8>, text: &str) {
    let mut plain = true;
    for &b in text.as_bytes() {
        plain &= b >= 0x20 && b != b'"' && b != b'\\';
    }
    if plain {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        // Writing to a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut *out, text);
    }
}

/// A number as serde_json writes it: the shortest form that reads back the same, with `.0`
/// on a whole number (`null` if not finite, which the simulation never makes). A number of
/// at most four decimals (every simulated one, [`round`]) is written digit by digit; others
/// by `Display` (which, unlike serde_json, never uses an exponent: both are valid JSON).
fn write_number(out: &mut Vec<u8>, value: f64) {
    if !value.is_finite() {
        out.extend_from_slice(b"null");
        return;
    }
    let scaled = (value * 10_000.0).round();
    if scaled.abs() < 1e12 && scaled / 10_000.0 == value {
        // Exact: the decimal of `scaled` / 10^4 is the shortest that reads back as `value`.
        let mut n = scaled.abs() as u64;
        let mut buffer = [0u8; 24];
        let mut at = buffer.len();
        let mut decimals = 0;
        while decimals < 4 {
            if !n.is_multiple_of(10) || at < buffer.len() {
                at -= 1;
                buffer[at] = b'0' + (n % 10) as u8;
            }
            n /= 10;
            decimals += 1;
        }
        if at == buffer.len() {
            at -= 1;
            buffer[at] = b'0';
        }
        at -= 1;
        buffer[at] = b'.';
        loop {
            at -= 1;
            buffer[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        if value.is_sign_negative() {
            at -= 1;
            buffer[at] = b'-';
        }
        out.extend_from_slice(&buffer[at..]);
        return;
    }
    let start = out.len();
    let _ = write!(out, "{value}");
    if !out[start..].contains(&b'.') {
        out.extend_from_slice(b".0");
    }
}

/// A byte in decimal.
fn write_u8(out: &mut Vec<u8>, byte: u8) {
    if byte >= 100 {
        out.push(b'0' + byte / 100);
    }
    if byte >= 10 {
        out.push(b'0' + byte / 10 % 10);
    }
    out.push(b'0' + byte % 10);
}

/// A whole number in decimal.
fn write_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
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
    use serde_json::{Map, Value, json};

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
        let render = |chat: bool| {
            let mut json = JsonLogprobs::new(chat);
            json.push(&tokens[0], 0);
            json.push(&tokens[1], 2);
            let len = json.len();
            let bytes = json.finish();
            assert!(bytes.len() <= len + JsonLogprobs::FRAME);
            serde_json::from_slice::<Value>(&bytes).expect("valid JSON")
        };
        let chat = render(true);
        assert_eq!(chat["content"][1]["token"], " b");
        assert_eq!(chat["content"][0]["bytes"], json!([32, 97]));
        assert_eq!(chat["content"][0]["logprob"], json!(tokens[0].logprob));
        let top = &chat["content"][0]["top_logprobs"];
        assert_eq!(top.as_array().map(Vec::len), Some(2));
        assert_eq!(top[1]["token"], json!(tokens[0].top[1].0));
        assert_eq!(top[1]["logprob"], json!(tokens[0].top[1].1));
        assert_eq!(top[1]["bytes"], json!(tokens[0].top[1].0.as_bytes()));
        let text = render(false);
        assert_eq!(text["tokens"], json!([" a", " b"]));
        assert_eq!(
            text["token_logprobs"],
            json!([tokens[0].logprob, tokens[1].logprob])
        );
        assert_eq!(text["text_offset"], json!([0, 2]));
        let first = text["top_logprobs"][0].as_object().expect("an object");
        assert_eq!(first.len(), 2);
        assert_eq!(first[" a"], json!(tokens[0].logprob));
        // k = 0: the generated token alone.
        let alone = TokenLogprobs::simulate(" a", 0, 0, 0).chunk_json(false, 7);
        let alone: Value = serde_json::from_slice(&alone).expect("valid JSON");
        assert_eq!(alone["top_logprobs"][0].as_object().map(Map::len), Some(1));
        assert_eq!(alone["text_offset"], json!([7]));
        let one = TokenLogprobs::simulate(" a", 0, 0, 0).chunk_json(true, 0);
        let one: Value = serde_json::from_slice(&one).expect("valid JSON");
        assert_eq!(one["content"][0]["top_logprobs"], json!([]));
    }

    #[test]
    fn numbers_are_written_as_serde_json_writes_them() {
        let mut values = vec![0.0, -0.0, -1.0, -3.0, -0.0001, -0.001, -0.5, -16.2345, 1.25];
        values.extend((0..2_000).map(|i| round(-(f64::from(i) * 0.0137))));
        values.extend([0.1 + 0.2, 123_456.789_012, -2.5e11]);
        for value in values {
            let mut ours = Vec::new();
            write_number(&mut ours, value);
            let theirs = serde_json::to_vec(&value).expect("a number");
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs),
                "{value}"
            );
        }
        let mut bytes = Vec::new();
        for byte in [0u8, 7, 10, 99, 100, 255] {
            write_u8(&mut bytes, byte);
            bytes.push(b' ');
        }
        assert_eq!(bytes, b"0 7 10 99 100 255 ");
    }

    #[test]
    fn no_token_writes_more_than_the_worst_case() {
        for chat in [true, false] {
            for k in [0u8, 1, 5, 20] {
                let bound = worst_entry_bytes(chat, k) as usize;
                let mut json = JsonLogprobs::new(chat);
                let mut most = 0;
                for position in 0..2_000u32 {
                    let token = VOCABULARY[position as usize % VOCABULARY.len()];
                    let before = json.len();
                    json.push(
                        &TokenLogprobs::simulate(token, position, position % 7, k),
                        usize::MAX,
                    );
                    most = most.max(json.len() - before);
                }
                assert!(most <= bound, "chat {chat}, k {k}: {most} > {bound}");
                // Not far above either: the budget refuses no more than it must.
                assert!(
                    bound < most + most / 4 + 8,
                    "chat {chat}, k {k}: {bound} for {most}"
                );
            }
        }
    }

    #[test]
    fn strings_are_escaped() {
        let mut out = Vec::new();
        write_json_str(&mut out, "a\"b\n");
        assert_eq!(out, br#""a\"b\n""#);
    }
}
