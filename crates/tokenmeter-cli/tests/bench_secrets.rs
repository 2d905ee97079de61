//! The API key is sent as a bearer token and never printed: not on stdout or stderr, not in
//! `--json`, `--trace` or `--html`, even when the server echoes it back in its errors.

#[path = "bench_support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicU64, Ordering};

use support::{Reply, refusing, temp_dir, text, tokenmeter};

const KEY: &str = "sk-planted-7f3a9c2e51d84b6f";

#[test]
fn the_key_is_sent_but_never_printed() {
    let count = AtomicU64::new(0);
    let addr = support::serve(move |seen| {
        let auth = seen.header("authorization").unwrap_or("none").to_owned();
        if seen.path == "/v1/models" {
            return Reply::json(200, r#"{"data":[{"id":"m"}]}"#);
        }
        assert_eq!(
            auth,
            format!("Bearer {KEY}"),
            "the key is sent as a bearer token"
        );
        // Servers that echo the credentials in their errors, in bodies and in stream events.
        match count.fetch_add(1, Ordering::Relaxed) % 3 {
            0 => Reply::stream(4),
            1 => Reply::json(
                401,
                format!(r#"{{"error":{{"message":"bad key {auth}"}}}}"#),
            ),
            _ => Reply::new(
                200,
                "text/event-stream",
                format!("data: {{\"error\":{{\"message\":\"denied {auth}\",\"code\":403}}}}\n\n"),
            ),
        }
    });
    let dir = temp_dir("secrets");
    let files = ["summary.json", "trace.jsonl", "report.html"].map(|f| dir.join(f));
    let url = format!("http://{addr}");
    let output = tokenmeter()
        .env("TM_PLANTED_KEY", KEY)
        .args([
            "bench",
            "--url",
            &url,
            "--api-key-env",
            "TM_PLANTED_KEY",
            "-n",
            "9",
            "--rate",
            "inf",
        ])
        .args([
            "--json",
            files[0].to_str().unwrap(),
            "--trace",
            files[1].to_str().unwrap(),
        ])
        .args(["--html", files[2].to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("client_error 6"),
        "the echoing errors were counted:\n{stdout}"
    );
    let trace = std::fs::read_to_string(&files[1]).unwrap();
    assert!(
        trace.contains("[redacted]"),
        "the echoed key was redacted, not dropped:\n{trace}"
    );
    for (name, content) in [("stdout", stdout), ("stderr", stderr)].into_iter().chain(
        files
            .iter()
            .map(|f| (f.to_str().unwrap(), std::fs::read_to_string(f).unwrap())),
    ) {
        assert!(!content.contains(KEY), "the API key leaked into {name}");
        assert!(
            !content.contains("sk-planted"),
            "part of the API key leaked into {name}"
        );
    }
}

#[test]
fn an_unreachable_server_does_not_print_the_key_either() {
    let (_reserved, closed) = refusing();
    let url = format!("http://user:{KEY}@{closed}/v1?api-key={KEY}");
    let output = tokenmeter()
        .env("OPENAI_API_KEY", KEY)
        .args(["bench", "--url", &url, "--model", "m"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(stderr.contains("cannot connect"), "{stderr}");
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "{stdout}\n{stderr}"
    );
}

/// Every form of a piece of the key that must not appear: each 8-character window, raw (any
/// case), `\u`-escaped (any hex case) and percent-encoded.
fn assert_no_piece(name: &str, content: &str) {
    let lower = content.to_ascii_lowercase();
    for window in KEY.as_bytes().windows(8) {
        let raw = String::from_utf8_lossy(window).to_ascii_lowercase();
        let unicode: String = window.iter().map(|b| format!("\\u{b:04x}")).collect();
        let percent: String = window.iter().map(|b| format!("%{b:02x}")).collect();
        for form in [raw, unicode, percent] {
            assert!(!lower.contains(&form), "`{form}` leaked into {name}");
        }
    }
}

/// No terminal control sequence (ESC, BEL, C1 CSI/OSC) in what reaches the terminal.
fn assert_no_controls(name: &str, content: &str) {
    let bad = content
        .chars()
        .find(|&c| matches!(c, '\x1b' | '\x07' | '\u{9b}' | '\u{9d}'));
    assert_eq!(bad, None, "a control character reached {name}: {content:?}");
}

/// The key as a JSON string of `\u` escapes.
fn escaped(key: &str) -> String {
    key.bytes().map(|b| format!("\\u{b:04X}")).collect()
}

/// A chat stream of 3 tokens whose chunks carry `id`.
fn stream_with_id(id: &str) -> Reply {
    let mut body = String::new();
    for i in 0..3 {
        let finish = if i == 2 { "\"stop\"" } else { "null" };
        body.push_str(&format!(
            "data: {{\"id\":\"{id}\",\"choices\":[{{\"delta\":{{\"content\":\"w\"}},\"finish_reason\":{finish}}}]}}\n\n"
        ));
    }
    body.push_str("data: [DONE]\n\n");
    Reply::new(200, "text/event-stream", body)
}

/// Answer number `case` of a server that echoes `key` (the bearer token it was sent).
fn hostile(case: u64, key: &str) -> Reply {
    let pad = |n: usize| "x".repeat(n);
    match case {
        0 => stream_with_id(key),
        1 => Reply::stream(3).header("x-request-id", key),
        2 => Reply::json(
            401,
            format!(r#"{{"error":{{"message":"{}{key}"}}}}"#, pad(185)),
        ),
        3 => Reply::new(500, "text/plain", format!("{}{key}", pad(250))),
        4 => Reply::json(
            401,
            format!(r#"{{"error":{{"message":"{}"}}}}"#, escaped(key)),
        ),
        5 => Reply::new(
            200,
            "text/event-stream",
            format!(
                "data: {{\"choices\": [oops {} {}\n\n",
                pad(100),
                escaped(key)
            ),
        ),
        6 => Reply::new(
            200,
            "text/event-stream",
            format!("data: {{\"choices\": [oops {}{key}\n\n", pad(182)),
        ),
        7 => Reply::new(307, "text/plain", "").header("location", format!("/moved?token={key}")),
        8 => Reply::json(
            500,
            r#"{"error":{"message":"\u001b]0;pwned\u0007\u001b[2J\u001b[31mjson boom"}}"#,
        ),
        _ => Reply::new(
            502,
            "text/plain",
            "\x1b]0;pwned\x07\x1b[2Jraw boom \u{9b}31m",
        ),
    }
}

const CASES: u64 = 10;

/// Runs the bench (no `--model`: the model comes from the echoing list) against a server that
/// answers request `i` with `hostile(cases[i % len])`; checks every output; returns stdout and
/// stderr.
fn bench_hostile(cases: &'static [u64], n: usize) -> (bool, String, String) {
    let addr = support::serve(move |seen| {
        let auth = seen.header("authorization").unwrap_or("none");
        let key = auth.strip_prefix("Bearer ").unwrap_or(auth).to_owned();
        if seen.path == "/v1/models" {
            return Reply::json(200, format!(r#"{{"data":[{{"id":"model-{key}"}}]}}"#));
        }
        let id: usize = seen
            .header("x-tokenmeter-request")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        hostile(cases[id % cases.len()], &key)
    });
    let dir = temp_dir(&format!("hostile-{}", cases[0]));
    let files = ["summary.json", "trace.jsonl", "report.html"].map(|f| dir.join(f));
    let output = tokenmeter()
        .env("TM_PLANTED_KEY", KEY)
        .args(["bench", "--url", &format!("http://{addr}")])
        .args([
            "--api-key-env",
            "TM_PLANTED_KEY",
            "--no-progress",
            "--no-preflight",
        ])
        .args(["-n", &n.to_string(), "--rate", "inf"])
        .args(["--json", files[0].to_str().unwrap()])
        .args(["--trace", files[1].to_str().unwrap()])
        .args(["--html", files[2].to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_no_controls("stdout", &stdout);
    assert_no_controls("stderr", &stderr);
    for (name, content) in [("stdout", stdout.clone()), ("stderr", stderr.clone())]
        .into_iter()
        .chain(files.iter().map(|f| {
            let content = std::fs::read_to_string(f).unwrap_or_default();
            (f.to_str().unwrap(), content)
        }))
    {
        assert_no_piece(&format!("{name} (cases {cases:?})"), &content);
    }
    let trace = std::fs::read_to_string(&files[1]).unwrap();
    assert!(
        !trace.contains("\\u001b"),
        "an escape reached --trace: {trace}"
    );
    (output.status.success(), stdout, stderr)
}

#[test]
fn no_piece_of_an_echoed_key_and_no_control_sequence_reaches_any_output() {
    const ALL: [u64; CASES as usize] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
    let (ok, stdout, stderr) = bench_hostile(&ALL, CASES as usize);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("model model-[redacted]"), "{stdout}");
    assert!(stdout.contains("success 2"), "{stdout}");
    // Each failure alone, so that its message is the one stderr shows.
    for case in [&[2][..], &[3], &[4], &[5], &[6], &[7], &[8], &[9]] {
        let (ok, _, stderr) = bench_hostile(case, 1);
        assert!(!ok, "case {case:?}");
        assert!(
            stderr.contains("no request succeeded"),
            "{case:?}: {stderr}"
        );
        if case[0] < 8 {
            assert!(stderr.contains("[redacted]"), "{case:?}: {stderr}");
        }
    }
}

/// The peak resident set (VmHWM) of process `pid`, in KiB, while it runs.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_huge_model_list_is_refused_after_a_mib_with_bounded_memory() {
    // 50 MB of one model id, chunked: reading it whole used to take a multiple of it.
    let body = format!(
        r#"{{"data":[{{"id":"{}"}}]}}"#,
        "m".repeat(50 * 1024 * 1024)
    );
    let body = std::sync::Arc::new(body);
    let addr = support::serve(move |_| Reply::json(200, body.as_str()).chunked());
    let started = std::time::Instant::now();
    let mut child = tokenmeter()
        .args(["bench", "--url", &format!("http://{addr}"), "-n", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Sample the high-water mark until the child exits (bounded: 30 s).
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        peak = peak.max(peak_rss_kib(child.id()).unwrap_or(0));
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after 30 s (peak RSS so far {peak} KiB)");
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(stderr.contains("larger than 1MiB"), "{stderr}");
    assert!(
        stdout.len() + stderr.len() < 4096,
        "what is printed is bounded"
    );
    assert!(peak < 40 * 1024, "peak RSS {peak} KiB");
}
