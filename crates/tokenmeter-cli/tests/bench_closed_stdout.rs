//! Output that survives its reader: `tokenmeter bench … | head -1` and `tokenmeter bench merge
//! … | head -1`. A stdout closed early does not stop the run: no panic, the `--json`, `--html`
//! and `--trace` files are written in full, and the exit code is the run's own (0 here: no
//! objective was given). Also: `bench merge` reports the shards' `--seed`.
//!
//! Every run is against the embedded simulator (no `--url`): loopback only.

#[path = "bench_support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use support::{temp_dir, tokenmeter};

/// How long one run may take before the test gives up on it.
const DEADLINE: Duration = Duration::from_secs(120);

/// A small run of the embedded simulator with `--seed 42`.
const RUN: [&str; 11] = [
    "-n",
    "12",
    "--rate",
    "100",
    "--seed",
    "42",
    "--input-tokens",
    "16",
    "--output-tokens",
    "24",
    "--no-progress",
];

/// How stdout's reader goes away.
#[derive(Clone, Copy, Debug)]
enum Reader {
    /// Reads the first line, then closes the pipe.
    FirstLine,
    /// Closes the pipe before the command writes anything.
    None,
}

/// Spawns `tokenmeter ARGS` with stdout a pipe that `reader` closes early; waits (at most
/// [`DEADLINE`]) and returns the exit status, the first line read, and stderr.
fn run_closed(args: &[&str], reader: Reader) -> (ExitStatus, String, String) {
    let mut child: Child = tokenmeter()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tokenmeter binary starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut first = String::new();
    match reader {
        Reader::FirstLine => {
            let mut lines = BufReader::new(stdout);
            lines.read_line(&mut first).expect("stdout's first line");
            drop(lines);
        }
        Reader::None => drop(stdout),
    }
    let (done, waited) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        let _ = done.send(());
        status
    });
    if waited.recv_timeout(DEADLINE).is_err() {
        panic!("tokenmeter {args:?} did not end within {DEADLINE:?} of its stdout closing");
    }
    let status = waiter.join().expect("the waiter").expect("the exit status");
    let stderr = errors.join().expect("the stderr reader");
    (status, first, stderr)
}

/// Asserts the run ended with the run's own code (0) and without a panic.
fn ended_quietly(what: &str, status: ExitStatus, stderr: &str) {
    assert!(!stderr.contains("panicked"), "{what} panicked:\n{stderr}");
    assert_eq!(
        status.code(),
        Some(0),
        "{what}: exit code; stderr:\n{stderr}"
    );
    assert!(
        !stderr.contains("Broken pipe") && !stderr.contains("error:"),
        "{what}: a closed stdout is not an error:\n{stderr}"
    );
}

/// The `--json` file, parsed.
fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("the --json file is written");
    serde_json::from_str(&text).expect("the --json file is complete JSON")
}

/// Asserts the `--html` file is a whole document.
fn whole_html(path: &Path) {
    let html = std::fs::read_to_string(path).expect("the --html file is written");
    assert!(
        html.starts_with("<!DOCTYPE html>"),
        "{}",
        &html[..80.min(html.len())]
    );
    assert!(
        html.trim_end().ends_with("</html>"),
        "the --html file is cut short"
    );
}

/// The trace's lines, each parsed: every one complete.
fn trace_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the --trace file is written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a complete trace line"))
        .collect()
}

/// `bench` with [`RUN`] writing `--json`, `--html` and `--trace` to `files`.
fn bench_args(files: &[PathBuf; 3]) -> Vec<String> {
    let mut args = vec!["bench".to_owned()];
    args.extend(RUN.iter().map(|s| (*s).to_owned()));
    for (flag, path) in ["--json", "--html", "--trace"].iter().zip(files) {
        args.push((*flag).to_owned());
        args.push(path.display().to_string());
    }
    args
}

