//! Reading a spec from TOML, with errors that name the field and the line.

use std::collections::HashMap;
use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::builder::validate;
use super::{
    DEFAULT_PERIOD, LatencyMetric, Objective, Saturation, Selector, SloClass, SloSpec, SpecError,
    parse_duration,
};
use tokenmeter::{ErrorClass, Role};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    period: Option<Spanned<String>>,
    #[serde(default)]
    class: Vec<RawClass>,
    #[serde(default)]
    objective: Vec<Spanned<RawObjective>>,
    saturation: Option<Spanned<RawSaturation>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClass {
    name: Spanned<String>,
    #[serde(rename = "match", default)]
    selector: Option<Spanned<RawSelector>>,
    from_headers: Option<Spanned<bool>>,
    #[serde(default)]
    objective: Vec<Spanned<RawObjective>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSelector {
    role: Option<String>,
    operation: Option<String>,
    provider: Option<String>,
    request_model: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObjective {
    name: Option<String>,
    latency: Option<Spanned<String>>,
    percentile: Option<Spanned<f64>>,
    threshold: Option<Spanned<String>>,
    per_input_token: Option<Spanned<String>>,
    success_rate: Option<Spanned<f64>>,
    fallback_rate: Option<Spanned<f64>>,
    error_rate: Option<Spanned<f64>>,
    error_class: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSaturation {
    waiting_max: Option<f64>,
    kv_usage_max: Option<f64>,
    horizon: Option<String>,
}

/// Maps byte offsets to 1-based lines, and field paths to the line they were written on.
struct Lines<'a> {
    text: &'a str,
    fields: HashMap<String, usize>,
}

impl Lines<'_> {
    fn line(&self, span: Range<usize>) -> usize {
        self.text[..span.start.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    fn note(&mut self, field: String, span: Range<usize>) {
        let line = self.line(span);
        self.fields.insert(field, line);
    }

    fn of(&self, field: &str) -> Option<usize> {
        // The field itself, else its closest written parent (`class[0].objective[1]`).
        let mut path = field;
        loop {
            if let Some(line) = self.fields.get(path) {
                return Some(*line);
            }
            path = &path[..path.rfind('.')?];
        }
    }
}

pub(super) fn from_toml(text: &str) -> Result<SloSpec, SpecError> {
    let mut lines = Lines {
        text,
        fields: HashMap::new(),
    };
    let raw: RawSpec = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| lines.line(s));
        SpecError::new(
            field_of_toml_error(e.message()),
            e.message().trim().to_string(),
        )
        .at(line)
    })?;
    let spec = convert(raw, &mut lines)?;
    validate(&spec).map_err(|e| {
        let line = lines.of(&e.field);
        e.at(line)
    })?;
    Ok(spec)
}

fn field_of_toml_error(message: &str) -> String {
    // serde names the offending field in backticks (`unknown field `x``, `missing field `y``).
    match message.split('`').nth(1) {
        Some("") => "\"\"".to_string(), // the empty key (`"" = 1`), as TOML writes it
        Some(name) => name.to_string(),
        None => "(document)".to_string(),
    }
}

fn convert(raw: RawSpec, lines: &mut Lines<'_>) -> Result<SloSpec, SpecError> {
    let period = match raw.period {
        Some(p) => {
            let line = lines.line(p.span());
            parse_duration(p.get_ref()).map_err(|m| SpecError::new("period", m).at(Some(line)))?
        }
        None => DEFAULT_PERIOD,
    };
    let mut classes = Vec::new();
    for (ci, class) in raw.class.into_iter().enumerate() {
        let path = format!("class[{ci}]");
        lines.note(format!("{path}.name"), class.name.span());
        let selector = match class.selector {
            Some(s) => {
                let line = lines.line(s.span());
                lines.note(format!("{path}.match"), s.span());
                selector(s.into_inner())
                    .map_err(|m| SpecError::new(format!("{path}.match.role"), m).at(Some(line)))?
            }
            None => Selector::default(),
        };
        let mut out = SloClass::new(class.name.into_inner()).matching(selector);
        if let Some(from_headers) = class.from_headers {
            lines.note(format!("{path}.from_headers"), from_headers.span());
            out.from_headers = from_headers.into_inner();
        }
        for (oi, objective) in class.objective.into_iter().enumerate() {
            out.objectives.push(convert_objective(
                objective,
                &format!("{path}.objective[{oi}]"),
                lines,
            )?);
        }
        classes.push(out);
    }
    if !raw.objective.is_empty() {
        let ci = classes.len();
        let mut default = SloClass::new("default");
        for (oi, objective) in raw.objective.into_iter().enumerate() {
            let path = format!("class[{ci}].objective[{oi}]");
            default
                .objectives
                .push(convert_objective(objective, &path, lines)?);
        }
        classes.push(default);
    }
    let saturation = match raw.saturation {
        Some(s) => {
            lines.note("saturation".into(), s.span());
            let line = lines.line(s.span());
            let s = s.into_inner();
            let horizon = match s.horizon {
                Some(h) => parse_duration(&h)
                    .map_err(|m| SpecError::new("saturation.horizon", m).at(Some(line)))?,
                None => Saturation::default().horizon,
            };
            Saturation {
                waiting_max: s.waiting_max,
                kv_usage_max: s.kv_usage_max,
                horizon,
            }
        }
        None => Saturation::default(),
    };
    Ok(SloSpec {
        period,
        classes,
        saturation,
    })
}

