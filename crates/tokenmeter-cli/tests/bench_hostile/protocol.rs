//! The HTTP and SSE oddities of the hostile-server matrix: compression bombs, old and broken
//! framing, 1xx answers, redirect loops, headers that carry the key, deadlines that must hold
//! whatever arrives (or does not), and model lists too large or too deep to parse.
//!
//! The bench asks for no compression and decodes none (reqwest is built without its `gzip`,
//! `deflate`, `brotli` and `zstd` features), so a compressed body is read as the bytes it is:
//! a bomb is never inflated.

use std::io::Write as _;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::{
    Case, Expect, KEY, Run, SERVER_LIMIT, Seen, chat_events, chunk, custom, good_stream, reply,
    stream_head, whole, writer,
};

/// How far past `--timeout` a request may end: the deadline's own precision, on a loaded
/// machine (the process as a whole gets a larger margin, for its start and its reports).
const DEADLINE_SLACK_MS: u64 = 250;

/// 256 gzip members, each about 1 MiB of `fill` repeated, then one of `last`: 256 MiB once
/// inflated, about 1 KiB a member on the wire (a gzip body may hold many members; decoders
/// inflate them all). Inflated, each is well formed: a client that decoded it would not fail
/// the way one that reads the bytes as they are does.
fn gzip_bomb(fill: &[u8], last: &[u8]) -> Vec<u8> {
    let gzip = |data: &[u8]| {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(data).expect("gzip in memory");
        encoder.finish().expect("gzip in memory")
    };
    let mut bomb = gzip(&fill.repeat(1024 * 1024 / fill.len())).repeat(256);
    bomb.extend(gzip(last));
    bomb
}

/// Every request of `run` ended within 2 s (the case's `--timeout`) plus [`DEADLINE_SLACK_MS`].
fn ended_at_the_deadline(run: &Run) {
    for trace in run.traces() {
        let took = trace["end_ns"].as_u64().unwrap_or(0) - trace["send_ns"].as_u64().unwrap_or(0);
        let took_ms = took / 1_000_000;
        eprintln!("  request ended {took_ms} ms after its send");
        assert!(
            took_ms <= 2000 + DEADLINE_SLACK_MS,
            "a request ended {took_ms} ms after its send, past --timeout 2s + {DEADLINE_SLACK_MS} ms: {trace}"
        );
    }
}

/// A case with a 2 s timeout whose requests must end at the deadline.
fn deadline_case(name: &'static str, handler: super::Handler) -> Case {
    let mut case = Case::new(name, handler, Expect::Class("timeout"));
    case.timeout_secs = 2;
    case.n = 1;
    case.check = Some(ended_at_the_deadline);
    case
}

pub(super) fn cases() -> Vec<Case> {
    let mut cases = compression_cases();
    cases.extend(framing_cases());
    cases.extend(header_cases());
    cases.extend(deadline_cases());
    cases.extend(model_list_cases());
    cases
}

fn compression_cases() -> Vec<Case> {
    // Inflated: 256 MiB of empty deltas, then [DONE] (a success or a timeout). As sent:
    // bytes that are not UTF-8 (a transport error).
    let bomb = gzip_bomb(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{}}]}\n\n",
        b"data: [DONE]\n\n",
    );
    let mut stream = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        bomb.len()
    )
    .into_bytes();
    stream.extend_from_slice(&bomb);
    let mut stream_case = Case::new(
        "a gzip bomb as the stream",
        reply(stream),
        Expect::Class("transport"),
    );
    stream_case.max_rss_mib = 64;
    // Inflated: 256 MiB of spaces, then a model list (refused past 1 MiB). As sent: not JSON.
    let list_bomb = gzip_bomb(b" ", br#"{"object":"list","data":[{"id":"m"}]}"#);
    let list = whole(
        "200 OK",
        "application/json",
        "content-encoding: gzip\r\n",
        &list_bomb,
    );
    let mut list_case = Case::new(
        "a gzip bomb as the model list",
        reply(good_stream(2)),
        Expect::Refused("the model list is not JSON"),
    );
    list_case.models = list;
    list_case.model = false;
    list_case.max_rss_mib = 64;
    vec![stream_case, list_case]
}

