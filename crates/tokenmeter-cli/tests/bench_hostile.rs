//! The hostile-server matrix of `tokenmeter bench`: a real `tokenmeter bench` process against
//! a small loopback server that misbehaves in one way per case. For every case the test checks
//! the outcome class the trace records, that the process ends within `--timeout` plus a margin,
//! that its peak memory stays bounded, and that no piece of a planted API key (8 characters or
//! more, raw or JSON-escaped) reaches stdout, stderr, `--json`, `--trace` or `--html`.
//!
//! The server writes raw HTTP/1.1 by hand so that each fault is produced exactly. Every loop in
//! it is bounded in bytes and in time, and it listens on 127.0.0.1 only.

#[path = "bench_support/mod.rs"]
mod support;

#[path = "bench_hostile/protocol.rs"]
mod protocol;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};

use support::{temp_dir, tokenmeter};

/// The planted key: every piece of it of 8 characters or more is looked for in every output.
const KEY: &str = "sk-hostile-3b9d0c7e4f21a856e0d9";

/// The longest any writing loop of the server runs.
const SERVER_LIMIT: Duration = Duration::from_secs(20);

/// What the server saw of a request.
#[derive(Debug, Default)]
struct Seen {
    path: String,
}

type Handler = Arc<
    dyn Fn(Seen, TcpStream) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync,
>;

/// A role frame, `n` one-token chunks with `id`, a finish chunk and a usage chunk of `usage`
/// (raw JSON) when given.
fn chat_events(id: &str, n: usize, usage: Option<&str>) -> String {
    let mut body = format!(
        "data: {{\"id\":\"{id}\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\"}}}}]}}\n\n"
    );
    for i in 0..n {
        let finish = if i + 1 == n { "\"stop\"" } else { "null" };
        body.push_str(&format!(
            "data: {{\"id\":\"{id}\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"w{i} \"}},\"finish_reason\":{finish}}}]}}\n\n"
        ));
    }
    if let Some(usage) = usage {
        body.push_str(&format!(
            "data: {{\"id\":\"{id}\",\"choices\":[],\"usage\":{usage}}}\n\n"
        ));
    }
    body
}

/// The head of a chunked 200 event stream, with extra header lines. Every answer closes its
/// connection: the server answers one request per connection.
fn stream_head(extra: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n{extra}\r\n"
    )
}

/// One HTTP chunk.
fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// A whole answer with a body.
fn whole(status: &str, content_type: &str, extra: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// A complete, well-formed stream of `n` tokens.
fn good_stream(n: usize) -> Vec<u8> {
    let mut out = stream_head("").into_bytes();
    let usage = format!(r#"{{"prompt_tokens":3,"completion_tokens":{n}}}"#);
    out.extend(chunk(chat_events("chatcmpl-1", n, Some(&usage)).as_bytes()));
    out.extend(chunk(b"data: [DONE]\n\n"));
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// `text` with every character as a JSON `\u00xx` escape.
fn json_escaped(text: &str) -> String {
    text.chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect()
}

/// Starts the server: `/v1/models` answers `models`, every other request goes to `handler`.
async fn start(models: Vec<u8>, handler: Handler) -> SocketAddr {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("address");
    let models = Arc::new(models);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (models, handler) = (models.clone(), handler.clone());
            tokio::spawn(async move {
                let _ = tokio::time::timeout(SERVER_LIMIT, serve(socket, models, handler)).await;
            });
        }
    });
    addr
}

async fn serve(socket: TcpStream, models: Arc<Vec<u8>>, handler: Handler) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut reader = BufReader::new(socket);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let seen = Seen {
            path: line.split(' ').nth(1).unwrap_or("").to_owned(),
        };
        let mut length = 0usize;
        loop {
            line.clear();
            reader.read_line(&mut line).await?;
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            if let Some((name, value)) = trimmed.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await?;
        if seen.path.ends_with("/models") {
            reader.get_mut().write_all(&models).await?;
            continue;
        }
        // One request per connection from here: the handler owns the socket.
        handler(seen, reader.into_inner()).await;
        return Ok(());
    }
}

/// Writes `bytes` and keeps the connection as it is.
fn reply(bytes: Vec<u8>) -> Handler {
    let bytes = Arc::new(bytes);
    Arc::new(move |_, mut socket| {
        let bytes = bytes.clone();
        Box::pin(async move {
            let _ = socket.write_all(&bytes).await;
            let _ = socket.flush().await;
            // Let the client close first, so that the end of the body is its own.
            let mut rest = Vec::new();
            let _ = tokio::time::timeout(SERVER_LIMIT, socket.read_to_end(&mut rest)).await;
        })
    })
}

