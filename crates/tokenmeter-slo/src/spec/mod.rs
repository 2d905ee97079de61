//! The SLO spec: objectives per class of requests, the compliance period, saturation limits.
//!
//! Write it in TOML ([`SloSpec::from_toml`]) or build it in code ([`SloSpec::builder`]).
//!
//! ```toml
//! period = "30d"                    # compliance period (default 30d)
//!
//! [[class]]
//! name = "chat"
//! match = { operation = "chat" }    # optional: role, operation, provider, request_model
//!
//! [[class.objective]]
//! latency = "ttft"                  # ttft, tpot, e2e or queue
//! percentile = 95                   # TTFT p95 ≤ 1 s + 0.2 ms × input tokens
//! threshold = "1s"
//! per_input_token = "0.2ms"         # optional: thresholds that grow with the prompt
//!
//! [[class.objective]]
//! success_rate = 0.995              # successes / (requests − cancelled)
//!
//! [[class.objective]]
//! fallback_rate = 0.02              # at most 2% degraded answers
//!
//! [[class.objective]]
//! error_rate = 0.01                 # at most 1% of one error class
//! error_class = "rate_limited"
//!
//! [saturation]                      # early warning, apart from the budget burn
//! waiting_max = 50                  # requests in the queue
//! kv_usage_max = 0.9                # KV-cache usage fraction
//! ```
//!
//! Objectives at the top level (`[[objective]]`) form one class named `default` that matches
//! every request.
//!
//! A class with `from_headers = true` takes the requests that carry their own objectives in
//! the `x-slo-ttft-ms` and `x-slo-tpot-ms` headers; its TTFT and TPOT thresholds are the
//! largest such objectives it accepts (see [`SloSpec::place`] for the rules):
//!
//! ```toml
//! [[class]]
//! name = "interactive"
//! from_headers = true               # requests asking for TTFT ≤ 500 ms and TPOT ≤ 50 ms
//!
//! [[class.objective]]
//! latency = "ttft"
//! percentile = 90
//! threshold = "500ms"
//!
//! [[class.objective]]
//! latency = "tpot"
//! percentile = 90
//! threshold = "50ms"
//! ```

mod builder;
mod duration;
mod error;
mod headers;
mod parse;

pub use builder::SloSpecBuilder;
pub use duration::{format_duration, parse_duration};
pub use error::SpecError;
pub use headers::{Placement, Unclassified};

use std::time::Duration;

use tokenmeter::conventions::Metric;
use tokenmeter::{ErrorClass, Labels, RequestRecord, Role};

/// The default compliance period: 30 days.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(30 * 86_400);

/// A validated SLO spec.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SloSpec {
    /// The compliance period the error budget is spent over.
    pub period: Duration,
    /// Classes of requests, each with its objectives. A request belongs to the first class whose
    /// selector matches its series; requests matching none are not evaluated.
    pub classes: Vec<SloClass>,
    /// Saturation limits for the early warning.
    pub saturation: Saturation,
}

impl SloSpec {
    /// A builder.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter_slo::{LatencyMetric, Objective, SloSpec};
    ///
    /// let spec = SloSpec::builder()
    ///     .objective(Objective::latency(LatencyMetric::Ttft, 95.0, Duration::from_secs(1)))
    ///     .objective(Objective::success_rate(0.995))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(spec.classes[0].name, "default");
    /// assert_eq!(spec.classes[0].objectives[0].name, "ttft_p95");
    /// ```
    pub fn builder() -> SloSpecBuilder {
        SloSpecBuilder::default()
    }

    /// Parses and validates a TOML spec (see the module docs for the format).
    pub fn from_toml(text: &str) -> Result<Self, SpecError> {
        parse::from_toml(text)
    }

    /// The index of the class a series' requests without objective headers belong to (header
    /// classes never take them; see [`SloSpec::place`]).
    pub fn class_of(&self, labels: &Labels<'_>) -> Option<usize> {
        self.classes
            .iter()
            .position(|c| !c.from_headers && c.selector.matches(labels))
    }

    /// Every latency threshold of the spec, per metric, for adding bucket edges to exporters'
    /// histograms (the base thresholds; thresholds that grow with input length have no single
    /// edge).
    pub fn thresholds(&self, metric: LatencyMetric) -> Vec<Duration> {
        let mut edges: Vec<Duration> = self
            .classes
            .iter()
            .flat_map(|c| &c.objectives)
            .filter_map(|o| match o.kind {
                ObjectiveKind::Latency {
                    metric: m,
                    threshold,
                } if m == metric => Some(threshold.base),
                _ => None,
            })
            .collect();
        edges.sort();
        edges.dedup();
        edges
    }
}

