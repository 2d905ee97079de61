use std::time::Duration;

use tokenmeter::request::SloTargets;
use tokenmeter::{ErrorClass, FinishReason, Outcome, RequestRecord};

use super::*;
use crate::gaps::{GapSpan, Gaps};
use crate::measured::Usage;
use crate::rare::RareFields;
use crate::tests::manual_run::{MS, Run};

/// Packed and read back: the same request, field for field (`Debug` shows every field, so a
/// field added to [`Measured`] or the record is compared too).
fn round_trip(all: &[Measured]) -> Packed {
    let packed: Packed = all.iter().cloned().collect();
    assert_eq!(packed.len(), all.len());
    for (k, m) in all.iter().enumerate() {
        let back = packed.get(k).expect("reads back");
        assert_eq!(format!("{back:?}"), format!("{m:?}"), "request {k}");
        assert_eq!(
            back.record().map(|r| format!("{r:?}")),
            m.record().map(|r| format!("{r:?}"))
        );
    }
    packed
}

/// A settled success of `tokens` tokens from the manual run, with `set` applied.
fn settled(set: impl FnOnce(&mut Measured, &mut RequestRecord)) -> Measured {
    let mut run = Run::new();
    run.ok(3 * MS, 10 * MS, MS, 4);
    let mut m = run.measured.pop().unwrap();
    let mut record = m.record().unwrap().into_owned();
    set(&mut m, &mut record);
    m.record = Some(record.into());
    m.settle(&mut Gaps::new());
    m
}

#[test]
fn every_field_round_trips_at_its_edges() {
    let mut all = vec![Measured::default(), settled(|_, _| {})];
    for edge in [0, 1, 127, 128, u64::from(u32::MAX), u64::MAX - 2] {
        let d = Duration::from_nanos(edge);
        all.push(settled(|m, r| {
            m.id = edge;
            m.rate = Some(edge as f64 / 3.0);
            m.stage = edge as u32;
            m.turn = u32::MAX;
            m.slo_class = Some(edge as u16);
            m.output_counted = true;
            m.input_exact = true;
            m.input_tokens = edge;
            m.max_tokens = u64::MAX;
            m.usage = Some(Usage {
                prompt_tokens: Some(edge),
                completion_tokens: (edge > 1).then_some(u64::MAX),
                unusable: edge == 1,
                implausible_input: true,
            });
            m.status = Some(edge as u16);
            m.not_streamed = true;
            m.cancelled = edge == 0;
            m.gaps = GapSpan::new(edge, u32::MAX);
            m.max_gap = Some(Duration::from_nanos(edge));
            m.due = d.into();
            m.ready = Some(Duration::from_nanos(edge / 2));
            r.arrival = d;
            r.ttft = Some(Duration::from_nanos(u64::MAX - edge));
            r.first_output = None;
            r.e2e = d;
            r.cached_input_tokens = Some(edge.min(u64::from(u32::MAX)));
            r.outcome = Outcome::Error(ErrorClass::Overloaded);
            r.finish_reason = Some(FinishReason::Repetition);
            r.slo_targets = Some(SloTargets::new(Some(d), None));
            r.panicked = true;
        }));
    }
    // No due time, a ready time; nothing set in the record but its times.
    all.push(settled(|m, _| m.ready = Some(Duration::from_secs(5))));
    let packed = round_trip(&all);
    assert!(packed.side.whole.is_empty(), "every one of these is packed");
}

#[test]
fn the_rare_box_a_whole_record_and_a_lost_task_are_kept_on_the_side() {
    let rare = settled(|m, _| {
        m.rare = RareFields {
            server_ttft: Some(7 * MS),
            ..RareFields::default()
        }
        .into();
    });
    // A count beyond a u32: the record stays whole, so the request does.
    let whole = settled(|_, r| r.output_tokens = u64::from(u32::MAX) + 1);
    let lost = Measured {
        id: 9,
        cancelled: true,
        ..Measured::default()
    };
    let packed = round_trip(&[rare, whole, lost]);
    assert_eq!((packed.side.rare.len(), packed.side.whole.len()), (1, 1));
}

#[test]
fn a_typical_success_packs_in_at_most_64_bytes_of_its_224() {
    let m = settled(|m, _| {
        m.id = 150_000;
        m.input_tokens = 16;
        m.max_tokens = 32;
        m.status = Some(200);
        m.due = Some(Duration::from_secs(40));
        m.ready = Some(Duration::from_secs(40));
        m.usage = Some(Usage {
            prompt_tokens: Some(16),
            completion_tokens: Some(32),
            ..Usage::default()
        });
    });
    let mut bytes = Vec::new();
    encode::write(m, &mut bytes, &mut Side::default());
    assert!(bytes.len() <= 64, "{} bytes", bytes.len());
}

#[test]
fn sorting_orders_by_id_and_the_store_grows_by_blocks() {
    let n = 5_000u64;
    let mut packed: Packed = (0..n)
        .map(|k| Measured {
            id: (k * 7919) % n,
            input_tokens: k,
            ..Measured::default()
        })
        .collect();
    assert!(packed.blocks.len() > 1 || packed.blocks[0].len() < BLOCK);
    packed.sort_from(10);
    let ids: Vec<u64> = (10..n as usize)
        .map(|k| packed.get(k).unwrap().id)
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    // The first ten were left where they were.
    assert_eq!(packed.get(1).unwrap().id, 7919 % n);
    packed.sort_from(n as usize + 1);
}
