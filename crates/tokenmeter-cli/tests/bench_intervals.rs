//! `--confidence` on the command line: a level outside 0–100 is refused before anything is
//! sent, naming the flag with an example; a level given reaches the table and `--json` of a
//! run and of `bench merge`, over real HTTP on loopback.
#[path = "bench_support/mod.rs"]
mod support;

use support::{Reply, bench, serve, temp_dir, text, tokenmeter};

#[test]
fn a_level_outside_0_to_100_is_refused_naming_the_flag() {
    for (args, flag) in [
        (vec!["bench", "--confidence", "100"], "--confidence"),
        (vec!["bench", "--confidence", "0.95"], "write 95"),
        (
            vec!["bench", "merge", "x.jsonl", "--confidence=-1"],
            "--confidence",
        ),
    ] {
        let output = tokenmeter().args(&args).output().unwrap();
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(flag) && stderr.contains("e.g. 95"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn the_level_reaches_the_table_and_the_json_of_a_run_and_a_merge() {
    let addr = serve(|_| Reply::stream(6));
    let dir = temp_dir("bench-intervals");
    let (json, trace, merged) = (
        dir.join("run.json"),
        dir.join("run.jsonl"),
        dir.join("merged.json"),
    );
    let output = bench(&[
        "--url",
        &format!("http://{addr}/v1"),
        "--model",
        "m",
        "--requests",
        "40",
        "--rate",
        "inf",
        "--confidence",
        "99.5%",
        "--json",
        json.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("±: 99.5% confidence interval"), "{stdout}");
    assert!(
        stdout.contains("too few samples for a 99.5% interval"),
        "{stdout}"
    );
    let read = |p: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let run = read(&json);
    assert_eq!(run["summary"]["ttft"]["ci"]["level"], 0.995);
    assert_eq!(run["summary"]["ci"]["level"], 0.995);
    // 40 requests: p90 needs 51 at 99.5%.
    assert_eq!(run["summary"]["ttft"]["too_few"]["p90"]["have"], 40);
    let output = tokenmeter()
        .args([
            "bench",
            "merge",
            trace.to_str().unwrap(),
            "--confidence",
            "90",
            "--json",
            merged.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("±: 90% confidence interval"), "{stdout}");
    let merged = read(&merged);
    assert_eq!(merged["summary"]["ttft"]["ci"]["level"], 0.9);
    assert!(merged["summary"]["ttft"]["ci"]["p50"].is_array());
}
