//! Datasets and conversations over real HTTP on loopback, from fixtures written here: a
//! ShareGPT file sent as multi-turn conversations carries each turn's history to the server, a
//! Mooncake trace is replayed at its timestamps (and faster with `--replay-speed`), shared
//! prefixes arrive as the same text, and synthetic conversations wait their think time.
#[path = "bench_support/mod.rs"]
mod support;

use std::sync::{Arc, Mutex};

use serde_json::Value;
use support::{Reply, bench, serve, temp_dir, text};

/// A chat server that records every request body it is sent.
fn recording() -> (std::net::SocketAddr, Arc<Mutex<Vec<Value>>>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = bodies.clone();
    let addr = serve(move |request| {
        if let Ok(body) = serde_json::from_str::<Value>(&request.body) {
            seen.lock().unwrap().push(body);
        }
        Reply::stream(4)
    });
    (addr, bodies)
}

fn run(addr: std::net::SocketAddr, extra: &[&str]) -> (Vec<Value>, String) {
    let dir = temp_dir(&format!("datasets-{}", extra.join("").len()));
    let trace = dir.join("trace.jsonl");
    let url = format!("http://{addr}");
    let mut args = vec![
        "--url",
        url.as_str(),
        "--model",
        "m",
        "--no-progress",
        "--no-preflight",
        "--trace",
        trace.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let output = bench(&args);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{args:?}\n{stdout}\n{stderr}");
    let lines = std::fs::read_to_string(&trace)
        .expect("the trace")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    (lines, stdout)
}

const SHAREGPT: &str = r#"[
  {"id": "a", "conversations": [
    {"from": "human", "value": "what is the time to first token please"},
    {"from": "gpt", "value": "it is the time from the send to the first token"},
    {"from": "human", "value": "and the inter token latency then"},
    {"from": "gpt", "value": "the gap between two tokens of the stream"},
    {"from": "human", "value": "thank you that is all for now"},
    {"from": "gpt", "value": "you are welcome come back any time"}]}
]"#;

#[test]
fn sharegpt_conversations_carry_their_history_turn_by_turn() {
    let dir = temp_dir("sharegpt");
    let path = dir.join("sharegpt.json");
    std::fs::write(&path, SHAREGPT).unwrap();
    let (addr, bodies) = recording();
    let (lines, stdout) = run(
        addr,
        &[
            "--dataset",
            path.to_str().unwrap(),
            "--multi-turn",
            "-n",
            "1",
            "--think-time",
            "50ms",
        ],
    );
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 3, "three turns of one conversation");
    for (turn, body) in bodies.iter().enumerate() {
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 2 * turn + 1, "turn {turn}: {body}");
        assert_eq!(
            messages[0]["content"],
            "what is the time to first token please"
        );
        if turn > 0 {
            assert_eq!(messages[1]["role"], "assistant");
        }
        // The output length asked is the length of the dataset's reply.
        assert!(body["max_tokens"].as_u64().unwrap() >= 7, "{body}");
    }
    // Each turn waits for the answer before it, then its think time.
    let turns: Vec<u64> = lines
        .iter()
        .map(|l| l["turn"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(turns, [0, 1, 2]);
    for pair in lines.windows(2) {
        let gap = pair[1]["send_ns"].as_u64().unwrap() - pair[0]["end_ns"].as_u64().unwrap();
        assert!(gap >= 50_000_000, "think time {gap} ns < 50 ms");
    }
    assert!(stdout.contains("by turn"), "{stdout}");
}

#[test]
fn a_mooncake_trace_is_replayed_at_its_times() {
    let dir = temp_dir("mooncake");
    let path = dir.join("trace.jsonl");
    std::fs::write(
        &path,
        "{\"timestamp\": 0, \"input_length\": 40, \"output_length\": 3, \"hash_ids\": [7]}\n\
         {\"timestamp\": 300, \"input_length\": 30, \"output_length\": 3, \"hash_ids\": [7]}\n\
         {\"timestamp\": 600, \"input_length\": 20, \"output_length\": 3}\n",
    )
    .unwrap();
    for (speed, scale) in [("1", 1.0), ("3", 1.0 / 3.0)] {
        let (addr, bodies) = recording();
        let (lines, stdout) = run(
            addr,
            &["--dataset", path.to_str().unwrap(), "--replay-speed", speed],
        );
        assert!(stdout.contains("replayed"), "{stdout}");
        let sends: Vec<f64> = lines
            .iter()
            .map(|l| l["send_ns"].as_u64().unwrap() as f64 / 1e6)
            .collect();
        assert_eq!(sends.len(), 3, "one pass over the trace");
        for (i, want) in [0.0, 300.0, 600.0].iter().enumerate() {
            let got = sends[i] - sends[0];
            let want = want * scale;
            // Sent at their times, late by scheduling only. Measured from the first send,
            // which may itself leave late (its connection is the run's first; 6 ms seen on a
            // loaded machine), so a later request may seem early by as much.
            assert!(
                got >= want - 20.0 && got < want + 60.0,
                "speed {speed}: request {i} at {got:.1} ms, want {want:.1} ms"
            );
        }
        let bodies = bodies.lock().unwrap().clone();
        let prompt = |i: usize| -> String {
            bodies[i]["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        // Hash block 7 is the same text in the first two requests.
        let (a, b) = (prompt(0), prompt(1));
        let shared: Vec<&str> = b.split(' ').collect();
        assert!(a.starts_with(&shared[..30].join(" ")));
        let lengths: Vec<u64> = bodies
            .iter()
            .map(|b| b["max_tokens"].as_u64().unwrap())
            .collect();
        assert_eq!(lengths, [3, 3, 3]);
    }
}

#[test]
fn shared_prefixes_arrive_as_the_same_text() {
    let (addr, bodies) = recording();
    let (lines, _) = run(
        addr,
        &[
            "-n",
            "6",
            "--rate",
            "inf",
            "--shared-prefix",
            "2:50",
            "--input-tokens",
            "10",
            "--output-tokens",
            "2",
        ],
    );
    assert!(lines.iter().all(|l| l["input_tokens"] == 60));
    let mut prompts: Vec<String> = bodies
        .lock()
        .unwrap()
        .iter()
        .map(|b| b["messages"][0]["content"].as_str().unwrap().to_owned())
        .collect();
    prompts.sort();
    let heads: std::collections::BTreeSet<String> = prompts
        .iter()
        .map(|p| p.split(' ').take(50).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(heads.len(), 2, "two distinct prefixes");
    let whole: std::collections::BTreeSet<&String> = prompts.iter().collect();
    assert_eq!(whole.len(), 6, "suffixes of their own");
}

#[test]
fn bad_datasets_name_the_file_the_line_and_the_format() {
    let dir = temp_dir("bad-datasets");
    for (name, content, format, says) in [
        ("a.json", "[{\"conversations\": 5}]", "sharegpt", "ShareGPT"),
        (
            "b.jsonl",
            "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 1}\n",
            "auto",
            "line 2",
        ),
        ("c.jsonl", "{\"prompt\": 3}\n", "jsonl", "line 1"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        let output = bench(&[
            "--url",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--dataset",
            path.to_str().unwrap(),
            "--dataset-format",
            format,
        ]);
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains(name) && stderr.contains(says),
            "{name}: {stderr}"
        );
    }
}
