//! `tokenmeter bench --self-check-serve`, the paced server of `--self-check-ceiling` run alone
//! for clients in other processes (scripts/ceiling.py): with the real binary on 127.0.0.1, it
//! says where it listens, streams a chat completion of `max_completion_tokens` tokens (as
//! vLLM's client asks) with usage at the end, answers `/v1/models` and what it wrote on
//! `/tokenmeter/truth`, refuses a body or an answer too large with a clear error, and stops
//! on SIGTERM. `--self-check-ceiling --url` at a server that
//! is not one says so (exit 3); two self-check modes at once are refused (exit 2).
#![cfg(unix)]

#[path = "bench_support/mod.rs"]
mod support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

use support::{Reply, bench, serve, text, tokenmeter};

const DEADLINE: Duration = Duration::from_secs(30);

/// Sends `request` on a new connection and reads until `end` is at the end of what came.
fn exchange(addr: &str, request: &str, end: &[u8]) -> String {
    let mut socket = TcpStream::connect(addr).expect("the server accepts");
    socket.set_read_timeout(Some(DEADLINE)).expect("a deadline");
    socket
        .write_all(request.as_bytes())
        .expect("the request is sent");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(end) {
        let n = socket.read(&mut buf).expect("the answer comes in time");
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(got).expect("text")
}

fn get(addr: &str, path: &str) -> serde_json::Value {
    let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n");
    let answer = exchange(addr, &request, b"}");
    let (_, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    serde_json::from_str(body).expect("a JSON body")
}

/// The server's process, killed if the test ends before it stops it (a failed assertion).
struct Serving(Option<Child>);

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn the_paced_server_streams_tells_what_it_wrote_and_stops_on_sigterm() {
    let mut serving = Serving(Some(
        tokenmeter()
            .args(["bench", "--self-check-serve", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the tokenmeter binary starts"),
    ));
    let child = serving.0.as_mut().expect("the child");
    let stdout = child.stdout.take().expect("its stdout");
    let (said, heard) = channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = said.send(line);
    });
    let line = heard
        .recv_timeout(DEADLINE)
        .expect("it says where it listens");
    // "self-check server on http://127.0.0.1:PORT: POST …"
    let addr = line
        .split_once("http://")
        .and_then(|(_, rest)| rest.split_once(": "))
        .map(|(addr, _)| addr.to_owned())
        .expect("an address in what it says");
    assert!(addr.starts_with("127.0.0.1:"), "{line}");

    assert_eq!(get(&addr, "/tokenmeter/truth")["requests"], 0);
    let body = r#"{"model":"paced","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":3,"stream":true,"stream_options":{"include_usage":true}}"#;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let answer = exchange(&addr, &request, b"0\r\n\r\n");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(answer.matches(r#""content":" tok""#).count(), 3, "{answer}");
    assert_eq!(
        answer.matches(r#""finish_reason":"length""#).count(),
        1,
        "{answer}"
    );
    assert!(answer.contains(r#""completion_tokens":3"#), "{answer}");
    assert!(answer.contains("data: [DONE]"), "{answer}");

    assert_eq!(get(&addr, "/v1/models")["data"][0]["id"], "paced");
    let truth = get(&addr, "/tokenmeter/truth");
    assert_eq!(
        (truth["requests"].as_u64(), truth["tokens"].as_u64()),
        (Some(1), Some(3))
    );
    let ttft = truth["ttft_p50_s"].as_f64().expect("a TTFT");
    assert!(
        (0.020..1.0).contains(&ttft),
        "the first token 20 ms after the request: {ttft}"
    );
    let itl = truth["itl_p50_s"].as_f64().expect("an ITL");
    // A token every 2 ms after the first, as the runtime's 1 ms timer allows.
    assert!((0.001..1.0).contains(&itl), "a token every 2 ms: {itl}");
    assert_eq!(
        get(&addr, "/tokenmeter/truth")["requests"],
        0,
        "asked again: afresh"
    );

    // Bad requests get a clear answer, not a crash: the server still answers after them.
    let huge = r#"{"max_tokens":1000000000000,"stream":true}"#;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{huge}",
        huge.len()
    );
    let answer = exchange(&addr, &request, b"}}");
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(
        answer.contains("max_tokens (or max_completion_tokens) of at most 100000"),
        "{answer}"
    );
    let request =
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 99999999999\r\n\r\n";
    let answer = exchange(&addr, request, b"}}");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert_eq!(get(&addr, "/tokenmeter/truth")["requests"], 0);

    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let mut child = serving.0.take().expect("the child");
    let (done, exited) = channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait());
    });
    let status = exited.recv_timeout(DEADLINE).expect("it stops in time");
    assert_eq!(status.expect("a status").code(), Some(0));
}

#[test]
fn a_ceiling_against_another_server_says_what_it_needs_and_two_modes_are_refused() {
    let other = serve(|_| Reply::json(404, r#"{"error":"no"}"#));
    let url = format!("http://{other}");
    let output = bench(&["--self-check-ceiling", "--url", &url]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("--self-check-serve"), "{stderr}");
    assert!(stderr.contains("404"), "{stderr}");

    let output = bench(&["--self-check-ceiling", "--self-check-serve", "127.0.0.1:0"]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("give one of them"), "{stderr}");
}
