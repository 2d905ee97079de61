//! Output counts with `--tokenizer` when the server sends no `usage`: a server that puts three
//! words in each chunk and never reports usage is counted one token per chunk without a
//! tokenizer (an estimate, warned about), and exactly with one (the streamed text counted).
#[path = "bench_support/mod.rs"]
mod support;

use serde_json::Value;
use support::{Reply, bench, serve, temp_dir, text};

/// Four chunks of three one-token words each, no usage.
fn packed() -> Reply {
    let mut body = String::from(
        "data: {\"id\":\"p\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
    );
    for (i, words) in [
        "the model reads",
        " the prompt and",
        " writes the answer",
        " token by token",
    ]
    .iter()
    .enumerate()
    {
        let finish = if i == 3 { "\"length\"" } else { "null" };
        body.push_str(&format!(
            "data: {{\"id\":\"p\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{words}\"}},\"finish_reason\":{finish}}}]}}\n\n"
        ));
    }
    body.push_str("data: [DONE]\n\n");
    Reply::new(200, "text/event-stream", body)
}

fn run(extra: &[&str]) -> (Value, String) {
    let addr = serve(|_| packed());
    let dir = temp_dir(&format!("tok-out-{}", extra.len()));
    let json = dir.join("run.json");
    let url = format!("http://{addr}");
    let mut args = vec![
        "--url",
        url.as_str(),
        "--model",
        "m",
        "-n",
        "3",
        "--rate",
        "inf",
        "--output-tokens",
        "12",
        "--no-progress",
        "--no-preflight",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let output = bench(&args);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let run = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (run, stderr)
}

#[test]
fn the_streamed_text_is_counted_with_the_tokenizer() {
    let dir = temp_dir("tok-out-file");
    let tokenizer = tokenmeter_tests::tokenizer::small_bpe(&dir);
    let (plain, warned) = run(&[]);
    assert_eq!(
        plain["summary"]["total_output_tokens"], 12,
        "4 chunks × 3 runs"
    );
    assert_eq!(plain["counts"]["output_from_chunks"], 3);
    assert!(warned.contains("an estimate"), "{warned}");

    let (counted, warned) = run(&["--tokenizer", tokenizer.to_str().unwrap()]);
    assert_eq!(
        counted["summary"]["total_output_tokens"], 36,
        "12 one-token words × 3 runs: {}",
        counted["counts"]
    );
    assert_eq!(counted["counts"]["output_from_tokenizer"], 3);
    assert_eq!(counted["counts"]["output_from_chunks"], 0);
    assert!(
        !warned.contains("token-bearing chunks, an estimate"),
        "{warned}"
    );
}
