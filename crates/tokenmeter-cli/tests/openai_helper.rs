//! The `tokenmeter_openai` reqwest helper end to end, over real HTTP on loopback against the
//! simulated server started in process (`tokenmeter-server`, what `tokenmeter serve` runs):
//! what the client counts must equal what serve sent (`usage`) and what serve's own `/metrics`
//! counted; HTTP errors from serve's fault knobs are classified; a client that drops the stream
//! mid-way is `cancelled` on both sides.

#[path = "serve_support/mod.rs"]
mod support;

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use support::InProcess;
use tokenmeter::sink::InMemorySink;
use tokenmeter::{ErrorClass, FinishReason, Labels, Meter, Outcome, RequestRecord, Series};
use tokenmeter_openai::chunk::Usage;
use tokenmeter_openai::{StreamError, send};
use tokenmeter_server::Config;

const MODEL: &str = "openai-e2e";

/// The simulated server, in process, answering as [`MODEL`] with `config`'s other settings.
fn start_serve(config: Config) -> InProcess {
    InProcess::start(config.model(MODEL).seed(5))
}

/// Waits (up to 10 s) until `serve.metric(name, labels)` is `value`. Only this thread blocks:
/// the runtime's other worker goes on driving the client's connections (a dropped stream's
/// connection gets closed meanwhile, which is what serve may be waiting for).
fn wait_for(serve: &InProcess, name: &str, labels: &[(&str, &str)], value: f64) {
    let what = format!("{name}{labels:?}");
    tokio::task::block_in_place(|| {
        serve.wait_for(&what, value, Duration::from_secs(10), |serve| {
            serve.metric(name, labels)
        });
    });
}

/// A client meter and its records.
fn client_meter(operation: &str) -> (Series, InMemorySink) {
    let memory = InMemorySink::new();
    let meter = Meter::builder().sink(memory.clone()).build();
    let series = meter.series(&Labels::client(operation).request_model(MODEL));
    (series, memory)
}

fn post(http: &reqwest::Client, url: String, body: serde_json::Value) -> reqwest::RequestBuilder {
    http.post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
}

fn chat(max_tokens: u64) -> serde_json::Value {
    json!({
        "model": MODEL,
        "messages": [{"role": "user", "content": "Tell me about token streams, briefly."}],
        "max_tokens": max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    })
}

/// What the client saw of one stream.
#[derive(Debug, Default)]
struct Seen {
    token_chunks: u64,
    text: String,
    usage: Option<Usage>,
    error: Option<StreamError>,
}

/// Sends `body` to `path` and reads the metered stream to its end.
async fn stream(serve: &InProcess, series: &Series, path: &str, body: serde_json::Value) -> Seen {
    let http = support::http::reqwest_client();
    let mut seen = Seen::default();
    let url = format!("{}{path}", serve.url());
    let mut chunks = match send(post(&http, url, body), series.start()).await {
        Ok(chunks) => chunks,
        Err(error) => panic!("serve did not answer: {error}"),
    };
    while let Some(item) = chunks.next().await {
        match item {
            Ok(chunk) => {
                seen.token_chunks += u64::from(chunk.tokens());
                seen.text.push_str(&chunk.text());
                seen.usage = chunk.parsed.usage.or(seen.usage);
            }
            Err(error) => seen.error = Some(error),
        }
    }
    seen
}

