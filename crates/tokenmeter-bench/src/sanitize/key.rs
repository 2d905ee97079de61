//! Finding every piece of the API key in a text, however the server encoded it.
//!
//! A piece is any run of 8 or more characters of the key (the whole key when it is shorter),
//! ASCII case ignored. Every such run contains an 8-character window of the key, so one
//! Aho-Corasick automaton over the key's 8-grams finds them all, overlapping, in time linear in
//! the text (all patterns have one length, so at most one ends at each position); the union of
//! the matches covers each run whole.
//!
//! The text is searched as written and through decoded views: JSON escapes (`\u0073`, any hex
//! case, `\"`, `\\`, `\/`), percent-encoding (`%73`) and HTML numeric references (`&#115;`,
//! `&#x73;`), each view decoded again from the one before (up to [`DECODE_PASSES`] times, for
//! doubly encoded text), with the control characters a decoding yields left out. Each
//! character of a view remembers the bytes of the original text it came from, so a match in
//! any view redacts exactly those bytes. A key sent in an HTTP header is visible ASCII, so a
//! view only needs ASCII: every other character is one byte that no pattern holds.
//!
//! Encodings that cannot be decoded in place are found by encoding the key instead: its hex
//! (the bytes' digits, either case) and its base64 in the standard and the URL-safe alphabet,
//! at each of the three byte alignments it can have inside a longer encoded text (the encoded
//! characters that depend on the key's bytes alone). Their 8-character windows join the
//! automaton, so a piece of 6 or more bytes of the key in base64, or of 4 or more in hex, is
//! redacted wherever it sits (ASCII case is ignored there too, which redacts a little more
//! than needed, never less).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

/// What replaces each run of redacted text.
pub(crate) const REDACTED: &str = "[redacted]";

/// The shortest piece of the key that is redacted when it appears alone.
pub(crate) const PIECE: usize = 8;

/// How many times a view is decoded again.
const DECODE_PASSES: usize = 3;

/// A character of a view: its ASCII byte (0x80 for any other character) and the bytes of the
/// original text it stands for.
#[derive(Clone, Copy)]
struct Item {
    byte: u8,
    start: usize,
    end: usize,
}

/// The pieces of one key.
pub(super) struct KeyPieces {
    automaton: AhoCorasick,
}

impl KeyPieces {
    /// The pieces of `key`; `None` for an empty key.
    pub(super) fn new(key: &str) -> Option<Self> {
        if key.is_empty() {
            return None;
        }
        let bytes = key.as_bytes();
        let encoded = encoded_forms(bytes);
        let mut patterns: Vec<&[u8]> = if bytes.len() < PIECE {
            vec![bytes]
        } else {
            bytes.windows(PIECE).collect()
        };
        patterns.extend(encoded.iter().flat_map(|form| form.windows(PIECE)));
        patterns.sort_unstable();
        patterns.dedup();
        let automaton = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(patterns)
            .ok()?;
        Some(Self { automaton })
    }

    /// `text` with every piece of the key, in any view, replaced by [`REDACTED`] (adjacent or
    /// overlapping pieces become one).
    pub(super) fn redact(&self, text: &str) -> String {
        let mut spans = Vec::new();
        let mut view = raw_view(text);
        for pass in 0..=DECODE_PASSES {
            let haystack: Vec<u8> = view.iter().map(|i| i.byte).collect();
            for found in self.automaton.find_overlapping_iter(&haystack) {
                spans.push((view[found.start()].start, view[found.end() - 1].end));
            }
            if pass == DECODE_PASSES {
                break;
            }
            match decode(&view) {
                Some(next) => view = next,
                None => break,
            }
        }
        if spans.is_empty() {
            return text.to_owned();
        }
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for (start, end) in spans {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in merged {
            out.push_str(&text[at..start]);
            out.push_str(REDACTED);
            at = end;
        }
        out.push_str(&text[at..]);
        out
    }
}

impl std::fmt::Debug for KeyPieces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyPieces([redacted])")
    }
}

/// The key's hex, and its base64 in both alphabets at each byte alignment: for alignment `a`,
/// the characters of the whole 3-byte groups of `key[a..]`, which are the same wherever those
/// bytes start a group.
fn encoded_forms(key: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let mut forms = vec![
        key.iter()
            .flat_map(|b| format!("{b:02x}").into_bytes())
            .collect(),
    ];
    for align in 0..3.min(key.len()) {
        let rest = &key[align..];
        let whole = &rest[..rest.len() / 3 * 3];
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            forms.push(engine.encode(whole).into_bytes());
        }
    }
    forms
}

/// One item per character of `text`.
fn raw_view(text: &str) -> Vec<Item> {
    text.char_indices()
        .map(|(start, c)| Item {
            byte: if c.is_ascii() { c as u8 } else { 0x80 },
            start,
            end: start + c.len_utf8(),
        })
        .collect()
}

/// `view` with one layer of escapes decoded; `None` when it holds none.
fn decode(view: &[Item]) -> Option<Vec<Item>> {
    let mut out = Vec::with_capacity(view.len());
    let mut changed = false;
    let mut i = 0;
    while i < view.len() {
        let Some((value, used)) = escape_at(view, i) else {
            out.push(view[i]);
            i += 1;
            continue;
        };
        changed = true;
        let byte = match u8::try_from(value) {
            Ok(b) if b.is_ascii() => b,
            _ => 0x80,
        };
        // A decoded control character hides nothing: leave it out, so a key split by
        // `\n` or `%00` is still found (the match's span covers the escape).
        if !byte.is_ascii_control() {
            out.push(Item {
                byte,
                start: view[i].start,
                end: view[i + used - 1].end,
            });
        }
        i += used;
    }
    changed.then_some(out)
}

/// The code point of the escape starting at `view[i]` and how many items it uses.
fn escape_at(view: &[Item], i: usize) -> Option<(u32, usize)> {
    let at = |k: usize| view.get(i + k).map(|item| item.byte);
    match at(0)? {
        b'\\' => match at(1)? {
            b'u' | b'U' => Some((hex(view, i + 2, 4)?, 6)),
            b'"' => Some((u32::from(b'"'), 2)),
            b'\\' => Some((u32::from(b'\\'), 2)),
            b'/' => Some((u32::from(b'/'), 2)),
            b'b' | b'f' | b'n' | b'r' | b't' => Some((0, 2)),
            _ => None,
        },
        b'%' => Some((hex(view, i + 1, 2)?, 3)),
        b'&' if at(1)? == b'#' => {
            let (radix, first) = if matches!(at(2)?, b'x' | b'X') {
                (16, 3)
            } else {
                (10, 2)
            };
            let digits = (first..first + 8)
                .take_while(|&k| at(k).is_some_and(|b| char::from(b).is_digit(radix)))
                .count();
            if digits == 0 || at(first + digits)? != b';' {
                return None;
            }
            let text: String = (first..first + digits)
                .map(|k| char::from(view[i + k].byte))
                .collect();
            Some((u32::from_str_radix(&text, radix).ok()?, first + digits + 1))
        }
        _ => None,
    }
}

/// The value of `len` hex digits at `view[from..]`.
fn hex(view: &[Item], from: usize, len: usize) -> Option<u32> {
    let digits = view.get(from..from + len)?;
    digits.iter().try_fold(0u32, |acc, item| {
        Some(acc * 16 + char::from(item.byte).to_digit(16)?)
    })
}