#[test]
fn a_bench_whose_stdout_closes_writes_its_files_and_exits_0() {
    let dir = temp_dir("closed-stdout-bench");
    for reader in [Reader::None, Reader::FirstLine] {
        let files = [
            dir.join(format!("{reader:?}.json")),
            dir.join(format!("{reader:?}.html")),
            dir.join(format!("{reader:?}.jsonl")),
        ];
        let args = bench_args(&files);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, first, stderr) = run_closed(&args, reader);
        ended_quietly(&format!("bench, reader {reader:?}"), status, &stderr);
        if let Reader::FirstLine = reader {
            assert!(first.starts_with("tokenmeter bench"), "first line: {first}");
        }
        let report = json(&files[0]);
        assert_eq!(report["summary"]["requests"], 12, "{reader:?}");
        assert_eq!(report["run"]["seed"], 42);
        whole_html(&files[1]);
        assert_eq!(trace_lines(&files[2]).len(), 12, "{reader:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `--trace -` the trace streams to stdout as requests end; more of it than a pipe holds
/// (64 KiB) makes the bench wait on its reader, which reads one line and goes: the bench's
/// next write fails mid-run, and the run still ends and writes its files.
#[test]
fn a_trace_streamed_to_a_reader_that_goes_mid_run_leaves_the_files_whole() {
    let dir = temp_dir("closed-stdout-trace");
    let json_path = dir.join("run.json");
    let html_path = dir.join("run.html");
    let (json_arg, html_arg) = (
        json_path.display().to_string(),
        html_path.display().to_string(),
    );
    let args = [
        "bench",
        "-n",
        "120",
        "--rate",
        "400",
        "--seed",
        "42",
        "--input-tokens",
        "8",
        "--output-tokens",
        "128",
        "--no-progress",
        "--trace",
        "-",
        "--json",
        &json_arg,
        "--html",
        &html_arg,
    ];
    let (status, first, stderr) = run_closed(&args, Reader::FirstLine);
    ended_quietly("bench --trace -", status, &stderr);
    let line: Value = serde_json::from_str(&first).expect("the first trace line");
    assert_eq!(line["seed"], 42);
    let report = json(&json_path);
    assert_eq!(report["summary"]["requests"], 120);
    whole_html(&html_path);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two shards of a `--seed 42` run, then their merge with stdout closed early: the merged
/// files are whole, and they report seed 42.
#[test]
fn a_merge_whose_stdout_closes_writes_its_files_and_reports_the_seed() {
    let dir = temp_dir("closed-stdout-merge");
    let shards: Vec<PathBuf> = (0..2)
        .map(|i| dir.join(format!("shard{i}.jsonl")))
        .collect();
    for (i, trace) in shards.iter().enumerate() {
        let shard = format!("{i}/2");
        let trace = trace.display().to_string();
        let mut args = vec!["bench"];
        args.extend(RUN);
        args.extend(["--shard", &shard, "--trace", &trace]);
        let output = tokenmeter().args(&args).output().expect("a shard runs");
        assert!(
            output.status.success(),
            "shard {shard}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let lines = trace_lines(Path::new(&trace));
        assert!(
            lines.iter().all(|l| l["seed"] == 42),
            "every line carries the seed"
        );
    }
    for reader in [Reader::None, Reader::FirstLine] {
        let json_path = dir.join(format!("merged-{reader:?}.json"));
        let html_path = dir.join(format!("merged-{reader:?}.html"));
        let (json_arg, html_arg) = (
            json_path.display().to_string(),
            html_path.display().to_string(),
        );
        let mut args = vec!["bench", "merge", "--json", &json_arg, "--html", &html_arg];
        let traces: Vec<String> = shards.iter().map(|p| p.display().to_string()).collect();
        args.extend(traces.iter().map(String::as_str));
        let (status, first, stderr) = run_closed(&args, reader);
        ended_quietly(&format!("bench merge, reader {reader:?}"), status, &stderr);
        if let Reader::FirstLine = reader {
            assert!(first.starts_with("tokenmeter bench"), "first line: {first}");
        }
        let merged = json(&json_path);
        assert_eq!(merged["run"]["seed"], 42, "the shards' seed, not 0");
        assert_eq!(merged["merged"]["seeds"], serde_json::json!([42, 42]));
        assert_eq!(merged["summary"]["requests"], 12);
        whole_html(&html_path);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
