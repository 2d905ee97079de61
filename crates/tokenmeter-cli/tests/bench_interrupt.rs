//! Interrupt-safe runs, with the real binary and real signals against a slow loopback server:
//! the first Ctrl-C (SIGINT) stops new requests and lets those in flight finish, a second
//! signal (here SIGTERM) cancels them; either way the summary, `--json`, `--trace` and
//! `--html` of what completed are written, marked as interrupted, and the exit code is 130.
//! Output paths are checked before the first request, and `-` is stdout. An interrupt during
//! model discovery or the test request stops there, with 130 and no hang.
#![cfg(unix)]

#[path = "bench_support/mod.rs"]
mod support;

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Output, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use support::{Reply, bench, serve, temp_dir, text, tokenmeter};

const DEADLINE: Duration = Duration::from_secs(30);

/// A server that answers each completion after `delay`, and a channel that hears of each
/// request as it arrives.
fn slow_server(delay: Duration) -> (SocketAddr, Receiver<()>) {
    let (arrived, arrivals) = channel();
    let arrived = Mutex::new(arrived);
    let addr = serve(move |_| {
        let _ = arrived.lock().unwrap().send(());
        std::thread::sleep(delay);
        Reply::stream(3)
    });
    (addr, arrivals)
}

fn start(addr: SocketAddr, dir: &std::path::Path) -> Child {
    let url = format!("http://{addr}/v1");
    let path = |name: &str| dir.join(name).display().to_string();
    tokenmeter()
        .args([
            "bench", "--url", &url, "--model", "m", "-n", "400", "--rate", "40",
        ])
        .args(["--no-progress", "--no-preflight"])
        .args(["--json", &path("run.json"), "--trace", &path("trace.jsonl")])
        .args(["--html", &path("report.html")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tokenmeter binary starts")
}

fn signal(child: &Child, name: &str) {
    let status = std::process::Command::new("kill")
        .args([format!("-{name}"), child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// Waits for `n` arrivals at the server, each within the deadline.
fn await_arrivals(arrivals: &Receiver<()>, n: usize) {
    for _ in 0..n {
        arrivals.recv_timeout(DEADLINE).expect("a request arrives");
    }
}

/// The child's output, within the deadline (its stderr already taken when `stderr` is given).
fn finish(child: Child) -> Output {
    let (done, result) = channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    result
        .recv_timeout(DEADLINE)
        .expect("the bench exits in time")
        .expect("its output")
}

fn read_json(dir: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("run.json")).expect("--json was written");
    serde_json::from_str(&text).expect("valid JSON")
}

#[test]
fn a_first_interrupt_drains_the_requests_in_flight_and_writes_every_output() {
    let dir = temp_dir("interrupt-drain");
    let (addr, arrivals) = slow_server(Duration::from_millis(300));
    let child = start(addr, &dir);
    await_arrivals(&arrivals, 4);
    signal(&child, "INT");
    let output = finish(child);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stderr.contains("no new requests"), "{stderr}");
    assert!(
        stdout.contains("interrupted:") && stdout.contains("of 400 planned"),
        "{stdout}"
    );

    let json = read_json(&dir);
    assert_eq!(json["interrupted"], true);
    assert_eq!(json["planned_requests"], 400);
    let sent = json["summary"]["requests"].as_u64().unwrap();
    assert!((4..400).contains(&sent), "{sent} sent");
    // Drained: every request sent finished, and succeeded.
    assert_eq!(json["summary"]["outcomes"]["success"].as_u64(), Some(sent));
    let trace = std::fs::read_to_string(dir.join("trace.jsonl")).expect("--trace written");
    assert_eq!(trace.lines().count() as u64, sent);
    let html = std::fs::read_to_string(dir.join("report.html")).expect("--html written");
    assert!(html.contains("<strong>Interrupted</strong>"));
}

#[test]
fn a_second_signal_cancels_the_requests_in_flight() {
    let dir = temp_dir("interrupt-cancel");
    // Answers far later than the test lasts: only cancelling ends the run.
    let (addr, arrivals) = slow_server(Duration::from_secs(120));
    let mut child = start(addr, &dir);
    await_arrivals(&arrivals, 3);
    let stderr = child.stderr.take().expect("piped");
    let (line_sender, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = line_sender.send(line);
        }
    });
    signal(&child, "INT");
    loop {
        let line = lines
            .recv_timeout(DEADLINE)
            .expect("the bench says it drains");
        if line.contains("no new requests") {
            break;
        }
    }
    signal(&child, "TERM");
    let output = finish(child);
    assert_eq!(output.status.code(), Some(130));
    let json = read_json(&dir);
    assert_eq!(json["interrupted"], true);
    let sent = json["summary"]["requests"].as_u64().unwrap();
    assert!(sent >= 3, "{sent}");
    assert_eq!(
        json["summary"]["outcomes"]["cancelled"].as_u64(),
        Some(sent)
    );
    assert_eq!(json["summary"]["outcomes"]["success"].as_u64(), Some(0));
    assert!(dir.join("trace.jsonl").exists() && dir.join("report.html").exists());
}

#[test]
fn output_paths_are_checked_before_the_first_request_and_dash_is_stdout() {
    let (addr, arrivals) = slow_server(Duration::ZERO);
    let url = format!("http://{addr}/v1");
    let base = [
        "--url",
        url.as_str(),
        "--model",
        "m",
        "-n",
        "2",
        "--no-progress",
    ];
    let missing = "/nonexistent-dir/run.json";
    let output = bench(&[&base[..], &["--json", missing]].concat());
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(missing) && stderr.contains("--json"),
        "{stderr}"
    );
    assert!(arrivals.try_recv().is_err(), "no request was sent");

    let both = bench(&[&base[..], &["--json", "-", "--trace", "-"]].concat());
    assert_eq!(both.status.code(), Some(2));

    let output = bench(&[&base[..], &["--json", "-"]].concat());
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is the JSON");
    assert_eq!(json["summary"]["requests"], 2);
    assert_eq!(json["interrupted"], false);
    assert!(
        stderr.contains("tokenmeter bench"),
        "the table is on stderr:\n{stderr}"
    );
    assert!(!std::path::Path::new("-").exists(), "no file named -");
}

