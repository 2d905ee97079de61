//! Nothing a peer sends voids good data, and nothing the bench has is thrown away (issue 26,
//! items 11 and 12), with the real binary against a scripted loopback server:
//!
//! - valid SSE that is not a chunk (an `event: ping` with `data: pong`, an empty `data:`
//!   event) is skipped and counted, a chunk that gives a field twice is read with the last
//!   value, and a `usage` count of `1e400` is unusable: each answer stays a success with
//!   every token, and the run says what it skipped;
//! - outputs that name the same file (also through `..` or a linked directory), that are a
//!   symbolic link, or that are a file the command reads (`--slo-spec`, a trace `bench merge`
//!   merges) are refused before the first request, with the usage exit code 2.

#[path = "bench_support/mod.rs"]
mod support;

use std::path::Path;
use std::sync::Mutex;
use std::sync::mpsc::channel;

use support::{Reply, bench, serve, temp_dir, text};

const ROLE: &str =
    "data: {\"id\":\"r\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
const DONE: &str = "data: [DONE]\n\n";

fn token(text: &str, finish: &str) -> String {
    format!(
        "data: {{\"id\":\"r\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":{finish}}}]}}\n\n"
    )
}

/// A stream of two tokens with `odd` between them, and a usage chunk of `usage`.
fn stream(odd: &str, usage: &str) -> String {
    let usage = format!("data: {{\"id\":\"r\",\"choices\":[],\"usage\":{usage}}}\n\n");
    [
        ROLE,
        &token("a", "null"),
        odd,
        &token("b", "\"stop\""),
        &usage,
        DONE,
    ]
    .concat()
}

/// Runs one request against a server answering `body`: the exit code, stderr, the trace line
/// and the `--json` summary.
fn run_one(
    body: String,
    dir: &Path,
) -> (Option<i32>, String, serde_json::Value, serde_json::Value) {
    let addr = serve(move |_| Reply::new(200, "text/event-stream", body.clone()));
    let url = format!("http://{addr}/v1");
    let trace = dir.join("trace.jsonl");
    let json = dir.join("run.json");
    let _ = std::fs::remove_file(&trace);
    let _ = std::fs::remove_file(&json);
    let output = bench(&[
        "--url",
        &url,
        "--model",
        "m",
        "-n",
        "1",
        "--output-tokens",
        "2",
        "--no-progress",
        "--no-preflight",
        "--trace",
        &trace.display().to_string(),
        "--json",
        &json.display().to_string(),
    ]);
    let (_, stderr) = text(&output);
    let line = std::fs::read_to_string(&trace).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let line = serde_json::from_str(line.lines().next().expect("one line")).expect("JSON");
    let report = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let report: serde_json::Value = serde_json::from_str(&report).expect("JSON");
    (
        output.status.code(),
        stderr,
        line,
        report["summary"].clone(),
    )
}

#[test]
fn odd_but_valid_server_text_keeps_a_complete_answer() {
    let dir = temp_dir("keeps-odd-text");
    let good_usage = r#"{"prompt_tokens":3,"completion_tokens":2}"#;
    let twice = "data: {\"id\":\"r\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\",\"content\":\"y\"}}]}\n\n";
    for (name, odd, usage, oddity, warning) in [
        (
            "ping",
            "event: ping\ndata: pong\n\n",
            good_usage,
            "other_events",
            "not completion chunks",
        ),
        (
            "empty data",
            "data:\n\n",
            good_usage,
            "empty_events",
            "not completion chunks",
        ),
        (
            "duplicate key",
            twice,
            good_usage,
            "duplicate_key_chunks",
            "gave a field twice",
        ),
        (
            "1e400",
            "",
            r#"{"prompt_tokens":3,"completion_tokens":1e400}"#,
            "",
            "not a non-negative integer",
        ),
    ] {
        let (code, stderr, line, summary) = run_one(stream(odd, usage), &dir);
        assert_eq!(code, Some(0), "{name}: {stderr}\n{line}");
        assert_eq!(line["outcome"], "success", "{name}: {line}");
        assert_eq!(line["error"], serde_json::Value::Null, "{name}: {line}");
        let tokens: u64 = line["chunks"]
            .as_array()
            .expect("chunks")
            .iter()
            .map(|c| c[1].as_u64().unwrap())
            .sum();
        let expected = if name == "duplicate key" { 3 } else { 2 };
        assert_eq!(tokens, expected, "{name}: every token kept: {line}");
        if oddity.is_empty() {
            assert_eq!(line["usage"]["unusable"], true, "{name}: {line}");
            assert_eq!(line["output_tokens"], 2, "{name}: counted from the stream");
        } else {
            assert_eq!(line["oddities"][oddity], 1, "{name}: counted: {line}");
            assert_eq!(
                summary["oddities"][oddity], 1,
                "{name}: in --json: {summary}"
            );
        }
        assert!(stderr.contains(warning), "{name}: warned: {stderr}");
    }
}

#[test]
fn outputs_naming_one_file_or_a_symbolic_link_are_refused_before_the_run() {
    let dir = temp_dir("keeps-outputs");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let (arrived, arrivals) = channel();
    let arrived = Mutex::new(arrived);
    let addr = serve(move |_| {
        let _ = arrived.lock().unwrap().send(());
        Reply::stream(2)
    });
    let url = format!("http://{addr}/v1");
    let path = |name: &str| dir.join(name).display().to_string();
    let precious = dir.join("precious.txt");
    std::fs::write(&precious, "keep me").unwrap();
    std::os::unix::fs::symlink(&precious, dir.join("link.json")).unwrap();
    std::os::unix::fs::symlink(&dir, dir.join("here")).unwrap();
    for (flags, expected) in [
        (
            vec!["--json", &path("run.json"), "--trace", &path("run.json")],
            "name the same file",
        ),
        (
            vec![
                "--json",
                &path("sub/../run.json"),
                "--html",
                &path("run.json"),
            ],
            "name the same file",
        ),
        (
            vec![
                "--trace",
                &path("here/run.json"),
                "--json",
                &path("run.json"),
            ],
            "name the same file",
        ),
        (vec!["--json", &path("link.json")], "symbolic link"),
        (
            vec![
                "--slo-spec",
                &path("precious.txt"),
                "--json",
                &path("precious.txt"),
            ],
            "reads",
        ),
    ] {
        let base = [
            "--url",
            url.as_str(),
            "--model",
            "m",
            "-n",
            "1",
            "--no-progress",
        ];
        let output = bench(&[&base[..], &flags].concat());
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
        assert!(
            arrivals.try_recv().is_err(),
            "{flags:?}: no request was sent"
        );
    }
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    assert!(!dir.join("run.json").exists());
    // `bench merge` refuses to write its report over one of the traces it merges, by any name.
    let shard = dir.join("s0.jsonl");
    std::fs::write(&shard, "a shard's trace").unwrap();
    for output in [
        path("s0.jsonl"),
        path("sub/../s0.jsonl"),
        path("here/s0.jsonl"),
    ] {
        let merge = bench(&["merge", &path("s0.jsonl"), "--json", &output]);
        let (_, stderr) = text(&merge);
        assert_eq!(merge.status.code(), Some(2), "{output}: {stderr}");
        assert!(
            stderr.contains("--json") && stderr.contains("reads"),
            "{output}: {stderr}"
        );
    }
    assert_eq!(std::fs::read_to_string(&shard).unwrap(), "a shard's trace");
}
