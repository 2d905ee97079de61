//! The few YAML shapes a rules file needs, written by hand with safe quoting.

use std::fmt::Write as _;

/// A recording or alerting rule.
pub(super) struct Rule {
    kind: &'static str,
    name: String,
    expr: String,
    for_: Option<&'static str>,
    labels: Vec<(&'static str, String)>,
    summary: Option<String>,
}

/// A PromQL string literal: double quotes, with `\` and `"` escaped.
pub(super) fn quote(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A YAML single-quoted scalar: any text, `'` doubled.
fn yaml_str(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

impl Rule {
    pub(super) fn record(
        name: impl Into<String>,
        expr: String,
        labels: Vec<(&'static str, String)>,
    ) -> Self {
        Self {
            kind: "record",
            name: name.into(),
            expr,
            for_: None,
            labels,
            summary: None,
        }
    }

    pub(super) fn alert(
        name: impl Into<String>,
        expr: String,
        for_: Option<&'static str>,
        labels: Vec<(&'static str, String)>,
        summary: String,
    ) -> Self {
        Self {
            kind: "alert",
            name: name.into(),
            expr,
            for_,
            labels,
            summary: Some(summary),
        }
    }

    pub(super) fn to_yaml(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "      - {}: {}", self.kind, self.name);
        let _ = writeln!(out, "        expr: {}", yaml_str(&self.expr));
        if let Some(f) = self.for_ {
            let _ = writeln!(out, "        for: {f}");
        }
        if !self.labels.is_empty() {
            out.push_str("        labels:\n");
            for (k, v) in &self.labels {
                let _ = writeln!(out, "          {k}: {}", yaml_str(v));
            }
        }
        if let Some(summary) = &self.summary {
            let _ = writeln!(
                out,
                "        annotations:\n          summary: {}",
                yaml_str(summary)
            );
        }
        out
    }
}