/// A server that does not answer the requests `stall` picks within the test, and a channel
/// that hears of each such request.
fn stalling_server(stall: fn(&support::Seen) -> bool) -> (SocketAddr, Receiver<()>) {
    let (arrived, arrivals) = channel();
    let arrived = Mutex::new(arrived);
    let addr = serve(move |seen| {
        if stall(seen) {
            let (_keep, never) = channel::<()>();
            let _ = arrived.lock().unwrap().send(());
            // Held well past the test's deadline: the bench must not wait for it.
            let _ = never.recv_timeout(DEADLINE * 4);
        }
        Reply::stream(3)
    });
    (addr, arrivals)
}

/// Starts the bench against a stalling server, interrupts it once the stalled request has
/// arrived, and checks it stops cleanly with 130 saying where it was.
fn interrupted_before_the_run(stall: fn(&support::Seen) -> bool, model: &[&str], step: &str) {
    let (addr, arrivals) = stalling_server(stall);
    let url = format!("http://{addr}/v1");
    let child = tokenmeter()
        .args(["bench", "--url", &url, "-n", "3", "--no-progress"])
        .args(model)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tokenmeter binary starts");
    await_arrivals(&arrivals, 1);
    signal(&child, "INT");
    let output = finish(child);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains(&format!("interrupted during {step}")),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn an_interrupt_during_model_discovery_stops_cleanly() {
    interrupted_before_the_run(
        |seen| seen.path.ends_with("/models"),
        &[],
        "model discovery",
    );
}

#[test]
fn an_interrupt_during_the_test_request_stops_cleanly() {
    interrupted_before_the_run(
        |seen| seen.header("x-tokenmeter-request") == Some("preflight"),
        &["--model", "m"],
        "the test request",
    );
}

#[test]
fn an_interrupt_during_the_wait_for_start_at_stops_cleanly() {
    let addr = serve(|_| Reply::stream(2));
    let url = format!("http://{addr}/v1");
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + 600;
    let mut child = tokenmeter()
        .args(["bench", "--url", &url, "--model", "m", "-n", "3"])
        .args(["--no-progress", "--no-preflight", "--start-at"])
        .arg(start.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tokenmeter binary starts");
    // Its stderr, line by line, until it says it waits (the signal handler is installed then).
    let stderr = child.stderr.take().expect("piped stderr");
    let (lines, read) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let mut seen = Vec::new();
    loop {
        let line = read
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|_| panic!("no \"waiting\" line; stderr so far: {seen:?}"));
        let waiting = line.contains("waiting") && line.contains("--start-at");
        seen.push(line);
        if waiting {
            break;
        }
    }
    signal(&child, "INT");
    let output = finish(child);
    // The reader ends at the child's exit (end of its stderr).
    let rest: Vec<String> = read.iter().collect();
    assert_eq!(output.status.code(), Some(130), "{seen:?} {rest:?}");
    let all = seen.into_iter().chain(rest).collect::<Vec<_>>().join("\n");
    assert!(
        all.contains("interrupted during the wait for --start-at"),
        "{all}"
    );
}

/// A raw loopback server that answers each completion with a role frame and two tokens, then
/// holds the stream open (well past the test) without ending it; a channel hears of each
/// request once its tokens were written.
fn streaming_then_stalling_server() -> (SocketAddr, Receiver<()>) {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("address");
    let (streaming, streams) = channel();
    std::thread::spawn(move || {
        for mut socket in listener.incoming().flatten() {
            let streaming = streaming.clone();
            std::thread::spawn(move || {
                // The request: its head and (small) body, read until the blank line and a bit.
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let events = [
                    "data: {\"id\":\"s\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
                    "data: {\"id\":\"s\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n",
                    "data: {\"id\":\"s\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\n",
                ];
                let mut out = String::from(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
                );
                for event in events {
                    out.push_str(&format!("{:x}\r\n{event}\r\n", event.len()));
                }
                if socket
                    .write_all(out.as_bytes())
                    .and_then(|()| socket.flush())
                    .is_err()
                {
                    return;
                }
                let _ = streaming.send(());
                // Held well past the test's deadline: only cancelling ends these requests.
                let (_keep, never) = channel::<()>();
                let _ = never.recv_timeout(DEADLINE * 4);
            });
        }
    });
    (addr, streams)
}

/// Issue 26, item 12: a second interrupt cancels the requests in flight but keeps what each
/// had received: its send time, its chunks and their times, in the trace and the summary
/// (before, each was replaced by an empty record: send 0, no chunks).
#[test]
fn a_second_interrupt_keeps_what_the_requests_in_flight_received() {
    let dir = temp_dir("interrupt-keeps");
    let (addr, streams) = streaming_then_stalling_server();
    let mut child = start(addr, &dir);
    // Six streams under way: the first three have had their tokens for several arrivals.
    await_arrivals(&streams, 6);
    let stderr = child.stderr.take().expect("piped");
    let (line_sender, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = line_sender.send(line);
        }
    });
    signal(&child, "INT");
    while !lines
        .recv_timeout(DEADLINE)
        .expect("the bench says it drains")
        .contains("no new requests")
    {}
    signal(&child, "TERM");
    let output = finish(child);
    assert_eq!(output.status.code(), Some(130));
    let json = read_json(&dir);
    let sent = json["summary"]["requests"].as_u64().unwrap();
    assert!(sent >= 6, "{sent}");
    assert_eq!(
        json["summary"]["outcomes"]["cancelled"].as_u64(),
        Some(sent)
    );
    let trace = std::fs::read_to_string(dir.join("trace.jsonl")).expect("--trace written");
    let lines: Vec<serde_json::Value> = trace
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len() as u64, sent);
    for line in &lines {
        assert_eq!(line["outcome"], "cancelled", "{line}");
        assert!(
            line["send_ns"].as_u64() > Some(0),
            "the send is kept: {line}"
        );
        assert!(
            line["end_ns"].as_u64() >= line["send_ns"].as_u64(),
            "{line}"
        );
    }
    for id in 0..3 {
        let line = lines
            .iter()
            .find(|l| l["id"] == id)
            .expect("the first requests");
        let chunks = line["chunks"].as_array().expect("chunks");
        assert_eq!(chunks.len(), 2, "its two tokens are kept: {line}");
        assert!(line["first_token_ns"].as_u64().is_some(), "{line}");
        assert_eq!(line["output_tokens"], 2, "{line}");
    }
}