/// A class of requests with its own objectives (per model, per operation...).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SloClass {
    /// The class name: the `slo_class` label.
    pub name: String,
    /// Which series belong to it.
    pub selector: Selector,
    /// Its objectives.
    pub objectives: Vec<Objective>,
    /// A header class: it takes requests carrying their own objectives (`x-slo-ttft-ms`,
    /// `x-slo-tpot-ms`) that its TTFT and TPOT thresholds hold ([`SloSpec::place`]).
    pub from_headers: bool,
}

impl SloClass {
    /// A class matching every series, with no objectives yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            selector: Selector::default(),
            objectives: Vec::new(),
            from_headers: false,
        }
    }

    /// Makes it a header class (see [`SloSpec::place`]).
    ///
    /// ```
    /// assert!(tokenmeter_slo::SloClass::new("interactive").from_headers().from_headers);
    /// ```
    pub fn from_headers(mut self) -> Self {
        self.from_headers = true;
        self
    }

    /// Restricts the class to series matching `selector`.
    pub fn matching(mut self, selector: Selector) -> Self {
        self.selector = selector;
        self
    }

    /// Adds an objective.
    pub fn objective(mut self, objective: Objective) -> Self {
        self.objectives.push(objective);
        self
    }

    /// True when the class has at least one latency objective (the goodput predicate).
    pub fn latency_objectives(&self) -> impl Iterator<Item = &Objective> {
        self.objectives
            .iter()
            .filter(|o| matches!(o.kind, ObjectiveKind::Latency { .. }))
    }
}

/// Which series a class covers: every field that is set must equal the series' label.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Selector {
    /// Server or client.
    pub role: Option<Role>,
    /// `gen_ai.operation.name`.
    pub operation: Option<String>,
    /// `gen_ai.provider.name`.
    pub provider: Option<String>,
    /// `gen_ai.request.model`.
    pub request_model: Option<String>,
}

impl Selector {
    /// Series whose request model is `model`.
    pub fn model(model: impl Into<String>) -> Self {
        Self {
            request_model: Some(model.into()),
            ..Self::default()
        }
    }

    /// Series whose operation is `operation`.
    pub fn operation(operation: impl Into<String>) -> Self {
        Self {
            operation: Some(operation.into()),
            ..Self::default()
        }
    }

    /// Whether `labels` match.
    pub fn matches(&self, labels: &Labels<'_>) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        self.role.is_none_or(|r| r == labels.role())
            && eq(&self.operation, labels.operation())
            && eq(&self.provider, labels.provider_name())
            && eq(&self.request_model, labels.request_model_name())
    }
}

/// One objective: a ratio of good events to valid events that must stay at or above `target`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Objective {
    /// The `objective` label: `ttft_p95`, `success_rate`, `error_rate_rate_limited`...
    pub name: String,
    /// What is measured.
    pub kind: ObjectiveKind,
    /// The share of valid events that must be good, in (0, 1).
    pub target: f64,
}

impl Objective {
    /// "`metric` p`percentile` ≤ `threshold`": at least `percentile`% of requests with that
    /// value must have it at or below the threshold.
    pub fn latency(metric: LatencyMetric, percentile: f64, threshold: Duration) -> Self {
        Self {
            name: format!("{}_p{}", metric.as_str(), trim_number(percentile)),
            kind: ObjectiveKind::Latency {
                metric,
                threshold: Threshold::fixed(threshold),
            },
            target: percentile / 100.0,
        }
    }

    /// Successes (not degraded) over requests that were not cancelled.
    pub fn success_rate(target: f64) -> Self {
        Self {
            name: "success_rate".into(),
            kind: ObjectiveKind::SuccessRate,
            target,
        }
    }

    /// At most `max` of the answered requests degraded (a fallback answered).
    pub fn fallback_rate(max: f64) -> Self {
        Self {
            name: "fallback_rate".into(),
            kind: ObjectiveKind::FallbackRate,
            target: 1.0 - max,
        }
    }

    /// At most `max` of the requests ending in an error of `class`.
    pub fn error_rate(class: ErrorClass, max: f64) -> Self {
        Self {
            name: format!(
                "error_rate_{}",
                class.as_str().trim_start_matches('_').to_lowercase()
            ),
            kind: ObjectiveKind::ErrorRate(class),
            target: 1.0 - max,
        }
    }

    /// The same objective with a threshold that grows by `per_token` for each input token.
    pub fn per_input_token(mut self, per_token: Duration) -> Self {
        if let ObjectiveKind::Latency { threshold, .. } = &mut self.kind {
            threshold.per_input_token = per_token;
        }
        self
    }

    /// Renames the objective.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The error budget: 1 − target.
    pub fn budget(&self) -> f64 {
        1.0 - self.target
    }

