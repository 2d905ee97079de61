//! [`KeptRecord`]: the core's record of one request as a run keeps it, whole while the request is
//! ending, compact once it is settled.
//!
//! A [`RequestRecord`] is 336 bytes (every time an `Option<Duration>` of 16). Kept for every
//! request of a run, it was most of what a short answer cost. Once settled, a request keeps its
//! times as nanoseconds in `u32`s (their high halves in a box when one is 4.29 s or longer,
//! with the request's own SLO targets, which few have), its counts as `u32`s, and one [`Mold`]
//! shared by the requests of its series (the series and any field kept whole): 104 bytes.
//! [`KeptRecord::get`] builds the record again, field for field the one the core made (the
//! times are whole nanoseconds, so the same `Duration`s and the same `f64`s): every statistic
//! read from it is unchanged; [`KeptRecord::outcome`] and [`KeptRecord::output_tokens`], read
//! for every request by each figure's filter, need no record built. A record whose
//! counts or id (a count of the process's requests) do not fit a `u32` is kept whole.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use tokenmeter::request::SloTargets;
use tokenmeter::{FinishReason, Outcome, RequestRecord};

/// The record of a request: whole until settled, then compact (see the module).
#[derive(Clone, Debug)]
pub(crate) enum KeptRecord {
    /// As the core made it (before settling, or when a count does not fit a `u32`).
    Whole(Box<RequestRecord>),
    /// Settled.
    Compact(Compact),
}

/// The record every compact record of a series is built on: its series, and the fields not
/// kept per request (none today; a field the core adds is copied from here until kept).
#[derive(Clone, Debug, Default)]
pub(crate) struct Mold(Option<Arc<RequestRecord>>);

impl Mold {
    /// The mold for `record`'s series: the last one when it is the same series.
    fn of(&mut self, record: &RequestRecord) -> Arc<RequestRecord> {
        match &self.0 {
            Some(mold) if mold.series.same(&record.series) => Arc::clone(mold),
            _ => {
                let mut mold = record.clone();
                mold.item_times = None;
                let mold = Arc::new(mold);
                self.0 = Some(Arc::clone(&mold));
                mold
            }
        }
    }
}

/// The times of a record, in the order of [`times`].
const TIMES: usize = 8;
/// The counts of a record, in the order of [`counts`]: the first [`OPTIONAL`] are optional.
const COUNTS: usize = 9;
const OPTIONAL: usize = 5;
/// Where [`counts`] puts the output tokens.
const OUTPUT_TOKENS: usize = 5;

/// A settled record (see the module).
#[derive(Clone, Debug)]
pub(crate) struct Compact {
    mold: Arc<RequestRecord>,
    /// The core's id (unique in the process: a count of its requests).
    id: u32,
    arrival: u64,
    /// The low 32 bits of each time's nanoseconds.
    low: [u32; TIMES],
    /// Their high 32 bits when one is not 0, and the SLO targets when there are some.
    wide: Option<Box<Wide>>,
    counts: [u32; COUNTS],
    /// Bit `i` set: time `i` is present; bit `TIMES + i`: optional count `i` is.
    present: u16,
    outcome: Outcome,
    finish_reason: Option<FinishReason>,
    panicked: bool,
}

/// What few compact records have, in one box: the high halves of times of 4.29 s or more,
/// the request's own SLO targets.
#[derive(Clone, Debug, Default, PartialEq)]
struct Wide {
    high: [u32; TIMES],
    slo_targets: Option<SloTargets>,
}

fn times(r: &RequestRecord) -> [Option<Duration>; TIMES] {
    [
        r.queue,
        r.prefill,
        r.ttft,
        r.first_output,
        r.second_token,
        r.decode,
        r.inference,
        Some(r.e2e),
    ]
}

fn counts(r: &RequestRecord) -> [Option<u64>; COUNTS] {
    [
        r.input_tokens,
        r.cached_input_tokens,
        r.external_input_tokens,
        r.max_tokens,
        r.choices.map(u64::from),
        Some(r.output_tokens),
        Some(r.reasoning_output_tokens),
        Some(r.items),
        Some(r.frames),
    ]
}

fn nanos(d: Duration) -> Option<u64> {
    u64::try_from(d.as_nanos()).ok()
}

impl From<RequestRecord> for KeptRecord {
    fn from(record: RequestRecord) -> Self {
        KeptRecord::Whole(Box::new(record))
    }
}

