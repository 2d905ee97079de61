//! Merging the traces of three shards gives exactly the summary of the run they split.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokenmeter::{Clock, ErrorClass, Labels, ManualClock, Meter, Outcome};

use super::{load, read, replay};
use crate::gaps::Gaps;
use crate::measured::{Measured, Usage};
use crate::records::Records;
use crate::slo::Slo;
use crate::summary::summarize;
use crate::trace::Trace;

/// Nine requests on one time line, measured by the core: staggered sends, varied token
/// counts and gaps, one error after a token, one timeout before any.
fn run() -> Vec<Measured> {
    let time = ManualClock::new();
    let records = Records::default();
    let meter = Meter::builder()
        .clock(Clock::manual(&time))
        .sink(records.clone())
        .build();
    let series = meter.series(&Labels::client("chat"));
    let mut out = Vec::new();
    for id in 0..9_u64 {
        let send = Duration::from_nanos(1_000_000_007 * id + 13);
        let mut request = series.start_at(send);
        request.set_input_tokens(100 + id);
        let mut at = send + Duration::from_nanos(20_000_003 + id * 7_777);
        let tokens = if id == 7 { 0 } else { 3 + id as u32 };
        for k in 0..tokens {
            request.record_tokens_at(1 + k % 2, at);
            at += Duration::from_nanos(5_000_011 * u64::from(1 + k % 3));
        }
        time.set(at + Duration::from_nanos(999));
        match id {
            4 => request.fail(ErrorClass::ServerError),
            7 => request.fail(ErrorClass::Timeout),
            _ => request.succeed(),
        }
        out.push(Measured {
            id,
            record: records
                .end(request)
                .map(crate::kept_record::KeptRecord::from),
            input_tokens: 100 + id,
            max_tokens: 64,
            usage: Some(Usage {
                prompt_tokens: Some(100 + id),
                completion_tokens: None,
                unusable: false,
                implausible_input: false,
            }),
            status: Some(if id == 4 { 500 } else { 200 }),
            ..Measured::default()
        });
    }
    out
}

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tokenmeter-merge-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes the requests of shard `i` of 3 as that process would have: its offsets since its
/// own start, `i` × 0.25 s after the first shard's, `--seed 42`.
fn write_shard(dir: &Path, all: &[Measured], i: u64) -> PathBuf {
    write_seeded_shard(dir, all, i, Some(42))
}