    /// Whether `record` counts for this objective, and if so whether it was good. A TTFT or
    /// TPOT objective judges a request that carries its own target for that metric
    /// ([`RequestRecord::slo_targets`]) against that target instead of the threshold.
    pub fn judge(&self, record: &RequestRecord) -> Option<bool> {
        use tokenmeter::Outcome;
        match self.kind {
            ObjectiveKind::Latency { metric, threshold } => {
                let value = metric.of(record)?;
                let own = record.slo_targets.and_then(|t| match metric {
                    LatencyMetric::Ttft => t.ttft,
                    LatencyMetric::Tpot => t.tpot,
                    _ => None,
                });
                Some(value <= own.unwrap_or_else(|| threshold.for_input(record.input_tokens)))
            }
            ObjectiveKind::SuccessRate => match record.outcome {
                Outcome::Cancelled => None,
                outcome => Some(outcome.is_success()),
            },
            ObjectiveKind::FallbackRate => match record.outcome {
                Outcome::Success => Some(true),
                Outcome::Degraded(_) => Some(false),
                _ => None,
            },
            ObjectiveKind::ErrorRate(class) => match record.outcome {
                Outcome::Cancelled => None,
                outcome => Some(outcome.error_class() != Some(class)),
            },
        }
    }
}

fn trim_number(x: f64) -> String {
    let s = format!("{x}");
    s.replace('.', "_")
}

/// What an objective measures.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ObjectiveKind {
    /// A latency at or below a threshold.
    Latency {
        /// Which latency.
        metric: LatencyMetric,
        /// The threshold.
        threshold: Threshold,
    },
    /// Success rate.
    SuccessRate,
    /// Fallback (degraded) rate.
    FallbackRate,
    /// Rate of one error class.
    ErrorRate(ErrorClass),
}

/// The latencies an objective can bound: the four of the conventions' [`Metric`]s that a
/// request's record holds as one duration, with the spec file's spelling ([`as_str`](Self::as_str),
/// the same as [`Metric`]'s `Display`). Not a vocabulary of its own: [`Metric::from`] gives the
/// conventions' name of each, the one whose buckets take the objective's threshold as an edge.
///
/// # Examples
///
/// ```
/// use tokenmeter::conventions::Metric;
/// use tokenmeter_slo::LatencyMetric;
///
/// for latency in LatencyMetric::ALL {
///     assert_eq!(Metric::from(latency).to_string(), latency.as_str());
/// }
/// assert_eq!(Metric::from(LatencyMetric::E2e), Metric::E2e);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LatencyMetric {
    /// Time to first token.
    Ttft,
    /// Time per output token.
    Tpot,
    /// End-to-end latency.
    E2e,
    /// Time in the queue.
    Queue,
}

impl LatencyMetric {
    /// Every metric.
    pub const ALL: [LatencyMetric; 4] = [Self::Ttft, Self::Tpot, Self::E2e, Self::Queue];

    /// `ttft`, `tpot`, `e2e` or `queue`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ttft => "ttft",
            Self::Tpot => "tpot",
            Self::E2e => "e2e",
            Self::Queue => "queue",
        }
    }

    /// Parses [`LatencyMetric::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// The value in `record`, when it was observed.
    pub fn of(self, record: &RequestRecord) -> Option<Duration> {
        match self {
            Self::Ttft => record.ttft,
            Self::Tpot => record.tpot(),
            Self::E2e => Some(record.e2e),
            Self::Queue => record.queue,
        }
    }
}

impl From<LatencyMetric> for Metric {
    fn from(latency: LatencyMetric) -> Self {
        match latency {
            LatencyMetric::Ttft => Metric::Ttft,
            LatencyMetric::Tpot => Metric::Tpot,
            LatencyMetric::E2e => Metric::E2e,
            LatencyMetric::Queue => Metric::Queue,
        }
    }
}

/// A latency threshold, optionally growing with the number of input tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Threshold {
    /// The threshold for an empty prompt.
    pub base: Duration,
    /// Added per input token.
    pub per_input_token: Duration,
}

impl Threshold {
    /// A fixed threshold.
    pub const fn fixed(base: Duration) -> Self {
        Self {
            base,
            per_input_token: Duration::ZERO,
        }
    }

    /// The threshold for a request with `input_tokens` (the base when unknown).
    pub fn for_input(&self, input_tokens: Option<u64>) -> Duration {
        let n = u32::try_from(input_tokens.unwrap_or(0)).unwrap_or(u32::MAX);
        self.base
            .saturating_add(self.per_input_token.saturating_mul(n))
    }
}

/// Saturation limits: queue depth and KV-cache usage rise before latency does.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Saturation {
    /// Requests waiting (summed over series) above which the warning is raised.
    pub waiting_max: Option<f64>,
    /// KV-cache usage (0–1) above which the warning is raised.
    pub kv_usage_max: Option<f64>,
    /// How far ahead the trend is projected: a signal on course to cross its limit within this
    /// horizon raises a `rising` warning.
    pub horizon: Duration,
}

impl Default for Saturation {
    fn default() -> Self {
        Self {
            waiting_max: None,
            kv_usage_max: None,
            horizon: Duration::from_secs(300),
        }
    }
}
