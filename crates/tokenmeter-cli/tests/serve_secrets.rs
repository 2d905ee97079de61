//! The server side of "API keys are never shown": clients send a planted key to a real
//! `tokenmeter serve` as a bearer token, in other headers, in the URL, in prompts, model names
//! and other fields, and in fields of the wrong type (which serde would quote in its error);
//! the server also has it in its environment. The key appears in nothing the server outputs:
//! stdout, stderr (including what it prints on Ctrl-C), response headers and bodies, error
//! bodies, mid-stream error events, `/metrics`, `/slo`. Prompts and request model names never
//! become labels. `tokenmeter serve` has no OTLP exporter and writes no trace, so there is
//! nothing else to search.

// The real `tokenmeter serve` process: what it prints (stdout, stderr, at Ctrl-C) is under test.
#[path = "serve_support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::json;
use support::http::{self, Response};
use support::slo::write_chat_spec;
use support::{Exposition, Serve};
use tokenmeter_tests::TempDir;

const KEY: &str = "sk-planted-serve-4c1e9b7d20a3";
/// Parts of the key that must not appear either.
const KEY_PARTS: [&str; 3] = [KEY, "sk-planted", "4c1e9b7d20a3"];
/// Put in every prompt: prompts must not reach any output either.
const PROMPT_MARKER: &str = "prompt-marker-6d2f";
/// Put in every request's model name.
const MODEL_MARKER: &str = "model-marker-8b1a";
const SERVED_MODEL: &str = "served-model";

/// Every header a client might carry a credential in, and the key as a header name.
fn headers() -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = [
        ("Authorization", format!("Bearer {KEY}")),
        ("Proxy-Authorization", format!("Bearer {KEY}")),
        ("X-Api-Key", KEY.to_owned()),
        ("Api-Key", KEY.to_owned()),
        ("OpenAI-Organization", KEY.to_owned()),
        ("Cookie", format!("session={KEY}")),
        ("User-Agent", format!("client/{KEY}")),
        ("X-Request-Id", KEY.to_owned()),
        ("Content-Type", "application/json".to_owned()),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_owned(), v))
    .collect();
    headers.push((format!("X-{KEY}"), "1".to_owned()));
    headers
}

fn model() -> String {
    format!("{MODEL_MARKER}-{KEY}")
}

fn chat(stream: bool) -> String {
    json!({
        "model": model(),
        "user": KEY,
        "stop": [KEY],
        "metadata": {"api_key": KEY},
        "messages": [
            {"role": "system", "content": format!("{PROMPT_MARKER}: the key is {KEY}")},
            {"role": "user", "content": [{"type": "text", "text": format!("{PROMPT_MARKER} {KEY}")}]},
        ],
        "max_tokens": 6,
        "stream": stream,
        "stream_options": {"include_usage": true},
    })
    .to_string()
}

fn completion(stream: bool) -> String {
    json!({
        "model": model(),
        "prompt": format!("{PROMPT_MARKER} {KEY}"),
        "max_tokens": 6,
        "stream": stream,
    })
    .to_string()
}

