//! Load from many machines, with local processes over loopback: three `tokenmeter bench --shard i/3
//! --start-at T` processes against one simulated server (in process) send, together, exactly the
//! workload of one unsharded process (the same request ids, prompt lengths and `max_tokens`), and
//! `tokenmeter bench merge` of their traces gives the summary of the union of their requests — the
//! same as a summary of one file holding all their lines put on one time line by the test.
#[path = "serve_support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use support::Hosted;
use tokenmeter_server::Config;
use tokenmeter_tests::TempDir;

const REQUESTS: &str = "24";

fn bench(server: &Hosted, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("JOB_COMPLETION_INDEX")
        .args([
            "bench",
            "--url",
            &server.url(),
            "--model",
            "sim-llama-3-8b",
            "--no-progress",
        ])
        .args([
            "-n",
            REQUESTS,
            "--rate",
            "40",
            "--seed",
            "7",
            "--no-preflight",
        ])
        .args(["--input-tokens", "8..32", "--output-tokens", "4..16"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tokenmeter bench starts")
}

fn merge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .args(["bench", "merge"])
        .args(args)
        .output()
        .expect("tokenmeter bench merge runs")
}

fn ok(output: Output, what: &str) -> Output {
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{what} failed:\n{out}\n{err}");
    output
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// (id, input tokens, max_tokens) of every request of a trace.
fn workload(lines: &[Value]) -> BTreeSet<(u64, u64, u64)> {
    let n = |v: &Value| v.as_u64().unwrap();
    lines
        .iter()
        .map(|t| (n(&t["id"]), n(&t["input_tokens"]), n(&t["max_tokens"])))
        .collect()
}

fn close(a: &Value, b: &Value, path: &str) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            assert_eq!(a.len(), b.len(), "{path}");
            for (k, v) in a {
                close(v, &b[k], &format!("{path}.{k}"));
            }
        }
        (Value::Number(x), Value::Number(y)) if x.is_u64() && y.is_u64() => {
            assert_eq!(x, y, "{path}");
        }
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
                "{path}: {x} vs {y}"
            );
        }
        _ => assert_eq!(a, b, "{path}"),
    }
}

#[test]
fn three_shards_merge_into_the_summary_of_their_union() {
    let step = Duration::from_millis(2);
    let server = Hosted::start(Config::default().decode_table(vec![(1, step), (64, step)]));
    let dir = TempDir::new("bench-merge");
    let path = |name: &str| dir.0.join(name);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let start_at = format!("{:.3}", now.as_secs_f64() + 3.0);
    let shards: Vec<Child> = (0..3)
        .map(|i| {
            let trace = path(&format!("s{i}.jsonl"));
            let shard = format!("{i}/3");
            bench(
                &server,
                &[
                    "--shard",
                    &shard,
                    "--start-at",
                    &start_at,
                    "--trace",
                    trace.to_str().unwrap(),
                ],
            )
        })
        .collect();
    let whole = bench(&server, &["--trace", path("whole.jsonl").to_str().unwrap()]);
    for (i, child) in shards.into_iter().enumerate() {
        ok(child.wait_with_output().unwrap(), &format!("shard {i}"));
    }
    ok(whole.wait_with_output().unwrap(), "the unsharded run");

    // The shards sent the unsharded run's workload between them, each request once.
    let traces: Vec<Vec<Value>> = (0..3)
        .map(|i| lines(&path(&format!("s{i}.jsonl"))))
        .collect();
    let sizes: Vec<usize> = traces.iter().map(Vec::len).collect();
    assert_eq!(sizes, [8, 8, 8]);
    let union: Vec<Value> = traces.iter().flatten().cloned().collect();
    let whole = lines(&path("whole.jsonl"));
    assert_eq!(workload(&union), workload(&whole));
    // Each started at --start-at, to the millisecond the wall clock allows.
    let start_ns = (start_at.parse::<f64>().unwrap() * 1e9) as u64;
    for (i, t) in traces.iter().enumerate() {
        assert_eq!(t[0]["shard"], format!("{i}/3"));
        let first_send = t
            .iter()
            .map(|l| l["send_ns"].as_u64().unwrap())
            .min()
            .unwrap();
        let sent_at = t[0]["run_start_unix_ns"].as_u64().unwrap() + first_send;
        assert!(
            sent_at + 1_000_000 >= start_ns,
            "shard {i} sent before --start-at"
        );
    }

    // The test puts every line on one time line itself: one file, as one process's.
    let base = traces
        .iter()
        .map(|t| t[0]["run_start_unix_ns"].as_u64().unwrap())
        .min()
        .unwrap();
    let mut one = String::new();
    for mut line in union.clone() {
        let shift = line["run_start_unix_ns"].as_u64().unwrap() - base;
        let add = |v: &mut Value| *v = (v.as_u64().unwrap() + shift).into();
        add(&mut line["due_ns"]);
        add(&mut line["ready_ns"]);
        add(&mut line["send_ns"]);
        add(&mut line["end_ns"]);
        if !line["first_token_ns"].is_null() {
            add(&mut line["first_token_ns"]);
        }
        for chunk in line["chunks"].as_array_mut().unwrap() {
            add(&mut chunk[0]);
        }
        line["run_start_unix_ns"] = base.into();
        line["shard"] = Value::Null;
        let object = line.as_object_mut().unwrap();
        object.remove("shard");
        one += &format!("{line}\n");
    }
    std::fs::write(path("union.jsonl"), one).unwrap();

    let slo = "ttft=50ms,tpot=5ms";
    let s: Vec<String> = (0..3)
        .map(|i| path(&format!("s{i}.jsonl")).display().to_string())
        .collect();
    let merged = path("merged.json");
    let html = path("merged.html");
    ok(
        merge(&[
            &s[0],
            &s[1],
            &s[2],
            "--slo",
            slo,
            "--json",
            merged.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ]),
        "merge",
    );
    let single = path("single.json");
    ok(
        merge(&[
            path("union.jsonl").to_str().unwrap(),
            "--slo",
            slo,
            "--json",
            single.to_str().unwrap(),
        ]),
        "merge of one file",
    );
    let read =
        |p: &Path| -> Value { serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    let (merged, single) = (read(&merged), read(&single));
    close(&merged["summary"], &single["summary"], "summary");
    close(&merged["counts"], &single["counts"], "counts");
    close(&merged["load"], &single["load"], "load");
    let summary = &merged["summary"];
    assert_eq!(summary["requests"], 24);
    let successes: Vec<&Value> = union.iter().filter(|t| t["outcome"] == "success").collect();
    assert_eq!(summary["successful"], successes.len());
    let output_tokens: u64 = successes
        .iter()
        .map(|t| t["output_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(summary["total_output_tokens"], output_tokens);
    assert_eq!(
        merged["merged"]["shards"],
        serde_json::json!(["0/3", "1/3", "2/3"])
    );
    assert!(std::fs::read_to_string(&html).unwrap().contains("</html>"));

    // The same shard twice is refused, naming the files.
    let twice = merge(&[&s[0], &s[1], &s[0]]);
    assert_eq!(twice.status.code(), Some(2));
    let err = String::from_utf8_lossy(&twice.stderr);
    assert!(
        err.contains("given twice") && err.contains("s0.jsonl"),
        "{err}"
    );
}
