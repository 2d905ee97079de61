//! One settled [`Measured`] as bytes, and back (see [`super`]).
//!
//! The bytes: a number of flags (what is present), the request's index in the run, then each
//! field that is present as a variable-length number ([`crate::varint`]): the times that
//! follow the due time as differences from it, the record as [`Compact::write`] writes it. What
//! few requests have (the [`Rare`] box, a record kept whole) goes into the store's side lists,
//! and the bytes hold its index there.
//!
//! A time is kept in whole nanoseconds, as the bench clock gives it; one beyond 2^64 − 1 ns
//! (584 years) is kept as that.

use std::time::Duration;

use crate::gaps::GapSpan;
use crate::kept_record::{Compact, KeptRecord, Shared};
use crate::measured::{Measured, Usage};
use crate::rare::Rare;
use crate::varint::{get, get_signed, put, put_signed};

/// What the bytes of a run's requests refer to.
#[derive(Debug, Default)]
pub(super) struct Side {
    pub(super) shared: Shared,
    /// The [`Rare`] boxes of the requests that have one.
    pub(super) rare: Vec<Rare>,
    /// Requests kept whole: a record that is not compact (a count beyond a `u32`), an outcome
    /// this version cannot write.
    pub(super) whole: Vec<Measured>,
}

// What most requests have comes first: their flags fit the first byte.
const RECORD: u64 = 1;
const USAGE: u64 = 1 << 1;
const STATUS: u64 = 1 << 2;
const DUE: u64 = 1 << 3;
const READY: u64 = 1 << 4;
const INPUT_EXACT: u64 = 1 << 5;
const MAX_GAP: u64 = 1 << 6;
const WHOLE: u64 = 1 << 7;
const OUTPUT_COUNTED: u64 = 1 << 15;
const RATE: u64 = 1 << 8;
const STAGE: u64 = 1 << 9;
const TURN: u64 = 1 << 10;
const SLO_CLASS: u64 = 1 << 11;
const RARE: u64 = 1 << 12;
const CANCELLED: u64 = 1 << 13;
const NOT_STREAMED: u64 = 1 << 14;

/// A status is kept as its difference from 200 (one byte for most).
const OK: i64 = 200;

/// The flags of a usage.
const PROMPT: u64 = 1;
const COMPLETION: u64 = 1 << 1;
const UNUSABLE: u64 = 1 << 2;
const IMPLAUSIBLE: u64 = 1 << 3;

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn flag(on: bool, flag: u64) -> u64 {
    if on { flag } else { 0 }
}

/// Appends `m` (settled) to `out`, moving what it cannot write into `side`.
pub(super) fn write(mut m: Measured, out: &mut Vec<u8>, side: &mut Side) {
    // Every field by name: one added to `Measured` does not compile here until it is written
    // (and read back in `read`).
    let Measured {
        id: _,
        rate: _,
        stage: _,
        turn: _,
        slo_class: _,
        output_counted: _,
        record: _,
        input_tokens: _,
        input_exact: _,
        max_tokens: _,
        usage: _,
        status: _,
        rare: _,
        cancelled: _,
        gaps: _,
        max_gap: _,
        not_streamed: _,
        due: _,
        ready: _,
    } = &m;
    let start = out.len();
    let due = m.due();
    let base = due.map_or(0, nanos);
    let compact = match &m.record {
        Some(KeptRecord::Compact(compact)) => Some(compact),
        Some(KeptRecord::Whole(_)) => None,
        None => None,
    };
    let usage = m.usage();
    let flags = flag(compact.is_some(), RECORD)
        | flag(m.rate().is_some(), RATE)
        | flag(m.stage != 0, STAGE)
        | flag(m.turn != 0, TURN)
        | flag(m.slo_class.is_some(), SLO_CLASS)
        | flag(m.output_counted, OUTPUT_COUNTED)
        | flag(m.input_exact, INPUT_EXACT)
        | flag(usage.is_some(), USAGE)
        | flag(m.status.is_some(), STATUS)
        | flag(m.rare.is_set(), RARE)
        | flag(m.cancelled, CANCELLED)
        | flag(m.not_streamed, NOT_STREAMED)
        | flag(due.is_some(), DUE)
        | flag(m.ready().is_some(), READY)
        | flag(m.max_gap.is_some(), MAX_GAP);
    let whole = |m: Measured, out: &mut Vec<u8>, side: &mut Side| {
        out.truncate(start);
        put(out, WHOLE);
        put(out, m.id);
        put(out, side.whole.len() as u64);
        side.whole.push(m);
    };
    if m.record.is_some() && compact.is_none() {
        return whole(m, out, side);
    }
    put(out, flags);
    put(out, m.id);
    if let Some(rate) = m.rate() {
        out.extend_from_slice(&rate.to_bits().to_le_bytes());
    }
    if m.stage != 0 {
        put(out, u64::from(m.stage));
    }
    if m.turn != 0 {
        put(out, u64::from(m.turn));
    }
    if let Some(class) = m.slo_class {
        put(out, u64::from(class));
    }
    put(out, m.input_tokens);
    put(out, m.max_tokens);
    if let Some(u) = usage {
        put(
            out,
            flag(u.prompt_tokens.is_some(), PROMPT)
                | flag(u.completion_tokens.is_some(), COMPLETION)
                | flag(u.unusable, UNUSABLE)
                | flag(u.implausible_input, IMPLAUSIBLE),
        );
        u.prompt_tokens.into_iter().for_each(|n| put(out, n));
        u.completion_tokens.into_iter().for_each(|n| put(out, n));
    }
    if let Some(status) = m.status {
        put_signed(out, i64::from(status) - OK);
    }
    put(out, m.gaps.start());
    put(out, m.gaps.len() as u64);
    if let Some(longest) = m.max_gap {
        put(out, nanos(longest));
    }
    if due.is_some() {
        put(out, base);
    }
    if let Some(ready) = m.ready() {
        put_signed(out, nanos(ready).wrapping_sub(base) as i64);
    }
    if let Some(compact) = compact
        && !compact.write(out, &mut side.shared, (base, m.id))
    {
        return whole(m, out, side);
    }
    if m.rare.is_set() {
        put(out, side.rare.len() as u64);
        side.rare.push(std::mem::take(&mut m.rare));
    }
}

