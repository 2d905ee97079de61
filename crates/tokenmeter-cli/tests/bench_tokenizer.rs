//! Exact lengths with `--tokenizer`: a byte-level BPE tokenizer trained in the test (nothing is
//! fetched), loaded by the simulated server in process (`Config::tokenizer`, what `serve
//! --tokenizer` sets) to count prompts and by `tokenmeter bench --tokenizer` to make them. Every
//! request's `usage.prompt_tokens` from the server equals the length the bench asked for; without
//! the tokenizer the bench says its lengths are estimates.
#[path = "serve_support/mod.rs"]
mod support;

use std::process::{Command, Stdio};

use serde_json::Value;
use support::Hosted;
use tokenmeter_server::Config;
use tokenmeter_tests::TempDir;

fn bench(server: &Hosted, extra: &[&str]) -> (Vec<Value>, String) {
    let mut args = vec![
        "--model",
        "sim-llama-3-8b",
        "--endpoint",
        "/v1/completions",
        "-n",
        "40",
    ];
    args.extend_from_slice(&[
        "--rate",
        "inf",
        "--input-tokens",
        "1..600",
        "--output-tokens",
        "2",
    ]);
    args.extend_from_slice(extra);
    let run = support::bench(&server.url(), &args);
    (run.trace, run.stdout)
}

#[test]
fn the_servers_prompt_tokens_equal_the_lengths_asked() {
    let dir = TempDir::new("bench-tokenizer");
    let tokenizer = tokenmeter_tests::tokenizer::small_bpe(&dir.0);
    let tokenizer = tokenizer.to_str().expect("a UTF-8 path");
    let server = Hosted::start(Config::default().tokenizer(tokenizer));
    let (lines, stdout) = bench(&server, &["--tokenizer", tokenizer]);
    assert_eq!(lines.len(), 40);
    let mut lengths = std::collections::BTreeSet::new();
    for line in &lines {
        let asked = line["input_tokens"].as_u64().expect("input_tokens");
        let counted = line["usage"]["prompt_tokens"]
            .as_u64()
            .unwrap_or_else(|| panic!("usage.prompt_tokens in {line}"));
        assert_eq!(counted, asked, "{line}");
        lengths.insert(asked);
    }
    assert!(lengths.len() > 20, "lengths vary: {lengths:?}");
    assert!(stdout.contains("exact, tokenizer"), "{stdout}");
    assert!(!stdout.contains("are estimates"), "{stdout}");

    // Without it, the server's count (a token per 4 characters here) differs from the bench's
    // (a token per word), and the bench says its lengths are estimates.
    let (lines, stdout) = bench(&server, &[]);
    let differ = lines
        .iter()
        .filter(|l| l["usage"]["prompt_tokens"] != l["input_tokens"])
        .count();
    assert!(differ > 20, "{differ} of 40 differ without a tokenizer");
    assert!(
        stdout.contains("40 lengths asked are estimates") && stdout.contains("--tokenizer"),
        "{stdout}"
    );
}

#[test]
fn a_file_that_is_not_a_tokenizer_is_named() {
    let dir = TempDir::new("bench-tokenizer-bad");
    let path = dir.0.join("tokenizer.json");
    std::fs::write(&path, "{}").expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .args(["bench", "--tokenizer"])
        .arg(&path)
        .stdin(Stdio::null())
        .output()
        .expect("tokenmeter bench runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot load tokenizer") && stderr.contains("tokenizer.json"),
        "{stderr}"
    );
}
