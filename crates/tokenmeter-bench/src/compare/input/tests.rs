//! Reading sides: a run's `--json` `samples` agree with its summary, a trace gives the same
//! figures with its gaps, `--repeat`'s runs each become a run, and bad files are named.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokenmeter::ErrorClass;
use tokenmeter::report::Summary;

use super::read;
use crate::compare::command::{CompareArgs, run as compare_files};
use crate::compare::side::Side;
use crate::exit_code;
use crate::output::samples_json;
use crate::slo::Slo;
use crate::summary::summarize;
use crate::tests::manual_run::{MS, Run};
use crate::trace::{Trace, ns};

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tokenmeter-cmpin-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// 41 requests: varied TTFTs, gaps and lengths, one-token answers (no TPOT), errors.
fn fixture() -> Run {
    let mut run = Run::new();
    for i in 0..41_u32 {
        let send = MS * (i * 37);
        let ttft = MS * (20 + (i * 7919) % 113);
        let gap = Duration::from_micros(u64::from(3_000 + (i * 104_729) % 9_001));
        match i % 10 {
            3 => run.error(send, send + ttft, ErrorClass::ServerError),
            7 => run.ok(send, ttft, gap, 1),
            _ => run.ok(send, ttft, gap, 2 + i % 13),
        }
    }
    run
}

fn slo() -> Slo {
    "ttft=90ms,tpot=8ms".parse().unwrap()
}

/// A single run's `--json` as the bench writes it (the blocks `compare` reads).
fn run_json(run: &Run, workload: &str) -> Value {
    let summary = summarize(&run.measured, &run.gaps, &slo());
    json!({
        "run": {"model": "m", "workload": workload, "load": "rate 40/s, 41 requests",
                "url": "http://127.0.0.1:1/v1/chat/completions", "seed": 0},
        "summary": summary,
        "samples": samples_json::of(&run.measured, &slo()),
    })
}

fn write(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path
}

fn values(
    side: &Side,
    f: impl Fn(&crate::compare::side::RequestFigures) -> Option<f64>,
) -> Vec<f64> {
    side.runs[0].requests.iter().filter_map(f).collect()
}

fn same(a: &Summary, b: &Summary, what: &str) {
    for (x, y) in [
        (a.p50, b.p50),
        (a.p90, b.p90),
        (a.p95, b.p95),
        (a.p99, b.p99),
        (a.mean, b.mean),
    ] {
        assert!(
            (x - y).abs() <= 1e-12 * y.abs().max(1.0),
            "{what}: {x} vs {y}"
        );
    }
    assert_eq!(a.count, b.count, "{what}");
}

#[test]
fn the_samples_of_a_json_agree_with_its_summary() {
    let run = fixture();
    let dir = dir("samples");
    let path = write(&dir, "run.json", &run_json(&run, "w"));
    let side = read(&path, &Slo::default()).unwrap();
    let s = summarize(&run.measured, &run.gaps, &slo());
    assert!(!side.itl_known);
    let requests = &side.runs[0].requests;
    assert_eq!(requests.len() as u64, s.requests);
    assert_eq!(
        requests.iter().filter(|r| r.ok).count() as u64,
        s.successful
    );
    assert_eq!(
        requests.iter().filter(|r| r.good).count() as u64,
        s.good_requests
    );
    assert!(
        s.good_requests > 0 && s.good_requests < s.successful,
        "the SLO splits the run"
    );
    let ok_tokens: u64 = requests
        .iter()
        .filter(|r| r.ok)
        .map(|r| r.output_tokens)
        .sum();
    assert_eq!(ok_tokens, s.total_output_tokens);
    let duration = side.runs[0].duration_s;
    assert!(
        (duration - s.duration_s).abs() <= 1e-12 * s.duration_s,
        "{duration}"
    );
    same(&Summary::of(values(&side, |r| r.ttft)), &s.ttft, "TTFT");
    same(&Summary::of(values(&side, |r| r.tpot)), &s.tpot, "TPOT");
    same(&Summary::of(values(&side, |r| r.e2e)), &s.e2e, "E2E");
    assert_eq!(side.shape.facets[0], ("model".to_owned(), "m".to_owned()));
}

