//! A small PromQL tokenizer: the metric names an expression reads and the labels its
//! selectors filter on.

use std::collections::{BTreeMap, BTreeSet};

/// PromQL functions and aggregation operators: identifiers that are never metric names.
const FUNCTIONS: &[&str] = &[
    "abs",
    "absent",
    "absent_over_time",
    "avg_over_time",
    "ceil",
    "changes",
    "clamp",
    "clamp_max",
    "clamp_min",
    "count_over_time",
    "day_of_month",
    "day_of_week",
    "delta",
    "deriv",
    "exp",
    "floor",
    "histogram_avg",
    "histogram_count",
    "histogram_fraction",
    "histogram_quantile",
    "histogram_sum",
    "idelta",
    "increase",
    "irate",
    "label_join",
    "label_replace",
    "last_over_time",
    "ln",
    "log2",
    "log10",
    "max_over_time",
    "min_over_time",
    "predict_linear",
    "quantile_over_time",
    "rate",
    "resets",
    "round",
    "scalar",
    "sort",
    "sort_desc",
    "sqrt",
    "stddev_over_time",
    "sum_over_time",
    "time",
    "timestamp",
    "vector",
];
const AGGREGATIONS: &[&str] = &[
    "sum",
    "avg",
    "min",
    "max",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
    "limitk",
    "limit_ratio",
];
/// Keywords followed by a list of label names in parentheses.
const LABEL_LISTS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];
/// Other keywords.
const KEYWORDS: &[&str] = &[
    "and", "or", "unless", "bool", "offset", "inf", "nan", "atan2",
];

/// Skips a quoted string starting at `i` (at the quote); returns the index after it.
fn skip_string(s: &[u8], mut i: usize) -> usize {
    let quote = s[i];
    i += 1;
    while i < s.len() && s[i] != quote {
        if s[i] == b'\\' && quote != b'`' {
            i += 1;
        }
        i += 1;
    }
    i + 1
}

/// Skips from an opening bracket at `i` to after its match, stepping over strings.
fn skip_group(s: &[u8], mut i: usize, open: u8, close: u8) -> usize {
    let mut depth = 0;
    while i < s.len() {
        match s[i] {
            b'"' | b'\'' | b'`' => {
                i = skip_string(s, i);
                continue;
            }
            c if c == open => depth += 1,
            c if c == close => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':'
}

fn is_ident(c: u8) -> bool {
    is_ident_start(c) || c.is_ascii_digit()
}

/// The label names a matcher list (`{a="x",b=~"y"}`) filters on.
pub(crate) fn matcher_labels(matchers: &str) -> BTreeSet<String> {
    let s = matchers.as_bytes();
    let mut labels = BTreeSet::new();
    let mut i = 0;
    while i < s.len() {
        if matches!(s[i], b'"' | b'\'' | b'`') {
            i = skip_string(s, i);
        } else if is_ident_start(s[i]) {
            let start = i;
            while i < s.len() && is_ident(s[i]) {
                i += 1;
            }
            labels.insert(matchers[start..i].to_owned());
        } else {
            i += 1;
        }
    }
    labels
}

/// The metric names a PromQL expression reads, each with the label names its selectors filter
/// on, or the identifiers it calls as functions that PromQL does not have (`Err`).
pub(crate) fn metric_names(expr: &str) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let s = expr.as_bytes();
    let mut names = BTreeMap::<String, BTreeSet<String>>::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if matches!(c, b'"' | b'\'' | b'`') {
            i = skip_string(s, i);
        } else if c == b'{' {
            i = skip_group(s, i, b'{', b'}');
        } else if c == b'[' {
            i = skip_group(s, i, b'[', b']');
        } else if c == b'$' {
            // A Grafana variable: `$name` or `${name}`.
            i += 1;
            if s.get(i) == Some(&b'{') {
                i = skip_group(s, i, b'{', b'}');
            }
            while i < s.len() && is_ident(s[i]) {
                i += 1;
            }
        } else if c.is_ascii_digit() || c == b'.' {
            // Numbers and durations: `0.95`, `5m`, `1e3`.
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'.') {
                i += 1;
            }
        } else if is_ident_start(c) {
            let start = i;
            while i < s.len() && is_ident(s[i]) {
                i += 1;
            }
            let word = &expr[start..i];
            let mut next = i;
            while next < s.len() && s[next].is_ascii_whitespace() {
                next += 1;
            }
            let call = s.get(next) == Some(&b'(');
            let lower = word.to_ascii_lowercase();
            if LABEL_LISTS.contains(&lower.as_str()) {
                if call {
                    i = skip_group(s, next, b'(', b')');
                }
            } else if AGGREGATIONS.contains(&lower.as_str()) || KEYWORDS.contains(&lower.as_str()) {
            } else if call {
                if !FUNCTIONS.contains(&word) {
                    return Err(format!("`{word}` is not a PromQL function"));
                }
            } else {
                let labels = names.entry(word.to_owned()).or_default();
                if s.get(next) == Some(&b'{') {
                    i = skip_group(s, next, b'{', b'}');
                    labels.extend(matcher_labels(&expr[next + 1..i - 1]));
                }
            }
        } else {
            i += 1;
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tokenizer_finds_metric_names_and_skips_the_rest() {
        let expr = r#"histogram_quantile(0.95, sum by (le, kind) (rate(vllm:x_bucket{model_name=~"$model_name", a="}"}[5m] offset 1h))) / on (slo_class) group_left slo:y + ${v} and sum without(z) (irate(b[1m:10s]))"#;
        let names = metric_names(expr).unwrap();
        assert_eq!(
            names.keys().collect::<Vec<_>>(),
            ["b", "slo:y", "vllm:x_bucket"]
        );
        assert_eq!(
            names["vllm:x_bucket"].iter().collect::<Vec<_>>(),
            ["a", "model_name"]
        );
        assert!(metric_names("rat(x[5m])").unwrap_err().contains("`rat`"));
    }
}
