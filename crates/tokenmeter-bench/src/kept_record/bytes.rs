//! A compact record as bytes, for a run's packed requests ([`crate::packed`]): what is present,
//! the outcome in one byte, the times as differences from the one before (most fit three
//! bytes), the counts as variable-length numbers (most fit one), the mold and the rare SLO
//! targets as indexes into tables the run keeps once ([`Shared`]). Read back, it is the same
//! [`Compact`], field for field.

use std::sync::Arc;

use tokenmeter::request::SloTargets;
use tokenmeter::{Degradation, ErrorClass, FinishReason, Outcome, RequestRecord};

use super::{COUNTS, Compact, OPTIONAL, TIMES, Wide};
use crate::varint::{get, get_signed, put, put_signed};

/// What the packed records of a run share: their molds and the SLO targets of the requests
/// that had their own.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    molds: Vec<Arc<RequestRecord>>,
    targets: Vec<SloTargets>,
}

/// How many of the latest molds a record's mold is looked for among before it is added.
const RECENT_MOLDS: usize = 8;

impl Shared {
    fn mold_index(&mut self, mold: &Arc<RequestRecord>) -> usize {
        let n = self.molds.len();
        let recent = n.saturating_sub(RECENT_MOLDS)..n;
        match recent.rev().find(|&k| Arc::ptr_eq(&self.molds[k], mold)) {
            Some(k) => k,
            None => {
                self.molds.push(Arc::clone(mold));
                n
            }
        }
    }

    /// Bytes of the tables' lists (the molds themselves are shared with the records in flight).
    #[cfg(test)]
    pub(crate) fn retained_bytes(&self) -> usize {
        self.molds.capacity() * std::mem::size_of::<Arc<RequestRecord>>()
            + self.targets.capacity() * std::mem::size_of::<SloTargets>()
    }
}

const DEGRADATIONS: [Degradation; 4] = [
    Degradation::OtherModel,
    Degradation::Cached,
    Degradation::Truncated,
    Degradation::Other,
];

const FINISH_REASONS: [FinishReason; 7] = [
    FinishReason::Stop,
    FinishReason::Length,
    FinishReason::ToolCalls,
    FinishReason::ContentFilter,
    FinishReason::Error,
    FinishReason::Repetition,
    FinishReason::Other,
];

/// Where the error classes' codes start, and the degradations'.
const ERRORS: u64 = 2;
const DEGRADED: u64 = 16;

fn outcome_code(outcome: Outcome) -> Option<u64> {
    let at = |k: usize| k as u64;
    match outcome {
        Outcome::Success => Some(0),
        Outcome::Cancelled => Some(1),
        Outcome::Error(class) => ErrorClass::ALL
            .iter()
            .position(|&c| c == class)
            .map(|k| ERRORS + at(k)),
        Outcome::Degraded(how) => DEGRADATIONS
            .iter()
            .position(|&d| d == how)
            .map(|k| DEGRADED + at(k)),
        _ => None,
    }
}

fn outcome_of(code: u64) -> Option<Outcome> {
    let pick = |from: u64| usize::try_from(code.checked_sub(from)?).ok();
    match code {
        0 => Some(Outcome::Success),
        1 => Some(Outcome::Cancelled),
        c if c < DEGRADED => ErrorClass::ALL
            .get(pick(ERRORS)?)
            .map(|&c| Outcome::Error(c)),
        _ => DEGRADATIONS
            .get(pick(DEGRADED)?)
            .map(|&d| Outcome::Degraded(d)),
    }
}

/// The flags, the finish reason and the outcome share one number: the finish reason in its
/// low 3 bits, then these two flags, then the outcome (a success that stopped: one byte).
const PANICKED: u64 = 1 << 3;
const TARGETS: u64 = 1 << 4;
const OUTCOME_SHIFT: u32 = 5;
const FINISH_BITS: u64 = 0b111;