fn framing_cases() -> Vec<Case> {
    // HTTP/1.0: no length, no chunks, the body ends when the server closes.
    let mut old = b"HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n".to_vec();
    old.extend_from_slice(chat_events("c", 3, None).as_bytes());
    old.extend_from_slice(b"data: [DONE]\n\n");
    let http10 = custom(move |_, mut socket: TcpStream| {
        let old = old.clone();
        async move {
            let _ = socket.write_all(&old).await;
            let _ = socket.shutdown().await;
        }
    });
    let mut informational =
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n".to_vec();
    informational.extend(good_stream(3));
    let headers_then_close = custom(|_, mut socket: TcpStream| async move {
        let _ = socket.write_all(stream_head("").as_bytes()).await;
        let _ = socket.shutdown().await;
    });
    let mut bogus_size = stream_head("").into_bytes();
    bogus_size.extend_from_slice(b"zz\r\ndata: {}\n\n\r\n0\r\n\r\n");
    let short_chunk = custom(|_, mut socket: TcpStream| async move {
        let mut answer = stream_head("").into_bytes();
        answer.extend_from_slice(b"ffffff\r\ndata: {\"choices\":[]}\n\n");
        let _ = socket.write_all(&answer).await;
        let _ = socket.shutdown().await;
    });
    // A byte order mark, then events separated by bare CRs.
    let mut cr = "\u{feff}".to_owned();
    cr.push_str(&chat_events("c", 3, None).replace('\n', "\r"));
    cr.push_str("data: [DONE]\r\r");
    let mut cr_only = stream_head("").into_bytes();
    cr_only.extend(chunk(cr.as_bytes()));
    cr_only.extend_from_slice(b"0\r\n\r\n");
    vec![
        Case::new(
            "HTTP 1.0 with no length, closed after DONE",
            http10,
            Expect::Class("success"),
        ),
        Case::new(
            "100 and 102 answers before the stream",
            reply(informational),
            Expect::Class("success"),
        ),
        Case::new(
            "headers, then the connection closes",
            headers_then_close,
            Expect::Class("transport"),
        ),
        Case::new(
            "a chunk size that is not hex",
            reply(bogus_size),
            Expect::Class("transport"),
        ),
        Case::new(
            "a chunk size past the data, then a close",
            short_chunk,
            Expect::Class("transport"),
        ),
        Case::new(
            "a BOM and bare-CR line ends",
            reply(cr_only),
            Expect::Class("success"),
        ),
    ]
}

