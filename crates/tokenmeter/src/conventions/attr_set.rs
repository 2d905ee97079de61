//! [`AttrSet`]: which attributes an instrument carries, and the variants an exporter prepares
//! once per series so that recording only picks one by index.

use super::attr;
use crate::outcome::{ErrorClass, FinishReason, Outcome};
use crate::record::RequestRecord;
use crate::sink::{Step, StepKind};

/// Where the base attributes of an [`AttrSet`] come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Base {
    /// The series' semconv attributes: operation, provider, models, server address and port.
    Series,
    /// The engine's: the series attributes without the operation.
    Engine,
    /// None (only the extras).
    Empty,
}

/// vLLM's `finished_reason` values, in the order vLLM 0.33 lists them (`repetition`: the
/// engine stopped a repetitive pattern).
pub const FINISHED_REASONS: [&str; 5] = ["stop", "length", "abort", "error", "repetition"];

/// The attribute set of an instrument: a [`Base`], `role` or not, and extra attributes that
/// vary with the event (the outcome, the step kind). Each set has a fixed number of
/// [`variants`](AttrSet::variants): an exporter prepares one attribute set (or one handle) per
/// variant when a series is resolved, all at zero, and picks one by index when recording.
///
/// # Examples
///
/// ```
/// use tokenmeter::conventions::{AttrSet, attr};
/// use tokenmeter::{ErrorClass, Outcome};
///
/// let outcome = AttrSet::Outcome;
/// assert!(outcome.has_role());
/// assert_eq!(outcome.variants(), 3 + ErrorClass::ALL.len());
/// let i = outcome.outcome_variant(Outcome::Error(ErrorClass::Timeout));
/// assert_eq!(outcome.extra(i), [(attr::OUTCOME, "error"), (attr::ERROR_TYPE, "timeout")]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AttrSet {
    /// The series' semconv attributes (`gen_ai.*`, `server.*`).
    Semconv,
    /// [`AttrSet::Semconv`], plus `error.type` for a request that ended in an error.
    SemconvError,
    /// [`AttrSet::Semconv`] plus `gen_ai.token.type` = this value (`input`, `output`).
    TokenType(&'static str),
    /// [`AttrSet::Semconv`] plus `role`: tokenmeter's own request instruments.
    Own,
    /// [`AttrSet::Own`] plus `outcome` (and `error.type` for errors).
    Outcome,
    /// The engine's attributes (no operation).
    Engine,
    /// [`AttrSet::Engine`] plus `kind` (the step kind).
    EngineKind,
    /// `role` only.
    Role,
    /// [`AttrSet::Semconv`] plus vLLM's `finished_reason` ([`FINISHED_REASONS`]).
    FinishedReason,
    /// [`AttrSet::Semconv`] plus `gen_ai.token.modality` = this value (`text`, `image`,
    /// `audio`, `unknown`): the `gen_ai.client.inference.usage.*` counters.
    Modality(&'static str),
    /// The series attributes, the role and `source` = the value (the part of the input
    /// tokens a row counts: `local_compute`, `local_cache_hit`, `external_kv_transfer`).
    Source(&'static str),
    /// The engine's attributes plus `reason` = the value: the waiting and admission reasons of
    /// [`EngineSignal`](super::EngineSignal)s. An info row ([`EngineSignal::is_info`](super::EngineSignal::is_info))
    /// takes [`AttrSet::Engine`]; its other attributes come with each value.
    EngineReason(&'static str),
}

const OUTCOMES: usize = 3 + ErrorClass::ALL.len();

fn class_index(class: ErrorClass) -> usize {
    ErrorClass::ALL
        .iter()
        .position(|c| *c == class)
        .unwrap_or(ErrorClass::ALL.len() - 1)
}

impl AttrSet {
    /// The base attributes.
    pub const fn base(self) -> Base {
        match self {
            AttrSet::Engine | AttrSet::EngineKind | AttrSet::EngineReason(_) => Base::Engine,
            AttrSet::Role => Base::Empty,
            _ => Base::Series,
        }
    }

    /// Whether `role` follows the base (before the extras).
    pub const fn has_role(self) -> bool {
        matches!(
            self,
            AttrSet::Own | AttrSet::Outcome | AttrSet::Role | AttrSet::Source(_)
        )
    }

    /// How many variants this set has: one per outcome slot, error class, step kind, …
    pub const fn variants(self) -> usize {
        match self {
            AttrSet::SemconvError => 1 + ErrorClass::ALL.len(),
            AttrSet::Outcome => OUTCOMES,
            AttrSet::EngineKind => StepKind::ALL.len(),
            AttrSet::FinishedReason => FINISHED_REASONS.len(),
            _ => 1,
        }
    }

    /// The extra attributes of variant `index` (OpenTelemetry keys), after the base and
    /// `role`. Empty for an index out of range.
    pub fn extra(self, index: usize) -> Vec<(&'static str, &'static str)> {
        match self {
            AttrSet::SemconvError => match index.checked_sub(1) {
                Some(i) if i < ErrorClass::ALL.len() => {
                    vec![(attr::ERROR_TYPE, ErrorClass::ALL[i].as_str())]
                }
                _ => Vec::new(),
            },
            AttrSet::TokenType(value) => vec![(attr::TOKEN_TYPE, value)],
            AttrSet::Source(value) => vec![(attr::SOURCE, value)],
            AttrSet::EngineReason(value) => vec![(attr::REASON, value)],
            AttrSet::Modality(value) => vec![(attr::TOKEN_MODALITY, value)],
            AttrSet::Outcome => match index {
                0 => vec![(attr::OUTCOME, Outcome::Success.as_str())],
                1 => vec![(attr::OUTCOME, Outcome::Cancelled.as_str())],
                2 => vec![(attr::OUTCOME, "degraded")],
                i if i < OUTCOMES => vec![
                    (attr::OUTCOME, "error"),
                    (attr::ERROR_TYPE, ErrorClass::ALL[i - 3].as_str()),
                ],
                _ => Vec::new(),
            },
            AttrSet::EngineKind => StepKind::ALL
                .get(index)
                .map(|kind| vec![(attr::KIND, kind.as_str())])
                .unwrap_or_default(),
            AttrSet::FinishedReason => FINISHED_REASONS
                .get(index)
                .map(|reason| vec![(attr::FINISHED_REASON, *reason)])
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The variant an outcome records into ([`AttrSet::SemconvError`], [`AttrSet::Outcome`];
    /// 0 for any other set).
    #[inline]
    pub fn outcome_variant(self, outcome: Outcome) -> usize {
        match self {
            AttrSet::SemconvError => outcome.error_class().map_or(0, |c| 1 + class_index(c)),
            AttrSet::Outcome => match outcome {
                Outcome::Success => 0,
                Outcome::Cancelled => 1,
                Outcome::Degraded(_) => 2,
                Outcome::Error(class) => 3 + class_index(class),
            },
            _ => 0,
        }
    }

    /// The variant a request's end records into.
    #[inline]
    pub fn record_variant(self, record: &RequestRecord) -> usize {
        match self {
            AttrSet::FinishedReason => match record.outcome {
                Outcome::Success | Outcome::Degraded(_) => match record.finish_reason {
                    Some(FinishReason::Length) => 1,
                    Some(FinishReason::Error) => 3,
                    Some(FinishReason::Repetition) => 4,
                    _ => 0,
                },
                Outcome::Cancelled => 2,
                Outcome::Error(_) => 3,
            },
            _ => self.outcome_variant(record.outcome),
        }
    }

    /// The variant a step records into ([`AttrSet::EngineKind`]; 0 for any other set).
    #[inline]
    pub fn step_variant(self, step: &Step) -> usize {
        match self {
            AttrSet::EngineKind => step.kind.index(),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_its_extras_and_every_outcome_its_own_slot() {
        let mut seen = std::collections::HashSet::new();
        let mut outcomes = vec![
            Outcome::Success,
            Outcome::Cancelled,
            Outcome::Degraded(crate::Degradation::Cached),
        ];
        outcomes.extend(ErrorClass::ALL.map(Outcome::Error));
        for outcome in outcomes {
            let i = AttrSet::Outcome.outcome_variant(outcome);
            assert!(i < AttrSet::Outcome.variants());
            assert!(seen.insert(i), "{outcome}");
            assert_eq!(AttrSet::Outcome.extra(i)[0].1, outcome.as_str());
        }
        for set in [AttrSet::SemconvError, AttrSet::EngineKind] {
            let extras: std::collections::HashSet<_> =
                (0..set.variants()).map(|i| set.extra(i)).collect();
            assert_eq!(extras.len(), set.variants(), "{set:?}");
        }
        assert!(AttrSet::Outcome.extra(OUTCOMES).is_empty());
    }
}