/// [`write_shard`] with the run's `seed` (none: a trace of an older version).
fn write_seeded_shard(dir: &Path, all: &[Measured], i: u64, seed: Option<u64>) -> PathBuf {
    let base = 1_767_225_600_000_000_000_u64;
    let late = 250_000_000 * i;
    let mut text = String::new();
    for m in all.iter().filter(|m| m.id % 3 == i) {
        let mut t = Trace::of(m);
        t.send_ns -= late;
        t.end_ns -= late;
        t.first_token_ns = t.first_token_ns.map(|f| f - late);
        for chunk in &mut t.chunks {
            chunk.0 -= late;
        }
        t.run_start_unix_ns = Some(base + late);
        t.shard = Some(format!("{i}/3"));
        t.seed = seed;
        text += &serde_json::to_string(&t).unwrap();
        text.push('\n');
    }
    let path = dir.join(format!("shard{i}.jsonl"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn three_shards_merge_into_the_summary_of_their_union() {
    let all = run();
    let dir = dir("union");
    let paths: Vec<PathBuf> = (0..3).map(|i| write_shard(&dir, &all, i)).collect();
    let merged = load(&paths).unwrap();
    assert!(merged.warnings.is_empty(), "{:?}", merged.warnings);
    assert_eq!(merged.measured.len(), all.len());
    assert_eq!(merged.seed, Some(42), "the shards' seed, not 0");
    assert_eq!(super::info(&merged).seed, 42);
    // Each line replayed (before its chunk times are settled) is the request's line.
    let files: Vec<_> = paths.iter().map(|p| read::read(p).unwrap()).collect();
    let replay = replay::Replay::default();
    let lines = read::align(&files).unwrap();
    for (line, b) in lines.iter().zip(&all) {
        let a = replay.measured(line).unwrap();
        assert_eq!(
            Trace::of(&a),
            Trace::of(b),
            "request {} replayed exactly",
            b.id
        );
    }
    // Loaded and settled: the same chunk times, from the gaps.
    for (a, b) in merged.measured.iter().zip(&all) {
        let (mut a_line, mut b_line) = (Trace::of(&a), Trace::of(b));
        (a_line.chunks, b_line.chunks) = (Vec::new(), Vec::new());
        assert_eq!(a_line, b_line, "request {}", b.id);
        assert_eq!(a.chunk_offsets(&merged.gaps), b.chunk_offsets(&Gaps::new()));
    }
    let mut gaps = Gaps::new();
    let settled: Vec<Measured> = (all.iter().cloned())
        .map(|mut m| {
            m.settle(&mut gaps);
            m
        })
        .collect();
    for slo in ["ttft=1s,tpot=50ms", "ttft=20ms,tpot=8ms,e2e=60ms", "none"] {
        let slo: Slo = slo.parse().unwrap();
        assert_eq!(
            summarize(&merged.measured, &merged.gaps, &slo),
            summarize(&settled, &gaps, &slo),
            "the same summary, bit for bit"
        );
    }
    let s = summarize(&merged.measured, &merged.gaps, &Slo::default());
    assert_eq!((s.requests, s.successful), (9, 7));
    assert_eq!(
        merged.measured.get(4).unwrap().outcome(),
        Outcome::Error(ErrorClass::ServerError)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_shard_given_twice_is_refused_and_a_missing_one_warned() {
    let all = run();
    let dir = dir("twice");
    let a = write_shard(&dir, &all, 0);
    let b = write_shard(&dir, &all, 1);
    let twice = load(&[a.clone(), b.clone(), a.clone()])
        .unwrap_err()
        .to_string();
    assert!(
        twice.contains("request 0 is in") && twice.contains("given twice"),
        "{twice}"
    );
    let part = load(&[a, b]).unwrap();
    assert_eq!(
        part.warnings,
        ["shard 2/3 missing: the summary is of part of the run"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_line_is_named_by_file_and_line() {
    let dir = dir("bad");
    let path = dir.join("t.jsonl");
    let good = serde_json::to_string(&Trace::of(&run()[0])).unwrap();
    std::fs::write(&path, format!("{good}\n{{\"id\": \"x\"}}\n")).unwrap();
    let error = format!("{:#}", load(std::slice::from_ref(&path)).unwrap_err());
    assert!(error.contains(&format!("{}:2:", path.display())), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shards_of_different_seeds_are_named_and_the_first_one_shown() {
    let all = run();
    let dir = dir("seeds");
    let a = write_seeded_shard(&dir, &all, 0, Some(42));
    let b = write_seeded_shard(&dir, &all, 1, Some(7));
    let c = write_seeded_shard(&dir, &all, 2, Some(42));
    let merged = load(&[a.clone(), b.clone(), c]).unwrap();
    assert_eq!(merged.seed, Some(42));
    assert_eq!(merged.seeds, [Some(42), Some(7), Some(42)]);
    let warning = merged
        .warnings
        .iter()
        .find(|w| w.contains("different seeds"))
        .expect("a warning about the seeds");
    assert!(
        warning.contains(&format!("{} seed 7", b.display())),
        "{warning}"
    );
    let old: Vec<PathBuf> = (0..3)
        .map(|i| write_seeded_shard(&dir, &all, i, None))
        .collect();
    let merged = load(&old).unwrap();
    assert_eq!(merged.seed, None);
    assert_eq!(
        merged.warnings,
        [
            "the traces carry no seed (written by an older tokenmeter): the seed shown is 0, not \
          the runs'"
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