/// Runs `handler` on each request's socket.
fn custom<F, Fut>(f: F) -> Handler
where
    F: Fn(Seen, TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Arc::new(move |seen, socket| Box::pin(f(seen, socket)))
}

/// A models list naming `id`.
fn models(id: &str) -> Vec<u8> {
    whole(
        "200 OK",
        "application/json",
        "",
        format!(r#"{{"object":"list","data":[{{"id":"{id}","object":"model"}}]}}"#).as_bytes(),
    )
}

/// What a case must end in.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Every request has this outcome (`success`) or error class (`timeout`, ...).
    Class(&'static str),
    /// The run stops before any request, exiting non-zero with this in stderr.
    Refused(&'static str),
}

struct Case {
    name: &'static str,
    models: Vec<u8>,
    handler: Handler,
    /// Pass `--model m` (without it the model comes from `/v1/models`).
    model: bool,
    timeout_secs: u64,
    expect: Expect,
    /// Requests in the run.
    n: usize,
    /// Peak RSS bound of the bench process.
    max_rss_mib: u64,
    /// A check of the run's outputs, beyond the class.
    check: Option<fn(&Run)>,
    /// More flags for the bench.
    args: Vec<&'static str>,
}

impl Case {
    fn new(name: &'static str, handler: Handler, expect: Expect) -> Self {
        Self {
            name,
            models: models("m"),
            handler,
            model: true,
            timeout_secs: 3,
            expect,
            n: 2,
            max_rss_mib: 96,
            check: None,
            args: Vec::new(),
        }
    }
}

/// A finished run's outputs.
#[derive(Debug)]
struct Run {
    success: bool,
    stdout: String,
    stderr: String,
    json: Option<String>,
    trace: Option<String>,
    html: Option<String>,
    elapsed: Duration,
    peak_rss_kib: u64,
}

impl Run {
    fn traces(&self) -> Vec<serde_json::Value> {
        self.trace
            .as_deref()
            .unwrap_or("")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON trace line"))
            .collect()
    }

    fn summary(&self) -> serde_json::Value {
        let json: serde_json::Value =
            serde_json::from_str(self.json.as_deref().expect("--json written")).expect("JSON");
        json["summary"].clone()
    }
}

/// The peak resident memory of a running process, in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn read(path: &Path) -> Option<String> {
    std::fs::read(path)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Runs `tokenmeter bench` against `addr`, sampling its peak memory until it exits.
fn run_bench(case: &Case, addr: SocketAddr, dir: &Path) -> Run {
    let files: [PathBuf; 3] = ["summary.json", "trace.jsonl", "report.html"]
        .map(|f| dir.join(format!("{}-{f}", case.name)));
    let url = format!("http://{addr}");
    let timeout = format!("{}s", case.timeout_secs);
    let n = case.n.to_string();
    let mut command = tokenmeter();
    command
        .env("TM_HOSTILE_KEY", KEY)
        .args(["bench", "--url", &url, "--api-key-env", "TM_HOSTILE_KEY"])
        .args([
            "-n",
            &n,
            "--rate",
            "inf",
            "--timeout",
            &timeout,
            "--no-progress",
            // Each case's answers are what the requests of the run meet, not a test request.
            "--no-preflight",
        ])
        .args(["--input-tokens", "8", "--output-tokens", "8"])
        .arg("--json")
        .arg(&files[0])
        .arg("--trace")
        .arg(&files[1])
        .arg("--html")
        .arg(&files[2])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if case.model {
        command.args(["--model", "m"]);
    }
    command.args(&case.args);
    let start = Instant::now();
    let mut child = command.spawn().expect("the tokenmeter binary runs");
    let pid = child.id();
    // Drain the pipes on their own threads so that a chatty child never blocks on them.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut text);
        text
    });
    let limit = Duration::from_secs(case.timeout_secs * 3 + 30);
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = peak_rss_kib(pid) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait for the bench") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{}: the bench did not end within {limit:?}", case.name);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.join().expect("stdout reader")).into_owned();
    let stderr = String::from_utf8_lossy(&err.join().expect("stderr reader")).into_owned();
    Run {
        success: status.success(),
        stdout,
        stderr,
        json: read(&files[0]),
        trace: read(&files[1]),
        html: read(&files[2]),
        elapsed,
        peak_rss_kib: peak,
    }
}