impl Compact {
    /// Appends this record; `bases` are a time near its arrival and a number near its id (each
    /// is kept as the difference). `false` (nothing appended) when an outcome or a finish
    /// reason is one this version does not know: keep the record whole then.
    pub(crate) fn write(&self, out: &mut Vec<u8>, shared: &mut Shared, bases: (u64, u64)) -> bool {
        let (base, id_base) = bases;
        // Every field by name: one added to `Compact` does not compile here until it is written.
        let Compact {
            mold: _,
            id: _,
            arrival: _,
            low: _,
            wide: _,
            counts: _,
            present: _,
            outcome: _,
            finish_reason: _,
            panicked: _,
        } = self;
        let Some(outcome) = outcome_code(self.outcome) else {
            return false;
        };
        let finish = match self.finish_reason {
            None => 0,
            Some(reason) => match FINISH_REASONS.iter().position(|&r| r == reason) {
                Some(k) => k as u64 + 1,
                None => return false,
            },
        };
        let targets = self.wide.as_ref().and_then(|w| w.slo_targets);
        let flags =
            if self.panicked { PANICKED } else { 0 } | if targets.is_some() { TARGETS } else { 0 };
        put(out, u64::from(self.present));
        put(out, outcome << OUTCOME_SHIFT | flags | finish);
        put(out, shared.mold_index(&self.mold) as u64);
        put_signed(out, u64::from(self.id).wrapping_sub(id_base) as i64);
        put_signed(out, self.arrival.wrapping_sub(base) as i64);
        let mut before = 0u64;
        for i in (0..TIMES).filter(|&i| self.present & (1 << i) != 0) {
            let ns = self.nanos(i);
            put_signed(out, ns.wrapping_sub(before) as i64);
            before = ns;
        }
        for i in (0..COUNTS).filter(|&i| i >= OPTIONAL || self.present & (1 << (TIMES + i)) != 0) {
            put(out, u64::from(self.counts[i]));
        }
        if let Some(targets) = targets {
            put(out, shared.targets.len() as u64);
            shared.targets.push(targets);
        }
        true
    }

    /// Reads a record [`write`](Self::write) appended (with the same `base` and `shared`);
    /// `None` when the bytes are not one.
    pub(crate) fn read(input: &mut &[u8], shared: &Shared, bases: (u64, u64)) -> Option<Self> {
        let (base, id_base) = bases;
        let present = u16::try_from(get(input)?).ok()?;
        let flags = get(input)?;
        let outcome = outcome_of(flags >> OUTCOME_SHIFT)?;
        let finish_reason = match flags & FINISH_BITS {
            0 => None,
            k => Some(*FINISH_REASONS.get(usize::try_from(k - 1).ok()?)?),
        };
        let mold = Arc::clone(shared.molds.get(usize::try_from(get(input)?).ok()?)?);
        let id = u32::try_from(id_base.wrapping_add(get_signed(input)? as u64)).ok()?;
        let arrival = base.wrapping_add(get_signed(input)? as u64);
        let mut low = [0u32; TIMES];
        let mut high = [0u32; TIMES];
        let mut before = 0u64;
        for i in (0..TIMES).filter(|&i| present & (1 << i) != 0) {
            let ns = before.wrapping_add(get_signed(input)? as u64);
            low[i] = ns as u32;
            high[i] = (ns >> 32) as u32;
            before = ns;
        }
        let mut counts = [0u32; COUNTS];
        for (i, count) in counts.iter_mut().enumerate() {
            if i >= OPTIONAL || present & (1 << (TIMES + i)) != 0 {
                *count = u32::try_from(get(input)?).ok()?;
            }
        }
        let slo_targets = if flags & TARGETS != 0 {
            Some(*shared.targets.get(usize::try_from(get(input)?).ok()?)?)
        } else {
            None
        };
        Some(Self {
            mold,
            id,
            arrival,
            low,
            wide: (high != [0; TIMES] || slo_targets.is_some())
                .then(|| Box::new(Wide { high, slo_targets })),
            counts,
            present,
            outcome,
            finish_reason,
            panicked: flags & PANICKED != 0,
        })
    }

    /// Time `i` in nanoseconds.
    fn nanos(&self, i: usize) -> u64 {
        let high = self.wide.as_ref().map_or(0, |w| w.high[i]);
        u64::from(high) << 32 | u64::from(self.low[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_and_finish_reason_has_a_code_that_reads_back() {
        let mut outcomes = vec![Outcome::Success, Outcome::Cancelled];
        outcomes.extend(ErrorClass::ALL.map(Outcome::Error));
        outcomes.extend(DEGRADATIONS.map(Outcome::Degraded));
        for outcome in outcomes {
            let code = outcome_code(outcome).expect("a code");
            assert_eq!(outcome_of(code), Some(outcome));
        }
        assert_eq!(outcome_of(DEGRADED + 4), None);
        assert_eq!(outcome_of(ERRORS + 8), None);
    }
}
