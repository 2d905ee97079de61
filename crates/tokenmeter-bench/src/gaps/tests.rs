use std::time::Duration;

use super::*;

fn ns(values: &[u64]) -> Vec<Duration> {
    values.iter().map(|&n| Duration::from_nanos(n)).collect()
}

#[test]
fn spans_give_back_their_gaps_across_blocks_and_long_gaps_whole() {
    let mut gaps = Gaps::new();
    let first: Vec<u64> = (0..BLOCK as u64 + 10).collect();
    let a = gaps.add(ns(&first));
    let long = [
        5,
        u64::from(u32::MAX),
        u64::from(u32::MAX) + 7,
        3,
        60_000_000_000,
    ];
    let b = gaps.add(ns(&long));
    let c = gaps.add(Vec::new());
    assert_eq!(gaps.raw(a).collect::<Vec<_>>(), first);
    assert_eq!(gaps.raw(b).collect::<Vec<_>>(), long);
    assert_eq!(gaps.of(b).nth(4), Some(Duration::from_secs(60)));
    assert_eq!((c.len(), gaps.raw(c).count()), (0, 0));
    assert_eq!(gaps.len(), first.len() as u64 + 5);
}

#[test]
fn a_gap_costs_four_bytes_and_growth_at_most_one_block() {
    let mut gaps = Gaps::new();
    for _ in 0..100 {
        gaps.add(ns(&[1_000_000; 10_000]));
    }
    let held = gaps.len() as usize * 4;
    let bytes = gaps.retained_bytes();
    assert!(bytes >= held, "{bytes} < {held}");
    assert!(bytes <= held + BLOCK * 4 + 1024, "{bytes} for {held}");
}
