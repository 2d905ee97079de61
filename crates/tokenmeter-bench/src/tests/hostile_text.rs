//! What a hostile server sends never reaches the output as sent: the sanitiser (every piece of
//! the key, however escaped, before any cut; terminal controls), the arithmetic on its numbers
//! (saturating sums, unusable and implausible `usage`), and redirects (not followed unless
//! asked), over real HTTP on loopback where a server is involved.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokenmeter::Meter;

use super::server::{self, Step};
use super::{client, spec};
use crate::api::Api;
use crate::api_key::ApiKey;
use crate::client::{Client, Target};
use crate::clock::BenchClock;
use crate::discover;
use crate::gaps::Gaps;
use crate::sanitize::{PIECE, REDACTED, SHOWN_CHARS, Sanitizer};
use crate::summary::{summarize, usage_warnings};
use crate::trace::Trace;

const KEY: &str = "sk-planted-7f3a9c2e51d84b6f";
const LONG: Duration = Duration::from_secs(30);

fn sanitizer() -> Sanitizer {
    Sanitizer::new(Some(&ApiKey::new(KEY.to_owned())))
}

/// Every form of a piece of the key that must not be in `text`: each window of [`PIECE`]
/// characters, raw (any case), `\u`-escaped (either hex case) and percent-encoded.
fn assert_no_piece(text: &str, what: &str) {
    let lower = text.to_ascii_lowercase();
    for window in KEY.as_bytes().windows(PIECE) {
        let raw = std::str::from_utf8(window).unwrap().to_ascii_lowercase();
        let unicode: String = window.iter().map(|b| format!("\\u{b:04x}")).collect();
        let percent: String = window.iter().map(|b| format!("%{b:02x}")).collect();
        for form in [raw, unicode, percent] {
            assert!(!lower.contains(&form), "{what}: `{form}` in `{text}`");
        }
    }
}