impl KeptRecord {
    /// The record, built again when compact.
    pub(crate) fn get(&self) -> Cow<'_, RequestRecord> {
        match self {
            KeptRecord::Whole(record) => Cow::Borrowed(record),
            KeptRecord::Compact(compact) => Cow::Owned(compact.record()),
        }
    }

    /// How the request ended, read without building the record again.
    pub(crate) fn outcome(&self) -> Outcome {
        match self {
            KeptRecord::Whole(record) => record.outcome,
            KeptRecord::Compact(compact) => compact.outcome,
        }
    }

    /// Its output tokens, read without building the record again.
    pub(crate) fn output_tokens(&self) -> u64 {
        match self {
            KeptRecord::Whole(record) => record.output_tokens,
            KeptRecord::Compact(compact) => u64::from(compact.counts[OUTPUT_TOKENS]),
        }
    }

    /// The whole record, before settling (`None` once compact).
    pub(crate) fn whole_mut(&mut self) -> Option<&mut RequestRecord> {
        match self {
            KeptRecord::Whole(record) => Some(record),
            KeptRecord::Compact(_) => None,
        }
    }

    /// Compact, unless a count or the id does not fit a `u32` or a time a `u64` of
    /// nanoseconds (kept whole then). The record's `item_times` are dropped: take them first.
    pub(crate) fn settle(self, molds: &mut Mold) -> Self {
        match self {
            KeptRecord::Whole(record) => match Compact::of(&record, molds) {
                Some(compact) => KeptRecord::Compact(compact),
                None => KeptRecord::Whole(record),
            },
            compact => compact,
        }
    }
}

impl Compact {
    fn of(r: &RequestRecord, molds: &mut Mold) -> Option<Self> {
        let mut present = 0u16;
        let mut low = [0u32; TIMES];
        let mut high = [0u32; TIMES];
        for (i, time) in times(r).into_iter().enumerate() {
            if let Some(time) = time {
                let ns = nanos(time)?;
                low[i] = ns as u32;
                high[i] = (ns >> 32) as u32;
                present |= 1 << i;
            }
        }
        let mut counts_ = [0u32; COUNTS];
        for (i, count) in counts(r).into_iter().enumerate() {
            if let Some(count) = count {
                counts_[i] = u32::try_from(count).ok()?;
                if i < OPTIONAL {
                    present |= 1 << (TIMES + i);
                }
            }
        }
        Some(Self {
            mold: molds.of(r),
            id: u32::try_from(r.id).ok()?,
            arrival: nanos(r.arrival)?,
            low,
            wide: (high != [0; TIMES] || r.slo_targets.is_some()).then(|| {
                Box::new(Wide {
                    high,
                    slo_targets: r.slo_targets,
                })
            }),
            counts: counts_,
            present,
            outcome: r.outcome,
            finish_reason: r.finish_reason,
            panicked: r.panicked,
        })
    }

    fn record(&self) -> RequestRecord {
        let time = |i: usize| {
            let high = self.wide.as_ref().map_or(0, |w| w.high[i]);
            (self.present & (1 << i) != 0)
                .then(|| Duration::from_nanos(u64::from(high) << 32 | u64::from(self.low[i])))
        };
        let count = |i: usize| {
            (i >= OPTIONAL || self.present & (1 << (TIMES + i)) != 0)
                .then(|| u64::from(self.counts[i]))
        };
        let mut r = (*self.mold).clone();
        r.id = u64::from(self.id);
        r.outcome = self.outcome;
        r.finish_reason = self.finish_reason;
        r.panicked = self.panicked;
        r.slo_targets = self.wide.as_ref().and_then(|w| w.slo_targets);
        r.arrival = Duration::from_nanos(self.arrival);
        r.queue = time(0);
        r.prefill = time(1);
        r.ttft = time(2);
        r.first_output = time(3);
        r.second_token = time(4);
        r.decode = time(5);
        r.inference = time(6);
        r.e2e = time(7).unwrap_or_default();
        r.input_tokens = count(0);
        r.cached_input_tokens = count(1);
        r.external_input_tokens = count(2);
        r.max_tokens = count(3);
        r.choices = count(4).map(|c| c as u32);
        r.output_tokens = count(OUTPUT_TOKENS).unwrap_or_default();
        r.reasoning_output_tokens = count(6).unwrap_or_default();
        r.items = count(7).unwrap_or_default();
        r.frames = count(8).unwrap_or_default();
        r.item_times = None;
        r
    }
}

mod bytes;
#[cfg(test)]
mod tests;

pub(crate) use bytes::Shared;
