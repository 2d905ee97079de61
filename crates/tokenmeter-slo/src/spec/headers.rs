//! Header classes: folding the objectives a request carries for itself (`x-slo-ttft-ms`,
//! `x-slo-tpot-ms`, read into [`SloTargets`]) into the bounded set of classes a spec declares.
//!
//! A class written with `from_headers = true` takes requests that carry targets, and its TTFT
//! and TPOT objectives' thresholds are the largest targets it accepts. A request with targets
//! belongs to the first header class whose selector matches its series and whose thresholds
//! hold each of its targets (a target of a metric the class has no objective for is not held).
//! The request is judged against its own targets (inclusive ≤) and counted under that class.
//! A request without targets takes its series' class as before (header classes never take it).
//! Requests with malformed headers, or with targets no class holds, are counted apart
//! ([`Unclassified`]), never under a label of their own values.

use tokenmeter::Labels;
use tokenmeter::request::SloTargets;

use super::{LatencyMetric, ObjectiveKind, SloClass, SloSpec};

/// Where a finished request is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Placement {
    /// In the spec's class at this index.
    Class(usize),
    /// Apart, for this reason.
    Unclassified(Unclassified),
    /// Nowhere: no class matches its series (as for any request such a spec does not cover).
    None,
}

/// Why a request with targets was not folded into a class: the `reason` label of
/// [`names::REQUESTS_UNCLASSIFIED`](crate::names::REQUESTS_UNCLASSIFIED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unclassified {
    /// Its objective headers were malformed ([`SloTargets::malformed`]).
    Malformed,
    /// No header class holds its targets (they are looser than every class's thresholds, or
    /// the spec declares no header class matching its series).
    NoClass,
}

impl Unclassified {
    /// Both reasons.
    pub const ALL: [Unclassified; 2] = [Self::Malformed, Self::NoClass];

    /// `malformed` or `no_class`.
    ///
    /// ```
    /// use tokenmeter_slo::spec::Unclassified;
    /// assert_eq!(Unclassified::NoClass.as_str(), "no_class");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::NoClass => "no_class",
        }
    }
}

impl SloClass {
    /// Whether this header class accepts `targets`: each target present is at or below the
    /// threshold of the class's objective on that metric.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter::request::SloTargets;
    /// use tokenmeter_slo::{LatencyMetric, Objective, SloClass};
    ///
    /// let class = SloClass::new("interactive")
    ///     .from_headers()
    ///     .objective(Objective::latency(LatencyMetric::Ttft, 90.0, Duration::from_millis(500)));
    /// let ms = |n| Some(Duration::from_millis(n));
    /// assert!(class.holds(&SloTargets::new(ms(500), None)));
    /// assert!(!class.holds(&SloTargets::new(ms(501), None)));
    /// assert!(!class.holds(&SloTargets::new(None, ms(20))), "no TPOT objective to hold it");
    /// ```
    pub fn holds(&self, targets: &SloTargets) -> bool {
        let held = |metric: LatencyMetric, target: Option<std::time::Duration>| {
            target.is_none_or(|t| {
                self.objectives.iter().any(|o| {
                    matches!(o.kind, ObjectiveKind::Latency { metric: m, threshold }
                        if m == metric && t <= threshold.base)
                })
            })
        };
        held(LatencyMetric::Ttft, targets.ttft) && held(LatencyMetric::Tpot, targets.tpot)
    }
}

impl SloSpec {
    /// Where a request of a series with `labels`, carrying `targets`, is counted (see the
    /// module docs).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter::Labels;
    /// use tokenmeter::request::SloTargets;
    /// use tokenmeter_slo::SloSpec;
    /// use tokenmeter_slo::spec::{Placement, Unclassified};
    ///
    /// let spec = SloSpec::from_toml(r#"
    ///     [[class]]
    ///     name = "interactive"
    ///     from_headers = true
    ///     [[class.objective]]
    ///     latency = "ttft"
    ///     percentile = 90
    ///     threshold = "500ms"
    ///
    ///     [[class]]
    ///     name = "batch"
    ///     from_headers = true
    ///     [[class.objective]]
    ///     latency = "ttft"
    ///     percentile = 90
    ///     threshold = "10s"
    ///
    ///     [[objective]]
    ///     success_rate = 0.99
    /// "#)?;
    /// let chat = Labels::server("chat");
    /// let ttft = |ms| Some(SloTargets::new(Some(Duration::from_millis(ms)), None));
    /// assert_eq!(spec.place(&chat, ttft(200).as_ref()), Placement::Class(0));
    /// assert_eq!(spec.place(&chat, ttft(2_000).as_ref()), Placement::Class(1));
    /// assert_eq!(spec.place(&chat, ttft(60_000).as_ref()), Placement::Unclassified(Unclassified::NoClass));
    /// assert_eq!(spec.place(&chat, None), Placement::Class(2), "no headers: the default class");
    /// # Ok::<(), tokenmeter_slo::SpecError>(())
    /// ```
    pub fn place(&self, labels: &Labels<'_>, targets: Option<&SloTargets>) -> Placement {
        let Some(targets) = targets.filter(|t| !t.is_empty()) else {
            return self
                .class_of(labels)
                .map_or(Placement::None, Placement::Class);
        };
        if targets.malformed {
            return Placement::Unclassified(Unclassified::Malformed);
        }
        self.classes
            .iter()
            .position(|c| c.from_headers && c.selector.matches(labels) && c.holds(targets))
            .map_or(
                Placement::Unclassified(Unclassified::NoClass),
                Placement::Class,
            )
    }

    /// True when the spec declares at least one header class.
    ///
    /// ```
    /// use tokenmeter_slo::{Objective, SloSpec};
    /// let spec = SloSpec::builder().objective(Objective::success_rate(0.99)).build()?;
    /// assert!(!spec.has_header_classes());
    /// # Ok::<(), tokenmeter_slo::SpecError>(())
    /// ```
    pub fn has_header_classes(&self) -> bool {
        self.classes.iter().any(|c| c.from_headers)
    }
}