#[test]
fn every_piece_of_the_key_is_redacted_wherever_it_sits_and_before_the_cut() {
    let clean = sanitizer();
    let mut checked = 0;
    for start in 0..KEY.len() {
        for end in start + PIECE..=KEY.len() {
            let piece = &KEY[start..end];
            for at in [0, 150, 180, 195, 199, 250, 295, 299, 305, 4090] {
                let text = format!("{}{piece} and after", "x".repeat(at));
                let shown = clean.clean(&text);
                assert_no_piece(&shown, &format!("{piece} at {at}"));
                assert!(shown.chars().count() <= SHOWN_CHARS + 1, "bounded");
                if at + 10 < SHOWN_CHARS {
                    assert!(shown.contains(REDACTED), "{shown}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}

/// Whether `bytes` hold `len` or more consecutive bytes of the key.
fn holds_key_bytes(bytes: &[u8], len: usize) -> bool {
    KEY.as_bytes()
        .windows(len)
        .any(|w| bytes.windows(len).any(|b| b == w))
}

/// Decodes every run of base64 characters of `text` at each of its 4 character offsets, and
/// every run of hex digits at each of its 2: none may yield 6 (base64) or 4 (hex) bytes of
/// the key in a row.
fn assert_no_encoded_piece(text: &str, what: &str) {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let runs = |keep: fn(char) -> bool| -> Vec<String> {
        text.split(|c: char| !keep(c))
            .filter(|r| r.len() >= 4)
            .map(str::to_owned)
            .collect()
    };
    for run in runs(|c| c.is_ascii_alphanumeric() || "+/-_".contains(c)) {
        for offset in 0..4.min(run.len()) {
            let part = &run[offset..];
            let part = &part[..part.len() / 4 * 4];
            for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
                if let Ok(bytes) = engine.decode(part) {
                    assert!(
                        !holds_key_bytes(&bytes, 6),
                        "{what}: base64 `{part}` decodes to key bytes in `{text}`"
                    );
                }
            }
        }
    }
    for run in runs(|c| c.is_ascii_hexdigit()) {
        for offset in 0..2.min(run.len()) {
            let digits = &run.as_bytes()[offset..];
            let bytes: Vec<u8> = digits
                .chunks_exact(2)
                .filter_map(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 16).ok())
                .collect();
            assert!(
                !holds_key_bytes(&bytes, 4),
                "{what}: hex `{run}` decodes to key bytes in `{text}`"
            );
        }
    }
}

#[test]
fn base64_and_hex_echoes_of_the_key_are_redacted() {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let clean = sanitizer();
    let mut checked = 0;
    // Prefixes of every length modulo 3 put the key at each alignment of the encoding.
    for prefix in [
        "",
        "B",
        "Be",
        "Bearer ",
        "Basic user:",
        "{\"authorization\":\"Bearer ",
    ] {
        let echoed = format!("{prefix}{KEY}\"}}");
        for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&echoed);
            let shown = clean.clean(&format!("token {encoded} end"));
            assert_no_encoded_piece(&shown, &format!("base64 of {prefix:?}"));
            assert!(shown.contains(REDACTED), "{shown}");
            checked += 1;
        }
        for upper in [false, true] {
            let hex: String = echoed
                .bytes()
                .map(|b| {
                    if upper {
                        format!("{b:02X}")
                    } else {
                        format!("{b:02x}")
                    }
                })
                .collect();
            let shown = clean.clean(&format!("trace {hex} end"));
            assert_no_encoded_piece(&shown, &format!("hex of {prefix:?}"));
            assert!(shown.contains(REDACTED), "{shown}");
            checked += 1;
        }
    }
    assert_eq!(checked, 36);
    // What does not hold the key is left alone.
    let other = STANDARD.encode("a harmless token of some length");
    assert_eq!(clean.clean(&other).as_str(), other);
}

#[test]
fn escaped_encoded_and_disguised_keys_are_redacted_whole() {
    let clean = sanitizer();
    let each = |f: &dyn Fn(u8) -> String| KEY.bytes().map(f).collect::<String>();
    let forms = [
        ("json \\u lower", each(&|b| format!("\\u{b:04x}"))),
        ("json \\u upper", each(&|b| format!("\\u{b:04X}"))),
        (
            "json mixed",
            each(&|b| {
                if b % 2 == 0 {
                    format!("\\u{b:04x}")
                } else {
                    char::from(b).to_string()
                }
            }),
        ),
        ("percent", each(&|b| format!("%{b:02X}"))),
        ("html decimal", each(&|b| format!("&#{b};"))),
        ("html hex", each(&|b| format!("&#x{b:x};"))),
        ("percent of json", each(&|b| format!("%5Cu{b:04x}"))),
        ("upper case", KEY.to_ascii_uppercase()),
        ("split by \\n", format!("{}\\n{}", &KEY[..12], &KEY[12..])),
        (
            "split by ESC",
            format!("{}\x1b[0m{}", &KEY[..12], &KEY[12..]),
        ),
        (
            "split by zero-width",
            format!("{}\u{200b}{}", &KEY[..12], &KEY[12..]),
        ),
        ("bearer", format!("Bearer {KEY}")),
    ];
    for (name, form) in forms {
        let shown = clean.clean(&format!("echo: {form} end"));
        assert_no_piece(&shown, name);
        assert!(shown.contains(REDACTED), "{name}: {shown}");
        assert!(
            shown.starts_with("echo: ") && shown.ends_with(" end"),
            "{name}: {shown}"
        );
    }
    // Far past where the old 200-character excerpt cut, in a JSON body as the library keeps it.
    let body = format!(
        r#"{{"error":{{"message":"{}\u0073\u006b-planted-7f3a9c2e51d84b6f"}}}}"#,
        "y".repeat(250)
    );
    assert_no_piece(&clean.clean(&body), "escaped past 250");
}

#[test]
fn short_keys_are_redacted_whole_and_no_key_redacts_nothing() {
    let short = Sanitizer::new(Some(&ApiKey::new("k3y".to_owned())));
    assert_eq!(short.clean("a k3y b").as_str(), "a [redacted] b");
    assert_eq!(Sanitizer::default().clean(KEY).as_str(), KEY);
    assert!(!format!("{:?}", sanitizer()).contains("planted"));
}

#[test]
fn terminal_control_sequences_never_pass() {
    let hostile = "\x1b]0;pwned\x07title \x1b[2J\x1b[31mred\x1b[0m \u{9b}31m c1 \u{7f}del\r\n\
                   line\ttab \u{202e}bidi\u{200b} \x1b(Bend \x1bPdcs\x1b\\ \u{9d}osc\u{9c}.";
    let shown = sanitizer().clean(hostile);
    assert_eq!(shown.as_str(), "title red  c1 del line tab bidi end  .");
    assert!(
        !shown.chars().any(|c| c.is_control()),
        "no control character: {shown:?}"
    );
    let unterminated = Sanitizer::default().clean("ok \x1b]52;c;c2stcGxhbnRlZA==");
    assert_eq!(unterminated.as_str(), "ok");
}

#[test]
fn huge_input_is_bounded_in_time_and_output() {
    let huge = format!("{}{KEY}", "z".repeat(10 * 1024 * 1024));
    let started = std::time::Instant::now();
    let shown = sanitizer().clean(&huge);
    assert!(shown.chars().count() <= SHOWN_CHARS + 1);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let repeated = KEY.repeat(2000);
    let shown = sanitizer().clean(&repeated);
    assert_no_piece(&shown, "repeated key");
}

/// A chat stream of `tokens` content chunks ending with `usage`.
fn stream_with_usage(tokens: u64, usage: &str) -> Vec<Step> {
    let mut steps = vec![Step::StreamHead];
    for i in 0..tokens {
        let finish = if i + 1 == tokens { "\"stop\"" } else { "null" };
        steps.push(Step::Data(format!(
            r#"{{"id":"r","choices":[{{"index":0,"delta":{{"content":"w"}},"finish_reason":{finish}}}]}}"#
        )));
    }
    steps.push(Step::Data(format!(r#"{{"choices":[],"usage":{usage}}}"#)));
    steps.push(Step::Data("[DONE]".into()));
    steps.push(Step::End);
    steps
}

#[tokio::test]
async fn usage_counts_saturate_and_implausible_ones_are_kept_and_reported() {
    let max = u64::MAX;
    let usage = format!(r#"{{"prompt_tokens":{max},"completion_tokens":{max}}}"#);
    let addr = server::start(move |_| stream_with_usage(5, &usage)).await;
    let (client, _) = client(addr, LONG, None);
    let traces = vec![client.send(&spec(0)).await, client.send(&spec(1)).await];
    assert!(traces.iter().all(|t| t.succeeded()), "{traces:?}");
    assert_eq!(traces[0].output_tokens(), max, "usage is kept");
    let summary = summarize(&traces, &Gaps::new(), &"ttft=10s".parse().unwrap());
    assert_eq!(summary.total_output_tokens, max, "saturated, not wrapped");
    // The input side is implausible: ignored, the input is what was sent, and flagged.
    let sent: u64 = traces.iter().map(|t| t.input_tokens).sum();
    assert_eq!(summary.total_input_tokens, sent);
    assert!(
        traces
            .iter()
            .all(|t| t.usage().is_some_and(|u| u.implausible_input))
    );
    assert_eq!(summary.usage_implausible_input, 2);
    assert!(usage_warnings(&traces)[0].contains("2 of 2 requests reported usage.prompt_tokens"));
    assert!(summary.total_token_throughput.is_finite());
    assert_eq!(summary.usage_discrepancies, 2, "above max_tokens");
}

#[tokio::test]
async fn zero_usage_against_five_chunks_is_kept_but_counted_and_warned() {
    let addr =
        server::start(|_| stream_with_usage(5, r#"{"prompt_tokens":7,"completion_tokens":0}"#))
            .await;
    let (client, _) = client(addr, LONG, None);
    let trace = client.send(&spec(0)).await;
    assert!(trace.succeeded(), "{trace:?}");
    assert_eq!(trace.output_tokens(), 0, "vLLM's rule: usage decides");
    let discrepancy = trace.rare.usage_discrepancy.expect("reported");
    assert_eq!(
        (discrepancy.completion_tokens, discrepancy.token_chunks),
        (0, 5)
    );
    let line = serde_json::to_string(&Trace::of(&trace)).unwrap();
    assert!(line.contains(r#""usage_discrepancy":{"completion_tokens":0,"token_chunks":5}"#));
    let traces = [trace];
    let summary = summarize(&traces, &Gaps::new(), &"ttft=10s".parse().unwrap());
    assert_eq!(summary.usage_discrepancies, 1);
    let warnings = usage_warnings(&traces);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("1 of 1 requests"), "{warnings:?}");
}

#[tokio::test]
async fn a_float_or_string_usage_keeps_the_stream_a_success() {
    for usage in [
        r#"{"prompt_tokens":7,"completion_tokens":5.0}"#,
        r#"{"prompt_tokens":7,"completion_tokens":"5"}"#,
        r#""five""#,
    ] {
        let addr = server::start(move |_| stream_with_usage(5, usage)).await;
        let (client, _) = client(addr, LONG, None);
        let trace = client.send(&spec(0)).await;
        assert!(trace.succeeded(), "{usage}: {trace:?}");
        assert_eq!(trace.output_tokens(), 5, "{usage}: counted from the chunks");
        assert!(trace.usage().is_some_and(|u| u.unusable), "{usage}");
        assert_eq!(trace.rare.usage_discrepancy, None);
        let traces = [trace];
        assert_eq!(
            summarize(&traces, &Gaps::new(), &"ttft=10s".parse().unwrap()).usage_unusable,
            1
        );
        assert!(usage_warnings(&traces)[0].contains("not a non-negative integer"));
    }
}

/// A server whose endpoint redirects (307, keeping the POST) to `/moved`, counting the requests
/// that reach `/moved`.
async fn redirecting() -> (std::net::SocketAddr, Arc<AtomicU64>) {
    let moved = Arc::new(AtomicU64::new(0));
    let count = moved.clone();
    let addr = server::start(move |seen| {
        if seen.path.starts_with("/moved") {
            count.fetch_add(1, Ordering::Relaxed);
            return super::server::chat_stream(2, Duration::ZERO);
        }
        if seen.path.starts_with("/v1/models") {
            return vec![Step::Redirect(302, format!("/moved/models?k={KEY}"))];
        }
        vec![Step::Redirect(
            307,
            format!("/moved?token={KEY}&c=\u{9b}2J"),
        )]
    })
    .await;
    (addr, moved)
}

fn following_client(addr: std::net::SocketAddr, follow: bool) -> Client {
    let clock = BenchClock::start();
    let target = Target {
        url: reqwest::Url::parse(&format!("http://{addr}/v1/chat/completions")).unwrap(),
        api: Api::Chat,
        model: "m".into(),
        ignore_eos: false,
        timeout: LONG,
        follow_redirects: follow,
        max_event_size: tokenmeter_openai::DEFAULT_MAX_EVENT_SIZE,
        tls: crate::tls::Tls::default(),
        shape: crate::request_shape::RequestShape::default(),
        tokenizer: None,
    };
    let key = Some(ApiKey::new(KEY.to_owned()));
    Client::new(target, key, clock, Meter::builder()).unwrap()
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_says_where_it_pointed() {
    let (addr, moved) = redirecting().await;
    let trace = Trace::of(&following_client(addr, false).send(&spec(0)).await);
    assert_eq!(trace.outcome, "error", "{trace:?}");
    assert_eq!(trace.status, Some(307));
    let message = trace.error.clone().unwrap();
    assert!(
        message.contains("HTTP 307 redirecting to /moved?token="),
        "{message}"
    );
    assert!(message.contains("--follow-redirects"), "{message}");
    assert!(!message.chars().any(char::is_control), "{message:?}");
    assert_no_piece(&message, "the redirect's target");
    assert_eq!(moved.load(Ordering::Relaxed), 0, "not followed");
}

#[tokio::test]
async fn with_the_flag_a_redirect_is_followed() {
    let (addr, moved) = redirecting().await;
    let trace = following_client(addr, true).send(&spec(0)).await;
    assert!(trace.succeeded(), "{trace:?}");
    assert_eq!(moved.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn discovery_neither_follows_redirects_nor_reads_more_than_a_mib() {
    let (addr, moved) = redirecting().await;
    let url = reqwest::Url::parse(&format!("http://{addr}/v1/chat/completions")).unwrap();
    let key = ApiKey::new(KEY.to_owned());
    let error = discover::model(
        &url,
        Some(&key),
        &Default::default(),
        false,
        &Default::default(),
    )
    .await
    .unwrap_err();
    let message = format!("{error:#}");
    assert!(message.contains("HTTP 302 redirecting to"), "{message}");
    assert!(message.contains("--follow-redirects"), "{message}");
    assert_no_piece(&message, "discovery's redirect");
    assert_eq!(moved.load(Ordering::Relaxed), 0);

    let big = format!(r#"{{"data":[{{"id":"{}"}}]}}"#, "m".repeat(2 * 1024 * 1024));
    let addr = server::start(move |_| vec![Step::Status(200, big.clone())]).await;
    let url = reqwest::Url::parse(&format!("http://{addr}/v1/chat/completions")).unwrap();
    let message = format!(
        "{:#}",
        discover::model(&url, None, &Default::default(), false, &Default::default())
            .await
            .unwrap_err()
    );
    assert!(message.contains("larger than 1MiB"), "{message}");
    assert!(message.len() < 1000, "{}", message.len());

    let addr = server::start(|_| {
        vec![Step::Status(
            401,
            format!(r#"{{"error":{{"message":"bad key {KEY} \u001b[2J"}}}}"#),
        )]
    })
    .await;
    let url = reqwest::Url::parse(&format!("http://{addr}/v1/chat/completions")).unwrap();
    let message = format!(
        "{:#}",
        discover::model(
            &url,
            Some(&key),
            &Default::default(),
            false,
            &Default::default()
        )
        .await
        .unwrap_err()
    );
    assert!(message.contains("HTTP 401"), "{message}");
    assert!(!message.contains('\x1b'), "{message:?}");
    assert_no_piece(&message, "discovery's error body");
}