fn only(memory: &InMemorySink) -> RequestRecord {
    let mut records = memory.records();
    assert_eq!(records.len(), 1, "one request, one record: {records:?}");
    records.remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_tokens_equal_serves_usage_and_its_metrics() {
    let serve = start_serve(Config::default());
    let mut output_total = 0;
    let mut input_total = 0;
    let mut client_ttft = Duration::ZERO;
    for (operation, path, body, n) in [
        ("chat", "/v1/chat/completions", chat(5), 5),
        ("chat", "/v1/chat/completions", chat(23), 23),
        (
            "text_completion",
            "/v1/completions",
            json!({"model": MODEL, "prompt": "Once upon a time", "max_tokens": 9,
                   "stream": true, "stream_options": {"include_usage": true}}),
            9,
        ),
    ] {
        let (series, memory) = client_meter(operation);
        let seen = stream(&serve, &series, path, body).await;
        assert!(seen.error.is_none(), "{path}: {:?}", seen.error);
        let usage = seen.usage.expect("serve sends usage");
        let record = only(&memory);
        assert_eq!(record.outcome, Outcome::Success, "{path}");
        assert_eq!(usage.completion_tokens, Some(n), "{path}");
        assert_eq!(seen.token_chunks, n, "{path}: one token per delta");
        assert_eq!(record.output_tokens, n, "{path}");
        assert_eq!(record.items, n, "{path}: the role frame is no token");
        assert_eq!(record.input_tokens, usage.prompt_tokens, "{path}");
        assert_eq!(record.finish_reason, Some(FinishReason::Length), "{path}");
        assert!(!seen.text.is_empty(), "{path}");
        let ttft = record.ttft.expect("a first token");
        assert!(ttft <= record.e2e && record.tpot().is_some(), "{record:?}");
        output_total += n;
        input_total += usage.prompt_tokens.expect("prompt tokens");
        client_ttft += ttft;
    }

    // The server records a request's end when it sends its last chunk: wait for the last one.
    wait_for(
        &serve,
        "tokenmeter_requests_total",
        &[("outcome", "success")],
        3.0,
    );
    let ended = serve.metric("tokenmeter_requests_total", &[]);
    assert_eq!(ended, 3.0, "no error and no cancellation on serve's side");
    let output = serve.metric("tokenmeter_output_tokens_total", &[]);
    assert_eq!(output, output_total as f64);
    let input = serve.metric("tokenmeter_input_tokens_total", &[]);
    assert_eq!(input, input_total as f64);
    // The client's TTFT includes the server's and the trip back.
    let server_ttft = serve.metric("gen_ai_server_time_to_first_token_seconds_sum", &[]);
    assert!(server_ttft > 0.0);
    assert!(client_ttft.as_secs_f64() >= server_ttft);
}

/// Sends one chat request and returns the client's error and record.
async fn failing(serve: &InProcess, body: serde_json::Value) -> (StreamError, RequestRecord) {
    let (series, memory) = client_meter("chat");
    let seen = stream(serve, &series, "/v1/chat/completions", body).await;
    let error = seen.error.expect("an error");
    let record = only(&memory);
    assert_eq!(record.outcome, Outcome::Error(error.class()), "{error}");
    (error, record)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_are_classified_from_the_status_and_the_body() {
    // Every request is refused: the queue limit is 0.
    let full = start_serve(Config::default().queue_limit(0));
    let (error, _) = failing(&full, chat(5)).await;
    let StreamError::Status(status) = &error else {
        panic!("{error:?}");
    };
    assert_eq!(
        (status.status, status.class),
        (429, ErrorClass::RateLimited)
    );
    assert!(status.message.contains("queue is full"), "{status}");
    assert!(error.to_string().starts_with("HTTP 429 (rate_limited): "));
    wait_for(
        &full,
        "tokenmeter_requests_total",
        &[("error_type", "rate_limited")],
        1.0,
    );

    // Every request fails: before its first token (HTTP 500) or mid-stream (an error event).
    let failing_serve = start_serve(Config::default().error_rate(1.0));
    let (error, record) = failing(&failing_serve, chat(1)).await;
    let StreamError::Status(status) = &error else {
        panic!("{error:?}");
    };
    assert_eq!(
        (status.status, status.class),
        (500, ErrorClass::ServerError)
    );
    assert!(status.message.contains("injected"), "{status}");
    assert_eq!(record.ttft, None);
    let mut mid_stream = None;
    for _ in 0..5 {
        if let (StreamError::Server(e), record) = failing(&failing_serve, chat(200)).await {
            mid_stream = Some((e, record));
            break;
        }
    }
    let (server_error, record) = mid_stream.expect("an error event after some tokens");
    assert_eq!(server_error.class, ErrorClass::ServerError);
    assert!(record.output_tokens > 0 && record.ttft.is_some());

    // A bad request: max_tokens 0 is a 400.
    let (error, _) = failing(&failing_serve, chat(0)).await;
    assert!(
        matches!(&error, StreamError::Status(s) if s.status == 400 && s.class == ErrorClass::ClientError),
        "{error:?}"
    );
    assert!(error.to_string().contains("max_tokens"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_mid_way_is_cancelled_on_both_sides() {
    let serve = start_serve(Config::default());
    let (series, memory) = client_meter("chat");
    let http = support::http::reqwest_client();
    let request = post(
        &http,
        format!("{}/v1/chat/completions", serve.url()),
        chat(5_000),
    );
    let mut chunks = send(request, series.start()).await.expect("answered");
    let mut tokens = 0;
    while tokens < 3 {
        let chunk = chunks.next().await.expect("more chunks").expect("a chunk");
        tokens += chunk.tokens();
    }
    wait_for(
        &serve,
        "tokenmeter_requests_running",
        &[("gen_ai_operation_name", "chat")],
        1.0,
    );
    drop(chunks); // the client gives up

    let record = only(&memory);
    assert_eq!(record.outcome, Outcome::Cancelled);
    assert_eq!(record.output_tokens, 3);
    assert!(record.ttft.is_some());
    // The server notices the closed connection and ends its request as cancelled, well before the
    // 5,000 tokens would have been generated (about 35 s).
    wait_for(
        &serve,
        "tokenmeter_requests_total",
        &[("outcome", "cancelled")],
        1.0,
    );
    wait_for(&serve, "tokenmeter_requests_running", &[], 0.0);
    let ended = serve.metric("tokenmeter_requests_total", &[]);
    assert_eq!(ended, 1.0, "only the cancellation was recorded");
    assert!(serve.metric("tokenmeter_output_tokens_total", &[]) < 5_000.0);
}

/// A reasoning model (`serve --reasoning-tokens 10`): its first 10 tokens come as
/// `reasoning_content` deltas. The client's TTFT is the first of them; its time to first
/// output token waits for the answer, 10 decode steps (7 ms each for a batch of one) later;
/// `usage` reports the prompt tokens the prefix cache had on a repeated prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reasoning_stream_delays_the_first_output_token_by_the_reasoning_time() {
    let serve = start_serve(Config::default().reasoning_tokens(10));
    let (series, memory) = client_meter("chat");
    let long = json!({
        "model": MODEL,
        "messages": [{"role": "user", "content": "a repeated question about caches ".repeat(20)}],
        "max_tokens": 16,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let first = stream(&serve, &series, "/v1/chat/completions", long.clone()).await;
    assert!(first.error.is_none(), "{first:?}");
    let record = only(&memory);
    let (ttft, output) = (
        record.ttft.expect("a first token"),
        record.first_output.expect("an answer token"),
    );
    // 10 reasoning tokens: the answer is 10 decode steps of 7 ms after the TTFT (70 ms by the
    // engine's clock; the client reads both chunks off the wire, a few ms either way)
    assert!(
        output >= ttft + Duration::from_millis(60),
        "ttft {ttft:?}, first output {output:?}"
    );
    assert_eq!(record.output_tokens, 16);
    assert_eq!(first.usage.and_then(|u| u.cached_tokens), Some(0));
    // the same prompt again: the prefix cache has its whole blocks
    memory.clear();
    let again = stream(&serve, &series, "/v1/chat/completions", long).await;
    let cached = again
        .usage
        .and_then(|u| u.cached_tokens)
        .expect("cached_tokens");
    assert!(cached > 100, "{again:?}");
    assert_eq!(only(&memory).cached_input_tokens, Some(cached));
    let served = serve.metric("tokenmeter_prefix_cache_hits_total", &[]);
    assert_eq!(served, cached as f64);
}
