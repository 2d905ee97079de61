//! A parser of the `endpoint-load-metrics` header written from Envoy's grammar
//! (`source/common/orca/orca_parser.cc`), for tests of the servers that write it; no
//! third-party parser of the header is published on a package registry.
//!
//! The value is a format prefix and a report. `TEXT `: a comma-separated list (each item
//! trimmed, empty items skipped) of `name=value` (split at the first `=`, both trimmed); the
//! name is one of `OrcaLoadReport`'s fields (`cpu_utilization`, `mem_utilization`,
//! `application_utilization`, `eps`, `rps_fractional`) or `named_metrics.` and a non-empty
//! key; the value a finite number; no name twice. `JSON `: the JSON form of `OrcaLoadReport`
//! (those fields as numbers, `named_metrics` an object of numbers; Envoy's JSON loader refuses
//! a value of the wrong type). `BIN ` (base64 protobuf) is refused here: nothing writes it.

use std::collections::BTreeMap;

use serde_json::Value;

const FIELDS: [&str; 5] = [
    "cpu_utilization",
    "mem_utilization",
    "application_utilization",
    "eps",
    "rps_fractional",
];
const NAMED: &str = "named_metrics.";

/// A parsed report: the standard fields given, and the named metrics.
#[derive(Debug, Default, PartialEq)]
pub struct OrcaReport {
    pub fields: BTreeMap<String, f64>,
    pub named: BTreeMap<String, f64>,
}

impl OrcaReport {
    /// A named metric, or a panic naming what is missing.
    pub fn named(&self, key: &str) -> f64 {
        *self
            .named
            .get(key)
            .unwrap_or_else(|| panic!("no named metric {key} in {self:?}"))
    }
}

/// Parses an `endpoint-load-metrics` header value as Envoy does; the error says why Envoy
/// would refuse it.
pub fn parse(header: &str) -> Result<OrcaReport, String> {
    if let Some(text) = header.strip_prefix("TEXT ") {
        return text_report(text);
    }
    if let Some(json) = header.strip_prefix("JSON ") {
        return json_report(json);
    }
    Err(format!("unsupported ORCA header format: {header:?}"))
}

fn number(name: &str, value: &str) -> Result<f64, String> {
    let value: f64 = value
        .parse()
        .map_err(|_| format!("unable to parse metric value({name}): {value:?}"))?;
    if value.is_finite() {
        Ok(value)
    } else {
        Err(format!("metric value({name}) is not finite"))
    }
}

fn text_report(text: &str) -> Result<OrcaReport, String> {
    let mut report = OrcaReport::default();
    let mut seen = Vec::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, value) = item.split_once('=').unwrap_or((item, ""));
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() || value.is_empty() {
            return Err(format!("empty metric name or value in {item:?}"));
        }
        if seen.contains(&name) {
            return Err(format!("duplicate metric: {name}"));
        }
        seen.push(name);
        insert(&mut report, name, number(name, value)?)?;
    }
    Ok(report)
}

fn insert(report: &mut OrcaReport, name: &str, value: f64) -> Result<(), String> {
    if let Some(key) = name.strip_prefix(NAMED) {
        if key.is_empty() {
            return Err("named metric key is empty".into());
        }
        report.named.insert(key.to_owned(), value);
    } else if FIELDS.contains(&name) {
        report.fields.insert(name.to_owned(), value);
    } else {
        return Err(format!("unsupported metric name: {name}"));
    }
    Ok(())
}

fn json_report(json: &str) -> Result<OrcaReport, String> {
    let value: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    let object = value.as_object().ok_or("the report is not a JSON object")?;
    let mut report = OrcaReport::default();
    for (name, value) in object {
        if name == "named_metrics" {
            let named = value.as_object().ok_or("named_metrics is not an object")?;
            for (key, value) in named {
                let value = value.as_f64().ok_or(format!("{key} is not a number"))?;
                report.named.insert(key.clone(), value);
            }
        } else if FIELDS.contains(&name.as_str()) {
            let number = value.as_f64().ok_or(format!("{name} is not a number"))?;
            report.fields.insert(name.clone(), number);
        } else {
            return Err(format!("unknown field {name}"));
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envoys_examples_parse_and_its_refusals_are_refused() {
        let report = parse("TEXT cpu_utilization=0.7, named_metrics.foo=123, , eps=2").unwrap();
        assert_eq!(report.fields["cpu_utilization"], 0.7);
        assert_eq!(report.named("foo"), 123.0);
        let json = parse(r#"JSON {"cpu_utilization": 0.5, "named_metrics": {"a": 1}}"#).unwrap();
        assert_eq!(json.named("a"), 1.0);
        for bad in [
            "TEXT cpu_utilization=\"0.7\"",
            "TEXT named_metrics.a:0.4",
            "TEXT named_metrics.=1",
            "TEXT unknown=1",
            "TEXT eps=1, eps=2",
            "TEXT eps=inf",
            "JSON {\"named_metrics\": {\"a\": \"1\"}}",
            "BIN AAAA",
            "named_metrics.a=1",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