/// Every piece of the key of 8 characters or more, raw and JSON-escaped.
fn key_pieces() -> Vec<String> {
    let mut pieces = Vec::new();
    for len in 8..=KEY.len() {
        for start in 0..=KEY.len() - len {
            let piece = &KEY[start..start + len];
            pieces.push(piece.to_owned());
            pieces.push(json_escaped(piece));
        }
    }
    pieces
}

fn check_case(case: &Case, run: &Run, pieces: &[String]) {
    let name = case.name;
    let context = || format!("{name}\nstdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    let outputs = [
        ("stdout", Some(&run.stdout)),
        ("stderr", Some(&run.stderr)),
        ("--json", run.json.as_ref()),
        ("--trace", run.trace.as_ref()),
        ("--html", run.html.as_ref()),
    ];
    for (output, text) in outputs {
        let Some(text) = text else { continue };
        let lower = text.to_ascii_lowercase();
        for piece in pieces {
            assert!(
                !lower.contains(&piece.to_ascii_lowercase()),
                "{name}: `{piece}`, a piece of the API key, reached {output}\n{}",
                context()
            );
        }
        for (output, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            assert!(
                !text.contains('\u{1b}') && !text.contains('\u{9b}') && !text.contains('\u{7}'),
                "{name}: a terminal control character reached {output}"
            );
        }
    }
    let bound = Duration::from_secs(case.timeout_secs) + Duration::from_millis(2500);
    assert!(
        run.elapsed <= bound,
        "{name}: the run took {:?}, past --timeout {}s plus the margin\n{}",
        run.elapsed,
        case.timeout_secs,
        context()
    );
    assert!(
        run.peak_rss_kib <= case.max_rss_mib * 1024,
        "{name}: peak RSS {} KiB, over {} MiB\n{}",
        run.peak_rss_kib,
        case.max_rss_mib,
        context()
    );
    match case.expect {
        Expect::Class(class) => {
            let traces = run.traces();
            assert_eq!(
                traces.len(),
                case.n,
                "{name}: one trace line per request\n{}",
                context()
            );
            for trace in &traces {
                let got = trace["error_class"]
                    .as_str()
                    .unwrap_or_else(|| trace["outcome"].as_str().unwrap_or("?"));
                assert_eq!(got, class, "{name}: {trace}\n{}", context());
            }
            assert_eq!(
                run.success,
                class == "success",
                "{name}: exit status\n{}",
                context()
            );
        }
        Expect::Refused(message) => {
            assert!(!run.success, "{name}: the run should stop\n{}", context());
            assert!(
                run.stderr.contains(message),
                "{name}: stderr should say `{message}`\n{}",
                context()
            );
        }
    }
    if let Some(check) = case.check {
        check(run);
    }
}