/// `KEY` with the case of every ASCII letter swapped.
fn swapped_case() -> String {
    KEY.chars()
        .map(|c| {
            if c.is_ascii_lowercase() {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// The base64 (both alphabets) and hex forms of the key at each alignment, as 8-character
/// windows.
fn encoded_key_windows() -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let mut forms = vec![KEY.bytes().map(|b| format!("{b:02x}")).collect::<String>()];
    for align in 0..3 {
        let rest = &KEY.as_bytes()[align..];
        let whole = &rest[..rest.len() / 3 * 3];
        forms.push(STANDARD_NO_PAD.encode(whole));
        forms.push(URL_SAFE_NO_PAD.encode(whole));
    }
    forms
        .iter()
        .flat_map(|f| {
            f.as_bytes()
                .windows(8)
                .map(|w| String::from_utf8_lossy(w).into_owned())
        })
        .collect()
}

/// No window of an encoded form of the key in any output.
fn no_encoded_key(run: &Run) {
    let windows = encoded_key_windows();
    for (output, text) in [
        ("stdout", Some(&run.stdout)),
        ("stderr", Some(&run.stderr)),
        ("--json", run.json.as_ref()),
        ("--trace", run.trace.as_ref()),
        ("--html", run.html.as_ref()),
    ] {
        let Some(text) = text else { continue };
        for window in &windows {
            assert!(
                !text.contains(window.as_str()) && !text.contains(&window.to_ascii_uppercase()),
                "`{window}`, an encoded piece of the key, reached {output}"
            );
        }
    }
}

fn header_cases() -> Vec<Case> {
    let swapped = swapped_case();
    let rate_limited = whole(
        "429 Too Many Requests",
        "application/json",
        &format!(
            "{KEY}: yes\r\nretry-after: {KEY}\r\nretry-after: -5\r\nretry-after: 99999999999999999999999\r\nx-request-id: {swapped}\r\n"
        ),
        br#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#,
    );
    // The key as the chunk id, its case swapped, cut across two HTTP chunks written apart.
    let events = chat_events(&swapped, 3, None) + "data: [DONE]\n\n";
    let split = events.find(&swapped).map_or(0, |at| at + KEY.len() / 2);
    let split_key = custom(move |_, mut socket: TcpStream| {
        let events = events.clone();
        async move {
            let _ = socket
                .write_all(stream_head(&format!("{KEY}-header: 1\r\n")).as_bytes())
                .await;
            let _ = socket.write_all(&chunk(&events.as_bytes()[..split])).await;
            let _ = socket.flush().await;
            tokio::task::yield_now().await;
            let _ = socket.write_all(&chunk(&events.as_bytes()[split..])).await;
            let _ = socket.write_all(b"0\r\n\r\n").await;
            let mut rest = Vec::new();
            let _ = tokio::time::timeout(SERVER_LIMIT, socket.read_to_end(&mut rest)).await;
        }
    });
    // Every answer redirects to itself, the key in the target.
    let looping = custom(|_, mut socket: TcpStream| async move {
        let answer = whole(
            "307 Temporary Redirect",
            "text/plain",
            &format!("location: /v1/chat/completions?key={KEY}\r\n"),
            b"again",
        );
        let _ = socket.write_all(&answer).await;
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(SERVER_LIMIT, socket.read_to_end(&mut rest)).await;
    });
    // reqwest gives up after 10 hops: a transport error that names no URL.
    let mut redirect_loop = Case::new(
        "a redirect loop, followed",
        looping,
        Expect::Class("transport"),
    );
    redirect_loop.args = vec!["--follow-redirects"];
    let encoded = {
        use base64::Engine as _;
        let bearer = format!("Bearer {KEY}");
        let b64 = base64::engine::general_purpose::STANDARD.encode(&bearer);
        let hex: String = bearer.bytes().map(|b| format!("{b:02X}")).collect();
        whole(
            "401 Unauthorized",
            "application/json",
            &format!("x-request-id: {b64}\r\n"),
            format!(r#"{{"error":{{"message":"bad token {b64} (hex {hex})"}}}}"#).as_bytes(),
        )
    };
    let mut encoded_case = Case::new(
        "the key base64- and hex-encoded in an error and x-request-id",
        reply(encoded),
        Expect::Class("client_error"),
    );
    encoded_case.check = Some(no_encoded_key);
    // The key as the reason phrase of the status line and as chunk extensions.
    let mut odd_framing = format!(
        "HTTP/1.1 200 {KEY}\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    )
    .into_bytes();
    let events = chat_events("c", 3, None) + "data: [DONE]\n\n";
    odd_framing.extend_from_slice(format!("{:x};key={KEY}\r\n", events.len()).as_bytes());
    odd_framing.extend_from_slice(events.as_bytes());
    odd_framing.extend_from_slice(format!("\r\n0;key={KEY}\r\n\r\n").as_bytes());
    let reason = format!("HTTP/1.1 500 {KEY}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    vec![
        Case::new(
            "the key as a reason phrase and in chunk extensions",
            reply(odd_framing),
            Expect::Class("success"),
        ),
        Case::new(
            "the key as the reason phrase of a 500",
            reply(reason.into_bytes()),
            Expect::Class("server_error"),
        ),
        encoded_case,
        Case::new(
            "the key in a header name, retry-after and x-request-id of a 429",
            reply(rate_limited),
            Expect::Class("rate_limited"),
        ),
        Case::new(
            "the key split across chunks, its case swapped",
            split_key,
            Expect::Class("success"),
        ),
        redirect_loop,
    ]
}

fn deadline_cases() -> Vec<Case> {
    // Reads the request, then sends nothing.
    let silent = custom(|_, mut socket: TcpStream| async move {
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(SERVER_LIMIT, socket.read_to_end(&mut rest)).await;
    });
    // Fields the grammar ignores and comments, each block dispatching nothing, without end.
    let fields = writer(stream_head(""), |_| {
        Some(chunk(
            b": keep-alive\nid: 7\nretry: 99999999999\nevent: ping\nunknown: x\n\n"
                .repeat(256)
                .as_slice(),
        ))
    });
    // One byte every few milliseconds: the stream is never idle long, and never complete.
    let trickle = custom(|_, mut socket: TcpStream| async move {
        let _ = socket.write_all(stream_head("").as_bytes()).await;
        let events = chat_events("c", 10_000, None);
        let end = std::time::Instant::now() + SERVER_LIMIT;
        for piece in events.as_bytes().chunks(1) {
            if std::time::Instant::now() > end || socket.write_all(&chunk(piece)).await.is_err() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    });
    vec![
        deadline_case("no headers ever", silent),
        deadline_case("a flood of comments and ignored fields", fields),
        deadline_case("a byte every 2 ms", trickle),
    ]
}

fn model_list_cases() -> Vec<Case> {
    // A million tiny entries (about 20 MB), chunked so that no length warns the client.
    let many = custom(|_: Seen, _socket: TcpStream| async {});
    let mut entries = String::from(r#"{"object":"list","data":["#);
    for i in 0..1_000_000 {
        entries.push_str(&format!(r#"{{"id":"m{i}"}},"#));
    }
    entries.push_str(r#"{"id":"last"}]}"#);
    let mut list = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_vec();
    for piece in entries.as_bytes().chunks(64 * 1024) {
        list.extend(chunk(piece));
    }
    list.extend_from_slice(b"0\r\n\r\n");
    let mut million = Case::new(
        "a million model entries",
        many,
        Expect::Refused("larger than 1MiB"),
    );
    million.models = list;
    million.model = false;
    million.max_rss_mib = 64;
    // Nesting far past any JSON parser's recursion limit, within the size bound.
    let deep = format!(r#"{{"data":{}"#, "[".repeat(500_000));
    let mut nested = Case::new(
        "a model list nested 500,000 deep",
        custom(|_: Seen, _socket: TcpStream| async {}),
        Expect::Refused("the model list is not JSON"),
    );
    nested.models = whole("200 OK", "application/json", "", deep.as_bytes());
    nested.model = false;
    vec![million, nested]
}