fn selector(raw: RawSelector) -> Result<Selector, String> {
    let role = match raw.role.as_deref() {
        None => None,
        Some("server") => Some(Role::Server),
        Some("client") => Some(Role::Client),
        Some(other) => {
            return Err(format!(
                "`{other}` is not a role: use \"server\" or \"client\""
            ));
        }
    };
    Ok(Selector {
        role,
        operation: raw.operation,
        provider: raw.provider,
        request_model: raw.request_model,
    })
}

fn convert_objective(
    raw: Spanned<RawObjective>,
    path: &str,
    lines: &mut Lines<'_>,
) -> Result<Objective, SpecError> {
    lines.note(path.to_string(), raw.span());
    let table_line = Some(lines.line(raw.span()));
    let o = raw.into_inner();
    // Remember where each field was written, for errors found here and by validation.
    let spans = [
        ("latency", o.latency.as_ref().map(Spanned::span)),
        ("percentile", o.percentile.as_ref().map(Spanned::span)),
        ("threshold", o.threshold.as_ref().map(Spanned::span)),
        (
            "per_input_token",
            o.per_input_token.as_ref().map(Spanned::span),
        ),
        ("success_rate", o.success_rate.as_ref().map(Spanned::span)),
        ("fallback_rate", o.fallback_rate.as_ref().map(Spanned::span)),
        ("error_rate", o.error_rate.as_ref().map(Spanned::span)),
        ("error_class", o.error_class.as_ref().map(Spanned::span)),
    ];
    for (field, span) in spans {
        if let Some(span) = span {
            lines.note(format!("{path}.{field}"), span);
        }
    }
    let lines = &*lines;
    let err = |field: &str, message: String| {
        let full = format!("{path}.{field}");
        let line = lines.of(&full).or(table_line);
        SpecError::new(full, message).at(line)
    };
    let kinds = [
        o.latency.is_some(),
        o.success_rate.is_some(),
        o.fallback_rate.is_some(),
        o.error_rate.is_some(),
    ];
    if kinds.iter().filter(|k| **k).count() != 1 {
        return Err(err(
            "latency",
            "an objective needs exactly one of `latency`, `success_rate`, `fallback_rate`, `error_rate`".into(),
        ));
    }
    let objective = if let Some(metric) = o.latency {
        let metric = metric.into_inner();
        let metric = LatencyMetric::parse(&metric).ok_or_else(|| {
            err(
                "latency",
                format!("`{metric}` is not a latency: use ttft, tpot, e2e or queue"),
            )
        })?;
        let percentile = o
            .percentile
            .ok_or_else(|| {
                err(
                    "percentile",
                    "missing: write the percentile, like percentile = 95".into(),
                )
            })?
            .into_inner();
        let threshold = o
            .threshold
            .ok_or_else(|| {
                err(
                    "threshold",
                    "missing: write the threshold, like threshold = \"1s\"".into(),
                )
            })?
            .into_inner();
        let threshold = parse_duration(&threshold).map_err(|m| err("threshold", m))?;
        let mut objective = Objective::latency(metric, percentile, threshold);
        if let Some(per) = o.per_input_token {
            let per = parse_duration(per.get_ref()).map_err(|m| err("per_input_token", m))?;
            objective = objective.per_input_token(per);
        }
        objective
    } else if let Some(target) = o.success_rate {
        Objective::success_rate(target.into_inner())
    } else if let Some(max) = o.fallback_rate {
        Objective::fallback_rate(max.into_inner())
    } else {
        let max = o.error_rate.map(Spanned::into_inner).unwrap_or_default();
        let class = o
            .error_class
            .ok_or_else(|| {
                err(
                    "error_class",
                    "missing: name the class, like error_class = \"rate_limited\"".into(),
                )
            })?
            .into_inner();
        let class = ErrorClass::parse(&class).ok_or_else(|| {
            err(
                "error_class",
                format!("`{class}` is not an error class: use timeout, rate_limited, overloaded, server_error, client_error, transport or _OTHER"),
            )
        })?;
        Objective::error_rate(class, max)
    };
    Ok(match o.name {
        Some(name) => objective.named(name),
        None => objective,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::spec::ObjectiveKind;

    const FULL: &str = r#"
period = "28d"

[[class]]
name = "chat"
match = { operation = "chat", role = "server" }

[[class.objective]]
latency = "ttft"
percentile = 95
threshold = "1s"
per_input_token = "0.2ms"

[[class.objective]]
latency = "tpot"
percentile = 95
threshold = "50ms"

[[class.objective]]
success_rate = 0.995

[[class.objective]]
fallback_rate = 0.02

[[class.objective]]
error_rate = 0.01
error_class = "rate_limited"

[saturation]
waiting_max = 50
kv_usage_max = 0.9
"#;

    #[test]
    fn a_full_spec_parses() {
        let spec = SloSpec::from_toml(FULL).expect("valid spec");
        assert_eq!(spec.period, Duration::from_secs(28 * 86_400));
        let chat = &spec.classes[0];
        assert_eq!(chat.selector.role, Some(Role::Server));
        let names: Vec<&str> = chat.objectives.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ttft_p95",
                "tpot_p95",
                "success_rate",
                "fallback_rate",
                "error_rate_rate_limited"
            ]
        );
        match chat.objectives[0].kind {
            ObjectiveKind::Latency { threshold, .. } => {
                assert_eq!(
                    threshold.for_input(Some(1_000)),
                    Duration::from_millis(1_200)
                );
            }
            _ => panic!("latency expected"),
        }
        assert!((chat.objectives[3].target - 0.98).abs() < 1e-12);
        assert_eq!(spec.saturation.waiting_max, Some(50.0));
    }

    fn error(text: &str) -> SpecError {
        SloSpec::from_toml(text).expect_err("invalid spec")
    }

    #[test]
    fn errors_name_the_field_and_the_line() {
        let e =
            error("[[objective]]\nlatency = \"ttft\"\npercentile = 95\nthreshold = \"1 parsec\"\n");
        assert_eq!(e.field, "class[0].objective[0].threshold");
        assert_eq!(e.line, Some(4));
        assert!(e.message.contains("unknown unit"), "{e}");

        let e = error("\n\n[[objective]]\nsuccess_rate = 1.5\n");
        assert_eq!(e.field, "class[0].objective[0].success_rate");
        assert_eq!(e.line, Some(4));

        let e = error(
            "[[objective]]\nlatency = \"ttft\"\npercentile = 95\nthreshold = \"1s\"\ncolour = \"red\"\n",
        );
        assert_eq!(e.field, "colour");
        assert!(e.line.is_some());
        assert!(e.to_string().contains("unknown field"), "{e}");

        let e = error("[[objective]]\nlatency = \"ttft\"\nthreshold = \"1s\"\n");
        assert!(e.message.contains("percentile = 95"), "{e}");

        let e = error("period = \"10m\"\n[[objective]]\nsuccess_rate = 0.9\n");
        assert_eq!(e.field, "period");

        let e = error("[[class]]\nname = \"a b\"\n[[class.objective]]\nsuccess_rate = 0.9\n");
        assert_eq!((e.field.as_str(), e.line), ("class[0].name", Some(2)));

        let e = error("");
        assert!(e.message.contains("no objective"));

        let e = error("[[objective]]\nerror_rate = 0.01\nerror_class = \"teapot\"\n");
        assert!(e.message.contains("rate_limited"), "{e}");
    }

    /// Found by the `slo_spec` fuzz target: an empty key gave an error with an empty field.
    #[test]
    fn an_empty_key_is_named() {
        for text in ["'' = 1", "[[objective]]\nsuccess_rate = 0.9\n\"\" = 2\n"] {
            let e = error(text);
            assert_eq!(e.field, "\"\"", "{e}");
            assert!(e.to_string().contains("unknown field"), "{e}");
            assert!(e.line.is_some(), "{e}");
        }
    }
}
