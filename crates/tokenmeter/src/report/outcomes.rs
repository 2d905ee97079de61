//! Requests counted by outcome.

use std::collections::BTreeMap;

use crate::outcome::{ErrorClass, Outcome};
use crate::record::RequestRecord;

/// Requests counted by outcome, errors by class.
///
/// # Examples
///
/// ```
/// use tokenmeter::report::OutcomeCounts;
/// use tokenmeter::{ErrorClass, Outcome};
///
/// let mut counts = OutcomeCounts::default();
/// counts.add(Outcome::Success);
/// counts.add(Outcome::Error(ErrorClass::Timeout));
/// assert_eq!(counts.total(), 2);
/// assert_eq!(counts.errors_total(), 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutcomeCounts {
    /// Full successes.
    pub success: u64,
    /// Answered by a fallback.
    pub degraded: u64,
    /// Dropped by the consumer.
    pub cancelled: u64,
    /// Errors by class.
    pub errors: BTreeMap<ErrorClass, u64>,
}

impl OutcomeCounts {
    /// Counts the outcomes of `records`.
    pub fn of(records: &[RequestRecord]) -> Self {
        let mut counts = Self::default();
        for record in records {
            counts.add(record.outcome);
        }
        counts
    }

    /// Counts one outcome.
    pub fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Success => self.success += 1,
            Outcome::Degraded(_) => self.degraded += 1,
            Outcome::Cancelled => self.cancelled += 1,
            Outcome::Error(class) => *self.errors.entry(class).or_default() += 1,
        }
    }

    /// Errors of every class.
    pub fn errors_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Every request counted.
    pub fn total(&self) -> u64 {
        self.success + self.degraded + self.cancelled + self.errors_total()
    }
}