/// The index in the run of the request whose bytes start `input`.
pub(super) fn id(mut input: &[u8]) -> Option<u64> {
    get(&mut input)?;
    get(&mut input)
}

/// Reads the request [`write`] appended at the front of `input`.
pub(super) fn read(mut input: &[u8], side: &Side) -> Option<Measured> {
    let input = &mut input;
    let flags = get(input)?;
    let id = get(input)?;
    if flags == WHOLE {
        return side.whole.get(usize::try_from(get(input)?).ok()?).cloned();
    }
    let has = |f: u64| flags & f != 0;
    let mut m = Measured {
        id,
        output_counted: has(OUTPUT_COUNTED),
        input_exact: has(INPUT_EXACT),
        cancelled: has(CANCELLED),
        not_streamed: has(NOT_STREAMED),
        ..Measured::default()
    };
    if has(RATE) {
        let (bits, rest) = input.split_first_chunk::<8>()?;
        m.rate = Some(f64::from_bits(u64::from_le_bytes(*bits)));
        *input = rest;
    }
    if has(STAGE) {
        m.stage = u32::try_from(get(input)?).ok()?;
    }
    if has(TURN) {
        m.turn = u32::try_from(get(input)?).ok()?;
    }
    if has(SLO_CLASS) {
        m.slo_class = Some(u16::try_from(get(input)?).ok()?);
    }
    m.input_tokens = get(input)?;
    m.max_tokens = get(input)?;
    if has(USAGE) {
        let usage = get(input)?;
        let on = |f: u64| usage & f != 0;
        let prompt_tokens = if on(PROMPT) { Some(get(input)?) } else { None };
        let completion_tokens = if on(COMPLETION) {
            Some(get(input)?)
        } else {
            None
        };
        m.usage = Some(Usage {
            prompt_tokens,
            completion_tokens,
            unusable: on(UNUSABLE),
            implausible_input: on(IMPLAUSIBLE),
        });
    }
    if has(STATUS) {
        m.status = Some(u16::try_from(get_signed(input)?.checked_add(OK)?).ok()?);
    }
    let start = get(input)?;
    m.gaps = GapSpan::new(start, u32::try_from(get(input)?).ok()?);
    if has(MAX_GAP) {
        m.max_gap = Some(Duration::from_nanos(get(input)?));
    }
    let base = if has(DUE) { get(input)? } else { 0 };
    if has(DUE) {
        m.due = Some(Duration::from_nanos(base));
    }
    if has(READY) {
        let ready = base.wrapping_add(get_signed(input)? as u64);
        m.ready = Some(Duration::from_nanos(ready));
    }
    if has(RECORD) {
        let bases = (base, m.id);
        m.record = Some(KeptRecord::Compact(Compact::read(
            input,
            &side.shared,
            bases,
        )?));
    }
    if has(RARE) {
        m.rare = side.rare.get(usize::try_from(get(input)?).ok()?)?.clone();
    }
    Some(m)
}