/// The cases where the server tries to leak the key back.
fn leaking_cases() -> Vec<Case> {
    let long_message = |at: usize, key: &str| {
        let message = format!("{}{key} is not a valid key", "x".repeat(at));
        whole(
            "401 Unauthorized",
            "application/json",
            "",
            format!(r#"{{"error":{{"message":"{message}","type":"invalid_request_error"}}}}"#)
                .as_bytes(),
        )
    };
    let mut id_is_key = Case::new(
        "model id is the key",
        reply(good_stream(3)),
        Expect::Class("success"),
    );
    id_is_key.models = models(KEY);
    id_is_key.model = false;
    let mut stream_ids = stream_head(&format!("x-request-id: {KEY}\r\n")).into_bytes();
    stream_ids.extend(chunk(
        chat_events(KEY, 3, Some(r#"{"prompt_tokens":3,"completion_tokens":3}"#)).as_bytes(),
    ));
    stream_ids.extend(chunk(b"data: [DONE]\n\n"));
    stream_ids.extend_from_slice(b"0\r\n\r\n");
    let mut malformed = stream_head("").into_bytes();
    malformed.extend(chunk(
        format!("data: {{\"choices\": [{}{KEY}\n\n", "y".repeat(150)).as_bytes(),
    ));
    malformed.extend_from_slice(b"0\r\n\r\n");
    let redirect = custom(|seen: Seen, mut socket: TcpStream| async move {
        let answer = if seen.path.starts_with("/moved") {
            // Never reached unless redirects are followed.
            good_stream(2)
        } else {
            whole(
                "307 Temporary Redirect",
                "text/plain",
                &format!("location: /moved/{KEY}?key={KEY}\r\n"),
                b"moved",
            )
        };
        let _ = socket.write_all(&answer).await;
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(SERVER_LIMIT, socket.read_to_end(&mut rest)).await;
    });
    let terminal = format!(
        r#"{{"error":{{"message":"\u001b]0;pwned\u0007\u001b[2J\u009b31m boom \u001b[0m {}"}}}}"#,
        json_escaped(KEY)
    );
    vec![
        id_is_key,
        Case::new(
            "chunk id and x-request-id are the key",
            reply(stream_ids),
            Expect::Class("success"),
        ),
        Case::new(
            "the key at character 180 of an error",
            reply(long_message(180, KEY)),
            Expect::Class("client_error"),
        ),
        Case::new(
            "the key at character 250 of an error",
            reply(long_message(250, KEY)),
            Expect::Class("client_error"),
        ),
        Case::new(
            "the key JSON-escaped in an error",
            reply(long_message(20, &json_escaped(KEY))),
            Expect::Class("client_error"),
        ),
        Case::new(
            "the key in a malformed event",
            reply(malformed),
            Expect::Class("transport"),
        ),
        Case::new(
            "a redirect naming the key",
            redirect,
            Expect::Class("_OTHER"),
        ),
        Case::new(
            "terminal escapes in an error",
            reply(whole(
                "500 Internal Server Error",
                "application/json",
                "",
                terminal.as_bytes(),
            )),
            Expect::Class("server_error"),
        ),
    ]
}

/// Writes `head`, then calls `next` for each piece until it returns `None`, the client goes
/// away, or the server's limit passes.
fn writer(head: String, next: fn(u64) -> Option<Vec<u8>>) -> Handler {
    custom(move |_, mut socket: TcpStream| {
        let head = head.clone();
        async move {
            let end = Instant::now() + SERVER_LIMIT;
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let mut i = 0;
            while Instant::now() < end {
                let Some(piece) = next(i) else { break };
                if socket.write_all(&piece).await.is_err() {
                    return;
                }
                i += 1;
            }
            let _ = socket.flush().await;
            let mut rest = Vec::new();
            let _ = tokio::time::timeout(SERVER_LIMIT, socket.read_to_end(&mut rest)).await;
        }
    })
}

/// The cases where the server floods, stalls, or sends what was not asked for.
fn flooding_cases() -> Vec<Case> {
    let head = stream_head("");
    // 30 MB in one event, 64 KiB a chunk, no line end.
    let mut huge = Case::new(
        "one 30 MB event",
        writer(head.clone(), |i| {
            (i < 480).then(|| {
                let mut piece = if i == 0 {
                    b"data: ".to_vec()
                } else {
                    Vec::new()
                };
                piece.resize(piece.len() + 64 * 1024, b'a');
                chunk(&piece)
            })
        }),
        Expect::Class("transport"),
    );
    huge.timeout_secs = 2;
    huge.n = 1;
    // Frames that carry no token (so no chunk bound stops them), as fast as the socket takes
    // them, for longer than the timeout: only the deadline ends the request.
    let mut flood = Case::new(
        "a flood of empty deltas",
        writer(head.clone(), |_| {
            Some(chunk(
                &br#"data: {"choices":[{"index":0,"delta":{}}]}

"#
                .repeat(64),
            ))
        }),
        Expect::Class("timeout"),
    );
    flood.timeout_secs = 2;
    flood.n = 1;
    // Token-bearing events without end: stopped at the chunk bound, long before the deadline.
    let mut tokens = Case::new(
        "a flood of token events",
        writer(head.clone(), |_| {
            Some(chunk(
                br#"data: {"choices":[{"index":0,"delta":{"content":"a"}}]}

"#,
            ))
        }),
        Expect::Class("transport"),
    );
    tokens.timeout_secs = 20;
    tokens.n = 1;
    tokens.check = Some(|run| {
        assert!(
            run.elapsed < Duration::from_secs(10),
            "the chunk bound stopped it, not the deadline: {:?}",
            run.elapsed
        );
        let trace = &run.traces()[0];
        assert!(
            trace["error"]
                .as_str()
                .is_some_and(|e| e.contains("token-bearing chunks")),
            "{trace}"
        );
    });
    // A line that never ends, slowly.
    let mut endless = Case::new(
        "a line that never ends",
        custom(|_, mut socket: TcpStream| async move {
            let end = Instant::now() + SERVER_LIMIT;
            let _ = socket.write_all(stream_head("").as_bytes()).await;
            let _ = socket.write_all(&chunk(b"data: {\"choices\":[")).await;
            while Instant::now() < end {
                if socket.write_all(&chunk(&[b' '; 512])).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }),
        Expect::Class("timeout"),
    );
    endless.timeout_secs = 2;
    endless.n = 1;
    // 2M zero-token frames, then [DONE]: a complete stream without a token, an empty answer
    // as vLLM's bench counts it, read to its end in bounded memory (frames that carry no
    // token share one trace entry past the first few).
    let mut many = Case::new(
        "two million tiny chunks",
        writer(head.clone(), |i| match i {
            0..2_000 => Some(chunk(
                &br"data: {}

"
                .repeat(1_000),
            )),
            2_000 => Some(chunk(b"data: [DONE]\n\n0\r\n\r\n")),
            _ => None,
        }),
        Expect::Class("empty_response"),
    );
    many.n = 1;
    // A debug build parses the 2M frames in about 8 s on a loaded 2-core machine: the timeout
    // is the server's own limit, so that only a real stall fails the case.
    many.timeout_secs = SERVER_LIMIT.as_secs();
    // 64 MB of model id.
    let mut big_models = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 67108900\r\n\r\n{\"data\":[{\"id\":\"".to_owned().into_bytes();
    big_models.resize(big_models.len() + 64 * 1024 * 1024, b'm');
    big_models.extend_from_slice(b"\"}]}");
    let mut models_bomb = Case::new(
        "a 64 MB model list",
        reply(good_stream(2)),
        Expect::Refused("larger than 1MiB"),
    );
    models_bomb.models = big_models;
    models_bomb.model = false;
    let mut stall = Case::new(
        "a stall after the headers",
        writer(head.clone(), |i| (i == 0).then(|| chunk(b": ping\n\n"))),
        Expect::Class("timeout"),
    );
    stall.timeout_secs = 2;
    vec![huge, flood, tokens, endless, many, models_bomb, stall]
}

/// What the server says about its numbers, and what follows `[DONE]`.
fn counting_cases() -> Vec<Case> {
    let with_usage = |usage: &'static str| {
        let mut out = stream_head("").into_bytes();
        out.extend(chunk(chat_events("c", 5, Some(usage)).as_bytes()));
        out.extend(chunk(b"data: [DONE]\n\n"));
        out.extend_from_slice(b"0\r\n\r\n");
        out
    };
    let mut max = Case::new(
        "usage of u64::MAX tokens",
        reply(with_usage(
            r#"{"prompt_tokens":3,"completion_tokens":18446744073709551615}"#,
        )),
        Expect::Class("success"),
    );
    max.check = Some(|run| {
        let total = &run.summary()["total_output_tokens"];
        assert_eq!(
            total.as_u64(),
            Some(u64::MAX),
            "saturated, not wrapped: {total}"
        );
    });
    let float = Case::new(
        "a float in usage",
        reply(with_usage(r#"{"prompt_tokens":3,"completion_tokens":5.5}"#)),
        Expect::Class("success"),
    );
    let string = Case::new(
        "a string in usage",
        reply(with_usage(
            r#"{"prompt_tokens":"three","completion_tokens":"five"}"#,
        )),
        Expect::Class("success"),
    );
    let mut zero = Case::new(
        "usage of 0 against 5 content chunks",
        reply(with_usage(r#"{"prompt_tokens":3,"completion_tokens":0}"#)),
        Expect::Class("success"),
    );
    zero.check = Some(|run| {
        assert!(
            run.stderr.contains("usage.completion_tokens below"),
            "the disagreement is warned about:\n{}",
            run.stderr
        );
        let counted = &run.summary()["usage_discrepancies"];
        assert_eq!(counted.as_u64(), Some(2), "and counted: {counted}");
        for trace in run.traces() {
            assert_eq!(
                trace["output_tokens"], 0,
                "usage is kept, as vLLM keeps it: {trace}"
            );
            assert!(trace["usage_discrepancy"].is_object(), "{trace}");
        }
    });
    let mut open = stream_head("").into_bytes();
    open.extend(chunk(chat_events("c", 3, None).as_bytes()));
    open.extend(chunk(b"data: [DONE]\n\n"));
    let mut open_after_done = Case::new(
        "the body left open after [DONE]",
        custom(move |_, mut socket: TcpStream| {
            let open = open.clone();
            async move {
                let _ = socket.write_all(&open).await;
                let mut rest = Vec::new();
                let _ = tokio::time::timeout(SERVER_LIMIT, socket.read_to_end(&mut rest)).await;
            }
        }),
        Expect::Class("success"),
    );
    open_after_done.timeout_secs = 10;
    open_after_done.check = Some(|run| {
        assert!(
            run.elapsed < Duration::from_secs(8),
            "the request ended at [DONE], not at the timeout: {:?}",
            run.elapsed
        );
    });
    let mut garbage = stream_head("").into_bytes();
    garbage.extend(chunk(chat_events("c", 3, None).as_bytes()));
    garbage.extend(chunk(b"data: [DONE]\n\n\xff\xfe\xc0 not utf-8 \x00\n\n"));
    garbage.extend_from_slice(b"0\r\n\r\n");
    vec![
        max,
        float,
        string,
        zero,
        open_after_done,
        Case::new(
            "invalid UTF-8 after [DONE]",
            reply(garbage),
            Expect::Class("success"),
        ),
    ]
}

/// The faults that already worked before the hostile-peer work: kept in the matrix.
fn classic_cases() -> Vec<Case> {
    let mut malformed = stream_head("").into_bytes();
    malformed.extend(chunk(
        b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {oops\n\n",
    ));
    malformed.extend_from_slice(b"0\r\n\r\n");
    let mut reset = Case::new(
        "a reset mid-stream",
        custom(|_, socket: TcpStream| async move {
            let mut socket = socket;
            let _ = socket.write_all(stream_head("").as_bytes()).await;
            let _ = socket
                .write_all(&chunk(chat_events("c", 2, None).as_bytes()[..60].as_ref()))
                .await;
            let _ = socket.flush().await;
            let _ = socket.set_zero_linger();
            drop(socket);
        }),
        Expect::Class("transport"),
    );
    reset.n = 1;
    let byte_by_byte = custom(|_, mut socket: TcpStream| async move {
        for byte in good_stream(4) {
            if socket.write_all(&[byte]).await.is_err() {
                return;
            }
            let _ = socket.flush().await;
        }
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(SERVER_LIMIT, socket.read_to_end(&mut rest)).await;
    });
    let json_body = br#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;
    vec![
        Case::new(
            "malformed SSE",
            reply(malformed),
            Expect::Class("transport"),
        ),
        Case::new(
            "429 with retry-after",
            reply(whole(
                "429 Too Many Requests",
                "application/json",
                "retry-after: 1\r\n",
                br#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#,
            )),
            Expect::Class("rate_limited"),
        ),
        Case::new(
            "a 502 HTML page",
            reply(whole(
                "502 Bad Gateway",
                "text/html",
                "",
                b"<html><body><h1>502 Bad Gateway</h1></body></html>",
            )),
            Expect::Class("server_error"),
        ),
        reset,
        Case::new(
            "byte-by-byte chunking",
            byte_by_byte,
            Expect::Class("success"),
        ),
        Case::new(
            "a 200 JSON body where SSE was asked",
            reply(whole("200 OK", "application/json", "", json_body)),
            Expect::Class("transport"),
        ),
    ]
}

fn run_matrix(cases: Vec<Case>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = temp_dir("hostile");
    let pieces = key_pieces();
    let mut failures = Vec::new();
    for case in &cases {
        let addr = runtime.block_on(start(case.models.clone(), case.handler.clone()));
        let run = run_bench(case, addr, &dir);
        eprintln!(
            "{}: {:?}, peak RSS {} KiB, exit {}",
            case.name,
            run.elapsed,
            run.peak_rss_kib,
            if run.success { "ok" } else { "failed" }
        );
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_case(case, &run, &pieces);
        }));
        if let Err(panic) = outcome {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            failures.push(message);
        }
    }
    let _ = std::io::stderr().flush();
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn servers_that_echo_the_key_leak_none_of_it() {
    run_matrix(leaking_cases());
}

#[test]
fn servers_that_flood_or_stall_are_cut_off_on_time_in_bounded_memory() {
    run_matrix(flooding_cases());
}

#[test]
fn server_numbers_and_what_follows_done_are_taken_safely() {
    run_matrix(counting_cases());
}

#[test]
fn classic_faults_keep_their_classes() {
    run_matrix(classic_cases());
}

#[test]
fn http_and_sse_oddities_end_in_a_class_on_time() {
    run_matrix(protocol::cases());
}