#[test]
fn a_trace_gives_the_json_s_figures_and_its_gaps() {
    let run = fixture();
    let dir = dir("trace");
    let mut text = String::new();
    for m in &run.measured {
        let mut line = Trace::of(m);
        let arrival = m.record().unwrap().arrival;
        line.chunks = m
            .chunk_offsets(&run.gaps)
            .into_iter()
            .map(|at| (ns(arrival + at), 1))
            .collect();
        text += &serde_json::to_string(&line).unwrap();
        text.push('\n');
    }
    let trace = dir.join("run.jsonl");
    std::fs::write(&trace, text).unwrap();
    let from_trace = read(&trace, &slo()).unwrap();
    let from_json = read(&write(&dir, "run.json", &run_json(&run, "w")), &slo()).unwrap();
    assert!(from_trace.itl_known && from_trace.shape.facets.is_empty());
    // serde_json reads a float back to within an ulp: the same duration to 1e-12.
    let (a, b) = (from_trace.runs[0].duration_s, from_json.runs[0].duration_s);
    assert!((a - b).abs() <= 1e-12 * a, "{a} vs {b}");
    let (t, j) = (&from_trace.runs[0].requests, &from_json.runs[0].requests);
    assert_eq!(t.len(), j.len());
    let mut gaps = 0;
    for (i, (a, b)) in t.iter().zip(j).enumerate() {
        assert_eq!(
            (a.ok, a.good, a.output_tokens),
            (b.ok, b.good, b.output_tokens),
            "{i}"
        );
        for (x, y) in [(a.ttft, b.ttft), (a.tpot, b.tpot), (a.e2e, b.e2e)] {
            assert_eq!(x.is_some(), y.is_some(), "{i}");
            assert!(
                (x.unwrap_or(0.0) - y.unwrap_or(0.0)).abs() < 1e-12,
                "{i}: {x:?} {y:?}"
            );
        }
        let expected: Vec<f64> = run
            .gaps
            .of(run.measured[i].gaps)
            .map(|g| g.as_secs_f64())
            .collect();
        assert_eq!(a.itl, if a.ok { expected } else { Vec::new() }, "{i}");
        gaps += a.itl.len();
    }
    assert_eq!(
        gaps as u64,
        summarize(&run.measured, &run.gaps, &slo()).itl.count
    );
}

#[test]
fn each_of_a_repeated_json_s_runs_is_a_run() {
    let (a, b) = (fixture(), fixture());
    let dir = dir("repeat");
    let value = json!({"repeat": {"n": 2}, "runs": [run_json(&a, "w"), run_json(&b, "w")]});
    let side = read(&write(&dir, "repeat.json", &value), &slo()).unwrap();
    assert_eq!(side.runs.len(), 2);
    assert_eq!(side.runs[1].requests.len(), b.measured.len());
    assert_eq!(side.shape.facets.len(), 4);
}

#[test]
fn bad_files_are_named_with_how_to_fix_them() {
    let dir = dir("bad");
    let error = |path: &Path| format!("{:#}", read(path, &slo()).unwrap_err());
    let mut old = run_json(&fixture(), "w");
    old.as_object_mut().unwrap().remove("samples");
    let e = error(&write(&dir, "old.json", &old));
    assert!(
        e.contains("old.json")
            && e.contains("re-run with this version's --json, or give its --trace"),
        "{e}"
    );
    let e = error(&write(&dir, "old-repeat.json", &json!({"runs": [old]})));
    assert!(
        e.contains("runs[0]") && e.contains("no per-request `samples`"),
        "{e}"
    );
    let mut short = run_json(&fixture(), "w");
    short["samples"]["ttft_ms"] = json!([1.0]);
    let e = error(&write(&dir, "short.json", &short));
    assert!(
        e.contains("short.json") && e.contains("`ttft_ms` has 1 values but `ok` has 41"),
        "{e}"
    );
    let mut negative = run_json(&fixture(), "w");
    negative["samples"]["e2e_ms"][0] = json!(-1.0);
    let e = error(&write(&dir, "negative.json", &negative));
    assert!(e.contains("`e2e_ms[0]` is -1.0"), "{e}");
    let e = error(&write(&dir, "empty-runs.json", &json!({"runs": []})));
    assert!(e.contains("`runs` array is empty"), "{e}");
    let e = error(&write(&dir, "other.json", &json!({"hello": 1})));
    assert!(e.contains("not a tokenmeter bench --json"), "{e}");
    let garbage = dir.join("garbage.txt");
    std::fs::write(&garbage, "hello\nworld\n").unwrap();
    assert!(error(&garbage).contains("neither a tokenmeter bench --json nor a --trace"));
    assert!(error(&dir.join("missing.json")).contains("missing.json"));
}

#[test]
fn runs_of_different_shapes_are_refused_unless_allowed() {
    let run = fixture();
    let dir = dir("shapes");
    let base = write(
        &dir,
        "base.json",
        &run_json(&run, "input 100 tok, output 10 tok"),
    );
    let new = write(
        &dir,
        "new.json",
        &run_json(&run, "input 100 tok, output 50 tok"),
    );
    let mut args = CompareArgs::new(base, new);
    let refused = compare_files(&args).unwrap_err();
    let text = format!("{refused:#}");
    assert_eq!(exit_code(&refused), 2, "{text}");
    assert!(
        text.contains("workload: input 100 tok, output 10 tok vs input 100 tok, output 50 tok")
            && text.contains("--allow-different-shapes"),
        "{text}"
    );
    assert!(
        !text.contains("model:"),
        "the same model is no difference: {text}"
    );
    args.settings.allow_different_shapes = true;
    if let Err(e) = compare_files(&args) {
        assert!(!format!("{e:#}").contains("different shapes"), "{e:#}");
    }
}
