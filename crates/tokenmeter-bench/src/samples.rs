//! A few sample messages per error class, so that a failed run says what went wrong in the
//! terminal and the JSON, not only how often.
//!
//! The messages are the requests' errors, already sanitised by the client
//! ([`ServerText`](crate::sanitize::ServerText)).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::reqs::Reqs;

/// Messages kept per error class, at most.
pub(crate) const PER_CLASS: usize = 3;

/// Up to [`PER_CLASS`] distinct messages per error class (`_OTHER` for a lost task), the
/// first ones in request order.
pub(crate) fn error_samples<'r>(measured: impl Into<Reqs<'r>>) -> BTreeMap<String, Vec<String>> {
    let measured: Reqs<'r> = measured.into();
    let mut samples: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for one in measured.iter() {
        let Some(error) = &one.rare.error else {
            continue;
        };
        let class = one
            .outcome()
            .error_class()
            .map_or("_OTHER", |c| c.as_str())
            .to_owned();
        let kept = samples.entry(class).or_default();
        let message = error.to_string();
        if kept.len() < PER_CLASS && !kept.contains(&message) {
            kept.push(message);
        }
    }
    samples
}

/// The samples as indented terminal lines, with a heading; empty when there are none.
pub(crate) fn render(samples: &BTreeMap<String, Vec<String>>) -> String {
    let mut out = String::new();
    if samples.is_empty() {
        return out;
    }
    out.push_str("\nerrors (first messages per class):\n");
    for (class, messages) in samples {
        for message in messages {
            let _ = writeln!(out, "  {class:<14}{message}");
        }
    }
    out
}

/// The samples as an HTML section, each message escaped by `esc` (the messages are already
/// sanitized: the key redacted, controls stripped); empty when there are none.
pub(crate) fn html(samples: &BTreeMap<String, Vec<String>>, esc: fn(&str) -> String) -> String {
    let mut out = String::new();
    if samples.is_empty() {
        return out;
    }
    out.push_str(
        "<h2>Errors (first messages per class)</h2>\n<table><tr><th>class</th><th>message</th></tr>\n",
    );
    for (class, messages) in samples {
        for message in messages {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td><code>{}</code></td></tr>",
                esc(class),
                esc(message)
            );
        }
    }
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measured::Measured;
    use crate::sanitize::Sanitizer;

    fn failed(message: &str) -> Measured {
        Measured {
            rare: crate::rare::RareFields {
                error: Some(Sanitizer::default().clean(message)),
                ..Default::default()
            }
            .into(),
            ..Measured::default()
        }
    }

    #[test]
    fn keeps_a_few_distinct_messages_per_class() {
        let mut run: Vec<Measured> = ["a", "a", "b", "c", "d"].map(failed).into();
        run.push(Measured::default()); // no error: not sampled
        let samples = error_samples(&run);
        assert_eq!(samples.len(), 1);
        assert_eq!(samples["_OTHER"], ["a", "b", "c"]);
        let text = render(&samples);
        assert!(text.contains("_OTHER        a\n"), "{text}");
        assert_eq!(render(&BTreeMap::new()), "");
        let page = html(&samples, crate::output::html::esc);
        assert!(
            page.contains("<td>_OTHER</td><td><code>a</code></td>"),
            "{page}"
        );
        assert_eq!(html(&BTreeMap::new(), crate::output::html::esc), "");
    }

    #[test]
    fn the_html_samples_are_escaped_and_sanitized() {
        let key = "sk-planted-0123456789abcdef";
        let sanitizer = Sanitizer::default().with_secrets([key]);
        let message = format!("bad key {key} <script>alert(1)</script>\u{1b}[31m");
        let run = vec![Measured {
            rare: crate::rare::RareFields {
                error: Some(sanitizer.clean(&message)),
                ..Default::default()
            }
            .into(),
            ..Measured::default()
        }];
        let page = html(&error_samples(&run), crate::output::html::esc);
        assert!(
            !page.contains(key) && !page.contains("0123456789abcdef"),
            "{page}"
        );
        assert!(
            !page.contains("<script>") && page.contains("&lt;script&gt;"),
            "{page}"
        );
        assert!(!page.contains('\u{1b}'), "{page}");
    }
}
