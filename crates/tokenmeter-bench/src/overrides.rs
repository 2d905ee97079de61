//! What `--extra-body` changes of the request the bench builds: its keys replace the bench's
//! own (as vLLM's `--extra-body` does), so `{"model": …}`, `{"n": 3}` or `{"max_tokens": 3}`
//! change what is measured. Each such key is reported before the run (a warning naming the
//! key, the bench's value and the value sent) and kept in the header and the `run` block
//! ([`Override`]), so that no report shows a flag's value that was not sent.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::request_shape::RequestShape;

/// The most characters of a value shown in a warning or the header.
const SHOWN_VALUE: usize = 60;

/// A key of the request the bench sets (or whose default it relies on) that `--extra-body`
/// replaces.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Override {
    /// The body key.
    pub(crate) key: &'static str,
    /// What the bench would have sent, in words.
    pub(crate) bench: String,
    /// What is sent instead (JSON; a prompt's text is not repeated).
    pub(crate) sent: Value,
}

impl Override {
    /// The warning printed before the run.
    pub(crate) fn warning(&self) -> String {
        format!(
            "--extra-body replaces `{}` ({}) with {}: the run measures what is sent, and the \
             header and the run block of --json say so",
            self.key,
            self.bench,
            shown(&self.sent)
        )
    }
}

/// The keys of `shape`'s extra body that replace what the bench sends for `model` (the model
/// it would ask for) and `ignore_eos`, in body-key order.
pub(crate) fn overrides(shape: &RequestShape, model: &str, ignore_eos: bool) -> Vec<Override> {
    let length = "the workload's output length".to_owned();
    let watched: [(&'static str, String); 7] = [
        ("model", format!("{model:?}")),
        ("messages", "the workload's prompt".to_owned()),
        ("prompt", "the workload's prompt".to_owned()),
        ("max_tokens", length.clone()),
        ("max_completion_tokens", length),
        ("n", "1 choice, not sent".to_owned()),
        (
            "ignore_eos",
            if ignore_eos { "true" } else { "not sent" }.to_owned(),
        ),
    ];
    watched
        .into_iter()
        .filter_map(|(key, bench)| {
            let value = shape.extra.get(key)?;
            if key == "model" && value.as_str() == Some(model) {
                return None;
            }
            let sent = match key {
                "messages" | "prompt" => Value::String("[a prompt of its own]".to_owned()),
                _ => value.clone(),
            };
            Some(Override { key, bench, sent })
        })
        .collect()
}

/// The overrides as the header shows them: `--extra-body sends max_tokens=3, n=3`.
pub(crate) fn header(overrides: &[Override]) -> Option<String> {
    if overrides.is_empty() {
        return None;
    }
    let pairs: Vec<String> = overrides
        .iter()
        .map(|o| format!("{}={}", o.key, shown(&o.sent)))
        .collect();
    Some(format!("--extra-body sends {}", pairs.join(", ")))
}

/// The overrides as the `run` block keeps them: key → value sent.
pub(crate) fn block(overrides: &[Override]) -> BTreeMap<String, Value> {
    overrides
        .iter()
        .map(|o| (o.key.to_owned(), o.sent.clone()))
        .collect()
}

/// `value` as compact JSON, cut to [`SHOWN_VALUE`] characters.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(SHOWN_VALUE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_shape::parse_extra_body;

    fn shape(extra: &str) -> RequestShape {
        RequestShape {
            extra: parse_extra_body(extra).unwrap(),
            ..RequestShape::default()
        }
    }

    #[test]
    fn each_replaced_key_is_named_with_both_values() {
        let found = overrides(
            &shape(r#"{"model": "other", "n": 3, "max_tokens": 3, "temperature": 0}"#),
            "asked",
            false,
        );
        let keys: Vec<&str> = found.iter().map(|o| o.key).collect();
        assert_eq!(keys, ["model", "max_tokens", "n"]);
        let warning = found[0].warning();
        assert!(
            warning.contains("`model`")
                && warning.contains("\"asked\"")
                && warning.contains("\"other\""),
            "{warning}"
        );
        assert_eq!(
            header(&found).unwrap(),
            r#"--extra-body sends model="other", max_tokens=3, n=3"#
        );
        assert_eq!(block(&found)["n"], 3);
    }

    #[test]
    fn the_same_model_and_other_keys_change_nothing_reported() {
        let found = overrides(&shape(r#"{"model": "m", "top_p": 0.5}"#), "m", true);
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(header(&found), None);
        let prompt = overrides(&shape(r#"{"prompt": "a long secret text"}"#), "m", true);
        assert!(!prompt[0].warning().contains("secret"));
    }
}
