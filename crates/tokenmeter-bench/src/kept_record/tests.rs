use std::time::Duration;

use tokenmeter::request::SloTargets;
use tokenmeter::{Clock, ErrorClass, FinishReason, Labels, ManualClock, Meter, Outcome};

use super::*;

/// A record the core made (with its chunk times), then every field set to `set`'s values.
fn record(set: impl FnOnce(&mut RequestRecord)) -> RequestRecord {
    let time = ManualClock::new();
    let records = crate::records::Records::default();
    let meter = Meter::builder()
        .clock(Clock::manual(&time))
        .sink(records.clone())
        .build();
    let mut request = meter.series(&Labels::client("chat")).start();
    let id = request.id();
    request.record_tokens_at(1, Duration::from_millis(3));
    request.record_tokens_at(2, Duration::from_millis(5));
    time.advance(Duration::from_millis(6));
    request.succeed();
    let mut record = records.take(id).expect("the record");
    record.item_times = None;
    set(&mut record);
    record
}

/// Settled and built again: the same record, field for field (their `Debug` text holds
/// every field, so a field the core adds is compared too), and the same outcome and output
/// tokens read from the compact form directly.
fn round_trip(record: RequestRecord, molds: &mut Mold) -> KeptRecord {
    let want = format!("{record:?}");
    let (outcome, output_tokens) = (record.outcome, record.output_tokens);
    let kept = KeptRecord::from(record).settle(molds);
    assert_eq!(format!("{:?}", kept.get()), want);
    // As bytes (a run's packed requests) and back: the same record, from any base time.
    if let KeptRecord::Compact(compact) = &kept {
        for base in [0, 12_345, u64::MAX] {
            let mut shared = Shared::default();
            let mut bytes = Vec::new();
            let bases = (base, base / 3);
            assert!(compact.write(&mut bytes, &mut shared, bases));
            let mut input = &bytes[..];
            let back = Compact::read(&mut input, &shared, bases).expect("reads back");
            assert!(input.is_empty(), "every byte read");
            assert_eq!(format!("{:?}", KeptRecord::Compact(back).get()), want);
        }
    }
    // Read without building the record: the same.
    assert_eq!(kept.outcome(), outcome);
    assert_eq!(kept.output_tokens(), output_tokens);
    kept
}

const EDGES: [Duration; 7] = [
    Duration::ZERO,
    Duration::from_nanos(1),
    Duration::from_nanos(u32::MAX as u64),
    Duration::from_nanos(u32::MAX as u64 + 1),
    Duration::from_nanos(1 << 40 | 12_345),
    Duration::from_secs(86_400 * 365),
    Duration::from_nanos(u64::MAX),
];

#[test]
fn every_time_round_trips_exactly_at_the_u32_boundary_and_beyond() {
    let mut molds = Mold::default();
    for edge in EDGES {
        let kept = round_trip(
            record(|r| {
                r.arrival = edge;
                r.queue = Some(edge);
                r.prefill = None;
                r.ttft = Some(edge);
                r.first_output = Some(edge);
                r.second_token = None;
                r.decode = Some(edge);
                r.inference = Some(edge);
                r.e2e = edge;
            }),
            &mut molds,
        );
        assert!(matches!(kept, KeptRecord::Compact(_)), "{edge:?}");
        let got = kept.get();
        assert_eq!(got.ttft.map(|t| t.as_secs_f64()), Some(edge.as_secs_f64()));
        assert_eq!(got.tpot_seconds(), kept.get().tpot_seconds());
    }
}

#[test]
fn absent_and_present_fields_round_trip() {
    let mut molds = Mold::default();
    let none = round_trip(
        record(|r| {
            r.outcome = Outcome::Error(ErrorClass::Timeout);
            r.finish_reason = None;
            r.input_tokens = None;
            r.cached_input_tokens = None;
            r.external_input_tokens = None;
            r.max_tokens = None;
            r.choices = None;
            r.slo_targets = None;
            r.ttft = None;
            r.decode = None;
        }),
        &mut molds,
    );
    assert!(matches!(none, KeptRecord::Compact(_)));
    let all = round_trip(
        record(|r| {
            r.outcome = Outcome::Cancelled;
            r.finish_reason = Some(FinishReason::Length);
            r.panicked = true;
            r.input_tokens = Some(0);
            r.cached_input_tokens = Some(u64::from(u32::MAX));
            r.external_input_tokens = Some(7);
            r.max_tokens = Some(1);
            r.choices = Some(u32::MAX);
            r.slo_targets = Some(SloTargets::default());
            r.output_tokens = u64::from(u32::MAX);
            r.reasoning_output_tokens = 3;
            r.items = 0;
            r.frames = 9;
        }),
        &mut molds,
    );
    assert!(matches!(all, KeptRecord::Compact(_)));
}

#[test]
fn a_record_that_does_not_fit_is_kept_whole() {
    let mut molds = Mold::default();
    let wide_count = round_trip(record(|r| r.output_tokens = 1 << 32), &mut molds);
    assert!(matches!(wide_count, KeptRecord::Whole(_)));
    let wide_time = round_trip(record(|r| r.e2e = Duration::MAX), &mut molds);
    assert!(matches!(wide_time, KeptRecord::Whole(_)));
    let wide_id = round_trip(record(|r| r.id = 1 << 32), &mut molds);
    assert!(matches!(wide_id, KeptRecord::Whole(_)));
    let top_id = round_trip(record(|r| r.id = u64::from(u32::MAX)), &mut molds);
    assert!(matches!(top_id, KeptRecord::Compact(_)));
}

#[test]
fn the_records_of_a_series_share_one_mold_and_another_series_gets_its_own() {
    let mut molds = Mold::default();
    let first = record(|_| {});
    let same = first.clone();
    let mold = molds.of(&first);
    assert!(Arc::ptr_eq(&mold, &molds.of(&same)));
    let other = record(|_| {});
    assert!(
        !Arc::ptr_eq(&mold, &molds.of(&other)),
        "another meter's series"
    );
}

#[test]
fn a_settled_record_is_smaller_than_half_the_core_s() {
    let compact = std::mem::size_of::<KeptRecord>();
    assert!(
        compact * 2 < std::mem::size_of::<RequestRecord>(),
        "{compact} bytes"
    );
}

#[test]
fn long_times_and_slo_targets_share_one_box_and_round_trip() {
    let mut molds = Mold::default();
    let long = Duration::from_nanos(1 << 40 | 7);
    for (e2e, targets) in [
        (long, None),
        (Duration::from_millis(6), Some(SloTargets::default())),
        (long, Some(SloTargets::default())),
    ] {
        let kept = round_trip(
            record(|r| {
                r.e2e = e2e;
                r.slo_targets = targets;
            }),
            &mut molds,
        );
        let KeptRecord::Compact(compact) = kept else {
            panic!("compact");
        };
        assert!(compact.wide.is_some(), "{e2e:?} {targets:?}");
    }
    let short = round_trip(record(|r| r.slo_targets = None), &mut molds);
    let KeptRecord::Compact(compact) = short else {
        panic!("compact");
    };
    assert!(
        compact.wide.is_none(),
        "no box for a short record without targets"
    );
}