/// Bodies the server refuses, each quoting the key where serde would echo it.
fn bad_bodies() -> Vec<(&'static str, String)> {
    let message = json!([{"role": "user", "content": format!("{PROMPT_MARKER} {KEY}")}]);
    let chat = "/v1/chat/completions";
    let completions = "/v1/completions";
    vec![
        (chat, json!({"model": model(), "messages": KEY}).to_string()),
        (
            chat,
            json!({"messages": message, "max_tokens": KEY}).to_string(),
        ),
        (
            chat,
            json!({"messages": message, "stream": KEY}).to_string(),
        ),
        (
            chat,
            json!({"messages": message, "stream_options": {"include_usage": KEY}}).to_string(),
        ),
        (chat, json!({"messages": message, "n": KEY}).to_string()),
        (chat, json!({"messages": [], "model": model()}).to_string()),
        (
            chat,
            json!({"messages": message, "n": 2, "model": model()}).to_string(),
        ),
        (
            chat,
            json!({"messages": [{KEY: KEY}], "max_tokens": 0}).to_string(),
        ),
        (chat, format!(r#"{{"model":"{KEY}"#)),
        (chat, KEY.to_owned()),
        (completions, json!({"prompt": {KEY: 1}}).to_string()),
        (completions, json!({"prompt": [KEY, KEY]}).to_string()),
        (
            completions,
            json!({"prompt": KEY, "max_tokens": KEY}).to_string(),
        ),
    ]
}

/// Sends one request with every credential header.
fn send(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> Response {
    let owned = headers();
    let headers: Vec<(&str, &str)> = owned
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    http::request(addr, method, path, &headers, body.as_bytes()).unwrap_or_else(|e| {
        panic!(
            "{method} {}: {e}",
            path.split('?').next().unwrap_or_default()
        )
    })
}

#[test]
fn a_planted_key_reaches_no_output_of_serve() {
    for profile in ["semconv", "vllm"] {
        let dir = TempDir::new("serve-secrets");
        let spec = write_chat_spec(&dir.0, "100ms");
        let otlp_headers = format!("authorization=Bearer {KEY}");
        let mut server = Serve::start_logged(
            &[
                "--profile",
                profile,
                "--model",
                SERVED_MODEL,
                // Requests name the model with the key in it: served, to show that it
                // reaches no label; `GET /v1/models/KEY` below is the 404 that withholds it.
                "--accept-any-model",
                "--slo-spec",
                spec.to_str().expect("a UTF-8 path"),
                "--max-batch",
                "2",
                "--queue-limit",
                "2",
                "--error-rate",
                "0.4",
                "--seed",
                "5",
            ],
            &[
                ("OPENAI_API_KEY", KEY),
                ("TOKENMETER_API_KEY", KEY),
                ("OTEL_EXPORTER_OTLP_HEADERS", &otlp_headers),
            ],
            &dir.0,
        );
        let responses = exercise(&server);
        let statuses: BTreeSet<u16> = responses.iter().map(|(_, r)| r.status).collect();
        for status in [200, 400, 404, 405, 429, 500] {
            assert!(
                statuses.contains(&status),
                "{profile}: no {status} among {statuses:?}"
            );
        }
        assert!(
            responses.iter().any(|(_, r)| r.status == 200
                && r.head.contains("text/event-stream")
                && r.text().contains(r#"{"error""#)),
            "{profile}: no stream ended in an error event"
        );

        let metrics = send(server.addr, "GET", "/metrics", "");
        let slo = send(server.addr, "GET", "/slo", "");
        labels_come_from_the_server(profile, &metrics.text());
        assert!(
            slo.text().contains("\"chat\""),
            "{profile}: /slo judged: {}",
            slo.text()
        );

        let status = server.interrupt(Duration::from_secs(15));
        assert!(status.success(), "{profile}: serve stopped with {status}");
        let (out, err) = server.logs.clone().expect("logged");
        let stdout = std::fs::read_to_string(out).expect("stdout.log");
        let stderr = std::fs::read_to_string(err).expect("stderr.log");
        assert!(
            stderr.contains(&format!("model {SERVED_MODEL}"))
                && stderr.contains("engine steps by batch size"),
            "{profile}: stderr holds the start line and the Ctrl-C report:\n{stderr}"
        );

        let mut outputs: Vec<(String, String)> = vec![
            ("stdout".to_owned(), stdout),
            ("stderr".to_owned(), stderr),
            ("/metrics".to_owned(), whole(&metrics)),
            ("/slo".to_owned(), whole(&slo)),
        ];
        outputs.extend(responses.iter().map(|(what, r)| (what.clone(), whole(r))));
        for (what, text) in &outputs {
            for secret in KEY_PARTS.iter().chain([&PROMPT_MARKER, &MODEL_MARKER]) {
                if let Some(at) = text.find(secret) {
                    panic!("{profile}: a planted value leaked into {what} at byte {at}");
                }
            }
        }
        assert!(
            responses.iter().any(|(_, r)| r.status == 400
                && r.text()
                    .contains("`max_tokens` must be a whole number, not a string")),
            "{profile}: the 400s still say what was wrong, without quoting it"
        );
        println!(
            "{profile}: {} responses (statuses {statuses:?}) and {} other outputs searched, {} bytes in all",
            responses.len(),
            outputs.len() - responses.len(),
            outputs.iter().map(|(_, t)| t.len()).sum::<usize>()
        );
    }
}

/// A response's status line, headers and de-chunked body (so a value split across chunks is
/// whole again).
fn whole(response: &Response) -> String {
    format!("{}\r\n\r\n{}", response.head, response.text())
}

/// Sends every kind of request; returns what each one was and its response.
fn exercise(server: &Serve) -> Vec<(String, Response)> {
    let addr = server.addr;
    let mut out = Vec::new();
    let mut record = |what: String, response: Response| out.push((what, response));
    // A burst larger than the batch and the queue: some are refused with 429.
    let burst: Vec<Response> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..16)
            .map(|_| scope.spawn(|| send(addr, "POST", "/v1/chat/completions", &chat(true))))
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("a burst request"))
            .collect()
    });
    for response in burst {
        record("a burst stream".to_owned(), response);
    }
    for (path, body) in [
        ("/v1/chat/completions", chat(false)),
        ("/v1/completions", completion(true)),
        ("/v1/completions", completion(false)),
        (
            &format!("/v1/chat/completions?api_key={KEY}") as &str,
            chat(true),
        ),
    ] {
        let what = format!("POST {}", path.split('?').next().unwrap_or_default());
        record(what, send(addr, "POST", path, &body));
    }
    for (i, (path, body)) in bad_bodies().into_iter().enumerate() {
        record(
            format!("POST {path} with bad body {i}"),
            send(addr, "POST", path, &body),
        );
    }
    for (what, path) in [
        ("an unknown path", format!("/v1/{KEY}")),
        ("/metrics with a query", format!("/metrics?token={KEY}")),
        ("/slo with a query", format!("/slo?key={KEY}")),
        ("/health", "/health".to_owned()),
        ("/v1/models", "/v1/models".to_owned()),
        (
            "a model that is not served",
            format!("/v1/models/{}", model()),
        ),
    ] {
        record(format!("GET {what}"), send(addr, "GET", &path, ""));
    }
    record(
        "GET /v1/chat/completions".to_owned(),
        send(addr, "GET", "/v1/chat/completions", ""),
    );
    // Injected failures, before the first token (500) and within a stream (an error event).
    let mut failed = (false, false);
    for _ in 0..200 {
        if failed.0 && failed.1 {
            break;
        }
        let response = send(addr, "POST", "/v1/chat/completions", &chat(true));
        failed.0 |= response.status == 500;
        failed.1 |= response.status == 200 && response.text().contains(r#"{"error""#);
        record("a stream that may fail".to_owned(), response);
    }
    out
}

/// Every label value on `/metrics` comes from the server: the model labels hold the served
/// model, and no label holds anything a request carried.
fn labels_come_from_the_server(profile: &str, text: &str) {
    let exposition = Exposition::parse(text).expect("/metrics parses");
    let mut models = BTreeSet::new();
    for sample in &exposition.samples {
        for (name, value) in &sample.labels {
            if matches!(
                name.as_str(),
                "gen_ai_request_model" | "gen_ai_response_model" | "model_name"
            ) {
                models.insert(value.clone());
            }
            for secret in KEY_PARTS.iter().chain([&PROMPT_MARKER, &MODEL_MARKER]) {
                assert!(
                    !value.contains(secret),
                    "{profile}: label {name} of {} holds a planted value",
                    sample.name
                );
            }
        }
    }
    assert_eq!(
        models,
        BTreeSet::from([SERVED_MODEL.to_owned()]),
        "{profile}: model labels name the served model only"
    );
}
