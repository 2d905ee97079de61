//! The Prometheus text exposition format (version 0.0.4), parsed strictly: every line is a
//! comment, blank, or `name{label="value",...} value [timestamp]`; anything else is an error
//! that names the line. Only the samples a caller asks for are kept.
//!
//! No crate was taken for this: the ones on crates.io either pull in a regex engine and a
//! date library for a format this small, or parse leniently (a garbage body would read as no
//! samples rather than as an error the run can report).

use std::borrow::Cow;

/// One sample line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sample {
    /// The metric name, with its `_bucket`/`_count`/`_sum` suffix.
    pub(crate) name: String,
    /// Label names and values, unescaped, in the order printed.
    pub(crate) labels: Vec<(String, String)>,
    /// The value.
    pub(crate) value: f64,
}

impl Sample {
    /// The value of label `name`.
    pub(crate) fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why a body is not the text format.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "line {line}: {reason} (expected the Prometheus text format: `name{{label=\"value\"}} 1.5`)"
)]
pub(crate) struct ParseError {
    /// From 1.
    pub(crate) line: usize,
    /// What was wrong (never the line's text: a server wrote it).
    pub(crate) reason: &'static str,
}

/// Parses `text`, keeping the samples whose name `keep` accepts.
pub(crate) fn parse(text: &str, keep: impl Fn(&str) -> bool) -> Result<Vec<Sample>, ParseError> {
    let mut samples = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fail = |reason| ParseError {
            line: index + 1,
            reason,
        };
        let (name, rest) = split_name(line).ok_or_else(|| fail("no metric name"))?;
        let (labels, rest) = match rest.strip_prefix('{') {
            Some(inner) => labels(inner).map_err(fail)?,
            None => (Vec::new(), rest),
        };
        if !rest.starts_with([' ', '\t']) {
            return Err(fail("no space before the value"));
        }
        let mut words = rest.split_whitespace();
        let value = words.next().ok_or_else(|| fail("no value"))?;
        let value = number(value).ok_or_else(|| fail("the value is not a number"))?;
        if let Some(stamp) = words.next()
            && stamp.parse::<i64>().is_err()
        {
            return Err(fail("the timestamp is not an integer"));
        }
        if words.next().is_some() {
            return Err(fail("text after the timestamp"));
        }
        if keep(name) {
            let labels = labels
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v.into_owned()))
                .collect();
            samples.push(Sample {
                name: name.to_owned(),
                labels,
                value,
            });
        }
    }
    Ok(samples)
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The metric name at the start of `line`, and what follows it.
fn split_name(line: &str) -> Option<(&str, &str)> {
    if !line.starts_with(is_name_start) {
        return None;
    }
    let end = line.find(|c| !is_name_char(c)).unwrap_or(line.len());
    Some(line.split_at(end))
}

type Labels<'a> = Vec<(&'a str, Cow<'a, str>)>;

/// The labels after `{`, and what follows the closing `}`.
fn labels(mut rest: &str) -> Result<(Labels<'_>, &str), &'static str> {
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix('}') {
            return Ok((out, after));
        }
        let end = rest
            .find(|c| !is_name_char(c))
            .ok_or("a label set without `}`")?;
        let (name, after) = rest.split_at(end);
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err("a bad label name");
        }
        let after = after
            .trim_start()
            .strip_prefix('=')
            .ok_or("a label without `=`")?;
        let after = after
            .trim_start()
            .strip_prefix('"')
            .ok_or("a label value without quotes")?;
        let (value, after) = quoted(after)?;
        out.push((name, value));
        rest = after.trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after;
        } else if !rest.starts_with('}') {
            return Err("labels not separated by `,`");
        }
    }
}

/// A label value up to its closing quote, unescaped (`\\`, `\"`, `\n`), and what follows.
fn quoted(text: &str) -> Result<(Cow<'_, str>, &str), &'static str> {
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => {
                let raw = &text[..at];
                let value = if raw.contains('\\') {
                    Cow::Owned(unescape(raw)?)
                } else {
                    Cow::Borrowed(raw)
                };
                return Ok((value, &text[at + 1..]));
            }
            (false, _) => {}
        }
    }
    Err("an unterminated label value")
}

fn unescape(raw: &str) -> Result<String, &'static str> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            Some('n') => out.push('\n'),
            _ => return Err("a bad escape in a label value"),
        }
    }
    Ok(out)
}

/// A sample value: a float, `+Inf`, `-Inf` or `NaN`.
pub(crate) fn number(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ if text.starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c)) => {
            text.parse().ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_labels_escapes_and_special_values() {
        let text = "# HELP x A help.\n# TYPE x gauge\n\
                    x 1\n\
                    vllm:num_requests_waiting{model_name=\"m \\\"q\\\" \\\\ \\n\",engine=\"0\",} 3 1700000000000\n\
                    h_bucket{le=\"+Inf\"} +Inf\n\
                    skipped{a=\"b\"} NaN\n";
        let samples = parse(text, |n| n != "skipped").unwrap();
        assert_eq!(samples.len(), 3);
        assert_eq!(samples[0].value, 1.0);
        let waiting = &samples[1];
        assert_eq!(waiting.name, "vllm:num_requests_waiting");
        assert_eq!(waiting.label("model_name"), Some("m \"q\" \\ \n"));
        assert_eq!(waiting.label("engine"), Some("0"));
        assert_eq!(waiting.value, 3.0);
        assert!(samples[2].value.is_infinite());
    }

    #[test]
    fn garbage_is_an_error_that_names_the_line() {
        for (text, line) in [
            ("ok 1\n<html><body>not metrics</body></html>", 2),
            ("x{a=\"b\" 1", 1),
            ("x{a=b} 1", 1),
            ("x one", 1),
            ("x 1 2 3", 1),
            ("x{a=\"b\"}1", 1),
            ("\n\nx{a=\"\\q\"} 1", 3),
            ("{\"json\": true}", 1),
        ] {
            let error = parse(text, |_| true).unwrap_err();
            assert_eq!(error.line, line, "{text}: {error}");
            assert!(error.to_string().contains("Prometheus text format"));
        }
    }
}
