//! Building and validating a spec in code.

use std::collections::HashSet;
use std::time::Duration;

use super::{
    DEFAULT_PERIOD, LatencyMetric, ObjectiveKind, Saturation, SloClass, SloSpec, SpecError,
};
use crate::spec::Objective;

/// Builds an [`SloSpec`]; [`build`](SloSpecBuilder::build) validates it.
#[derive(Clone, Debug, Default)]
pub struct SloSpecBuilder {
    period: Option<Duration>,
    classes: Vec<SloClass>,
    default_objectives: Vec<Objective>,
    saturation: Saturation,
}

impl SloSpecBuilder {
    /// The compliance period (default 30 days).
    pub fn period(mut self, period: Duration) -> Self {
        self.period = Some(period);
        self
    }

    /// Adds a class.
    pub fn class(mut self, class: SloClass) -> Self {
        self.classes.push(class);
        self
    }

    /// Adds an objective to the `default` class, which matches every series and comes after
    /// the named classes.
    pub fn objective(mut self, objective: Objective) -> Self {
        self.default_objectives.push(objective);
        self
    }

    /// Raises the saturation warning above this many waiting requests.
    pub fn waiting_max(mut self, max: f64) -> Self {
        self.saturation.waiting_max = Some(max);
        self
    }

    /// Raises the saturation warning above this KV-cache usage (0–1).
    pub fn kv_usage_max(mut self, max: f64) -> Self {
        self.saturation.kv_usage_max = Some(max);
        self
    }

    /// How far ahead a saturation trend is projected (default 5 minutes).
    pub fn saturation_horizon(mut self, horizon: Duration) -> Self {
        self.saturation.horizon = horizon;
        self
    }

    /// Validates and returns the spec.
    pub fn build(mut self) -> Result<SloSpec, SpecError> {
        if !self.default_objectives.is_empty() {
            let mut class = SloClass::new("default");
            class.objectives = std::mem::take(&mut self.default_objectives);
            self.classes.push(class);
        }
        let spec = SloSpec {
            period: self.period.unwrap_or(DEFAULT_PERIOD),
            classes: self.classes,
            saturation: self.saturation,
        };
        validate(&spec)?;
        Ok(spec)
    }
}

/// Checks every rule a spec must follow; the error's field is a path such as
/// `class[0].objective[1].target`.
pub(crate) fn validate(spec: &SloSpec) -> Result<(), SpecError> {
    if spec.period < Duration::from_secs(3_600) {
        return Err(SpecError::new(
            "period",
            "the compliance period must be at least 1h (the usual is 28d or 30d)",
        ));
    }
    if spec.classes.is_empty() {
        return Err(SpecError::new(
            "class",
            "no objective: add [[objective]] entries, or [[class]] entries with [[class.objective]]",
        ));
    }
    let mut names = HashSet::new();
    for (ci, class) in spec.classes.iter().enumerate() {
        let at = |field: &str| format!("class[{ci}].{field}");
        if !valid_label(&class.name) {
            return Err(SpecError::new(
                at("name"),
                format!(
                    "`{}` is not a usable name: use letters, digits, `_` and `-`",
                    class.name
                ),
            ));
        }
        if !names.insert(class.name.as_str()) {
            return Err(SpecError::new(
                at("name"),
                format!("the class name `{}` is used twice", class.name),
            ));
        }
        if class.objectives.is_empty() {
            return Err(SpecError::new(
                at("objective"),
                "a class needs at least one objective",
            ));
        }
        let bounds = |metric: LatencyMetric| {
            class
                .objectives
                .iter()
                .any(|o| matches!(o.kind, ObjectiveKind::Latency { metric: m, .. } if m == metric))
        };
        if class.from_headers && !bounds(LatencyMetric::Ttft) && !bounds(LatencyMetric::Tpot) {
            return Err(SpecError::new(
                at("from_headers"),
                "a header class needs a ttft or tpot latency objective: its threshold is the largest target of the x-slo-ttft-ms or x-slo-tpot-ms header it accepts",
            ));
        }
        let mut objective_names = HashSet::new();
        for (oi, objective) in class.objectives.iter().enumerate() {
            let at = |field: &str| format!("class[{ci}].objective[{oi}].{field}");
            if !objective_names.insert(objective.name.as_str()) {
                return Err(SpecError::new(
                    at("name"),
                    format!(
                        "the objective `{}` is defined twice in this class: give one a `name`",
                        objective.name
                    ),
                ));
            }
            if !valid_label(&objective.name) {
                return Err(SpecError::new(
                    at("name"),
                    "use letters, digits, `_` and `-`",
                ));
            }
            if objective.target.is_nan() || objective.target <= 0.0 || objective.target >= 1.0 {
                let field = match objective.kind {
                    ObjectiveKind::Latency { .. } => "percentile",
                    ObjectiveKind::SuccessRate => "success_rate",
                    ObjectiveKind::FallbackRate => "fallback_rate",
                    ObjectiveKind::ErrorRate(_) => "error_rate",
                };
                return Err(SpecError::new(
                    at(field),
                    "must leave a budget: a percentile strictly between 0 and 100, a rate strictly between 0 and 1",
                ));
            }
            if let ObjectiveKind::Latency { threshold, .. } = objective.kind
                && threshold.base.is_zero()
            {
                return Err(SpecError::new(
                    at("threshold"),
                    "must be greater than zero, like 1s or 50ms",
                ));
            }
        }
    }
    let s = &spec.saturation;
    if s.waiting_max.is_some_and(|w| w.is_nan() || w <= 0.0) {
        return Err(SpecError::new(
            "saturation.waiting_max",
            "must be a number of requests above 0",
        ));
    }
    if s.kv_usage_max
        .is_some_and(|k| k.is_nan() || k <= 0.0 || k > 1.0)
    {
        return Err(SpecError::new(
            "saturation.kv_usage_max",
            "must be a fraction in (0, 1], like 0.9",
        ));
    }
    Ok(())
}

fn valid_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
