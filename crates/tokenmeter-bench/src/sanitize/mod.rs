//! The one way a string from the server reaches the bench's output: [`Sanitizer::clean`].
//!
//! Model ids, response ids, header values, error bodies and messages, event excerpts, redirect
//! targets: whatever a server sends may echo the API key (whole, in part, escaped) or carry
//! terminal control sequences. [`Sanitizer::clean`] takes it, in this order:
//!
//! 1. bounds the input to [`INPUT_LIMIT`] bytes (the library already bounds its messages to
//!    [`tokenmeter_openai::chunk::MESSAGE_LIMIT`] characters, uncut below that);
//! 2. strips control sequences and invisible characters ([`controls`]), so that none can hide
//!    a piece of the key or reach the terminal;
//! 3. redacts every piece of the key of 8 or more characters, raw or escaped ([`key`]);
//! 4. cuts to [`SHOWN_CHARS`] characters at a character boundary.
//!
//! Redacting before cutting is what keeps a piece of the key from surviving a cut: the cut
//! sees only redacted text. What the bench keeps of server text is a [`ServerText`], which only
//! `clean` makes: the trace, the JSON and HTML reports and the terminal take that type for
//! their server-given fields, so a new field cannot skip the sanitiser.

mod controls;
mod key;

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize};

use crate::api_key::ApiKey;

#[cfg(test)]
pub(crate) use key::{PIECE, REDACTED};

/// How much of a server string is examined, in bytes (more than any message the library keeps,
/// the size of an error body it reads).
pub(crate) const INPUT_LIMIT: usize = 64 * 1024;

/// How many characters of a server string are shown (an ellipsis marks a cut).
pub(crate) const SHOWN_CHARS: usize = 300;

/// The shortest `--header` value redacted from server text, in characters.
pub(crate) const SHORTEST_SECRET: usize = 4;

/// Cleans server text for output (see the module docs). Cheap to clone.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sanitizer {
    keys: Vec<Arc<key::KeyPieces>>,
}

impl Sanitizer {
    /// A sanitiser that redacts the pieces of `key` (none without one).
    pub(crate) fn new(key: Option<&ApiKey>) -> Self {
        Self {
            keys: key
                .and_then(|k| key::KeyPieces::new(k.secret()))
                .map(Arc::new)
                .into_iter()
                .collect(),
        }
    }

    /// This sanitiser, redacting the pieces of each of `secrets` as well (`--header` values),
    /// found the same way as those of the key. A secret shorter than [`SHORTEST_SECRET`]
    /// characters is left out: it could not hide anything, and redacting every `1` or `eu` a
    /// server sends would garble its messages.
    pub(crate) fn with_secrets<'a>(mut self, secrets: impl IntoIterator<Item = &'a str>) -> Self {
        let pieces = secrets
            .into_iter()
            .filter(|s| s.trim().chars().count() >= SHORTEST_SECRET)
            .filter_map(|s| key::KeyPieces::new(s.trim()));
        self.keys.extend(pieces.map(Arc::new));
        self
    }

    /// `raw`, bounded, without control sequences, redacted, cut to [`SHOWN_CHARS`].
    pub(crate) fn clean(&self, raw: &str) -> ServerText {
        let bounded = cut_bytes(raw, INPUT_LIMIT);
        let mut text = controls::strip(bounded);
        for key in self.keys.iter() {
            text = key.redact(&text);
        }
        ServerText(cut_chars(text.trim(), SHOWN_CHARS))
    }

    /// [`clean`](Self::clean) of raw bytes, read as UTF-8 with invalid bytes replaced.
    pub(crate) fn clean_bytes(&self, raw: &[u8]) -> ServerText {
        self.clean(&String::from_utf8_lossy(&raw[..raw.len().min(INPUT_LIMIT)]))
    }
}

/// Text from a server, made safe to show: only [`Sanitizer::clean`] makes one.
#[derive(Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(crate) struct ServerText(String);

impl ServerText {
    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// Read-only: a `ServerText` can be looked at as text, never built from one.
impl std::ops::Deref for ServerText {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ServerText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// Read back from a file the bench wrote (or anyone edited): cleaned again, with no key.
impl<'de> Deserialize<'de> for ServerText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(Sanitizer::default().clean(&text))
    }
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn cut_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

/// At most `max` characters of `text`, and an ellipsis when it was longer.
fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
