//! Stop sequences (`stop`): the text ends before the first of them, which is not sent, and the
//! choice finishes with `stop`, as in vLLM.
//!
//! The check runs on the text as it is generated. A stream holds back the last
//! `longest stop - 1` bytes (a stop sequence may begin there and end in a later token), as
//! vLLM's detokenizer does, and sends them with the last token. `usage` counts the tokens
//! generated, the one that completed the stop sequence included.

use std::sync::Arc;

use serde_json::Value;

use super::api_error::ApiError;
use super::fields::{Fields, type_name};

/// A request's stop sequences (at least one, none empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stops {
    strings: Arc<[Box<str>]>,
    /// Bytes a stream holds back: the longest sequence's, less one.
    hold: usize,
}

impl Stops {
    /// The `stop` field: a string or an array of up to `max` strings; `None` when absent or
    /// empty.
    pub(crate) fn read(fields: Fields<'_>, max: usize) -> Result<Option<Self>, ApiError> {
        let refuse = |message: String| ApiError::bad_request(Some("stop"), message);
        let strings: Vec<Box<str>> = match fields.get("stop") {
            None => return Ok(None),
            Some(Value::String(one)) => vec![one.as_str().into()],
            Some(Value::Array(items)) => {
                if items.len() > max {
                    return Err(refuse(format!(
                        "`stop` may hold at most {max} sequences, got {}",
                        items.len()
                    )));
                }
                items
                    .iter()
                    .map(|item| {
                        item.as_str().map(Box::from).ok_or_else(|| {
                            refuse(format!("`stop` must hold strings, not {}", type_name(item)))
                        })
                    })
                    .collect::<Result<_, _>>()?
            }
            Some(other) => {
                return Err(refuse(format!(
                    "`stop` must be a string or an array of strings, not {}",
                    type_name(other)
                )));
            }
        };
        if strings.iter().any(|s| s.is_empty()) {
            return Err(refuse("`stop` sequences cannot be empty".to_owned()));
        }
        if strings.is_empty() {
            return Ok(None);
        }
        let hold = strings.iter().map(|s| s.len()).max().unwrap_or(1) - 1;
        Ok(Some(Self {
            strings: strings.into(),
            hold,
        }))
    }

    /// A matcher for one choice's text.
    pub(crate) fn matcher(&self) -> StopMatcher {
        StopMatcher {
            stops: self.clone(),
            held: String::new(),
        }
    }
}

/// Finds the stop sequences in one choice's text as its tokens come.
#[derive(Debug)]
pub(crate) struct StopMatcher {
    stops: Stops,
    held: String,
}

impl StopMatcher {
    /// Adds a token's text (`last`: the engine's last token). Returns the text to send now,
    /// and whether a stop sequence was reached (then nothing more is to be sent).
    pub(crate) fn push(&mut self, text: &str, last: bool) -> (String, bool) {
        self.held.push_str(text);
        let found = self
            .stops
            .strings
            .iter()
            .filter_map(|stop| self.held.find(&**stop))
            .min();
        if let Some(at) = found {
            self.held.truncate(at);
            return (std::mem::take(&mut self.held), true);
        }
        if last {
            return (std::mem::take(&mut self.held), false);
        }
        let mut cut = self.held.len().saturating_sub(self.stops.hold);
        while !self.held.is_char_boundary(cut) {
            cut -= 1;
        }
        let rest = self.held.split_off(cut);
        (std::mem::replace(&mut self.held, rest), false)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stops(value: serde_json::Value) -> Result<Option<Stops>, ApiError> {
        let body = json!({ "stop": value });
        Stops::read(Fields::of(&body).expect("object"), 4)
    }

    #[test]
    fn a_stop_sequence_across_tokens_ends_the_text_before_it() {
        let mut matcher = stops(json!(["queue", " cache f"]))
            .unwrap()
            .unwrap()
            .matcher();
        // Holds back 7 bytes (" cache f" is 8).
        assert_eq!(matcher.push(" the", false), (String::new(), false));
        assert_eq!(matcher.push(" model", false), (" th".to_owned(), false));
        assert_eq!(matcher.push(" cache", false), ("e mode".to_owned(), false));
        assert_eq!(matcher.push(" fast", false), ("l".to_owned(), true));
    }

    #[test]
    fn the_last_token_sends_what_is_held() {
        let mut matcher = stops(json!("zzz")).unwrap().unwrap().matcher();
        assert_eq!(matcher.push(" a", false), (String::new(), false));
        assert_eq!(matcher.push(" b", true), (" a b".to_owned(), false));
        let mut matcher = stops(json!("é")).unwrap().unwrap().matcher();
        assert_eq!(matcher.push("aé", false), ("a".to_owned(), true));
    }

    #[test]
    fn bad_stops_are_refused() {
        assert_eq!(stops(json!(null)).unwrap(), None);
        assert_eq!(stops(json!([])).unwrap(), None);
        for bad in [
            json!(""),
            json!([1]),
            json!(["a", "b", "c", "d", "e"]),
            json!(true),
        ] {
            let error = stops(bad.clone()).expect_err("refused");
            assert_eq!(error.param(), Some("stop"), "{bad}");
        }
    }
}
