//! The `tokenmeter_openai::async_openai` helper end to end: async-openai's own client over real
//! HTTP on loopback, against the simulated server started in process (`tokenmeter-server`; the
//! client's counts equal serve's `usage`; a Responses stream gives the record of the chat
//! stream of the same answer; `response.failed`, 404 and 429 are classified; a stream dropped
//! after two chunks is `cancelled`) and against a scripted server that misbehaves (a malformed event, a body cut
//! mid-chunk): each request is recorded once, with the right class.

#[path = "serve_support/mod.rs"]
mod support;

use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    ChatCompletionRequestUserMessage, ChatCompletionStreamOptions, CompletionUsage,
    CreateChatCompletionRequest, CreateChatCompletionRequestArgs,
};
use async_openai::types::completions::CreateCompletionRequestArgs;
use async_openai::types::responses::{CreateResponseArgs, ResponseStreamEvent};
use futures_util::StreamExt;
use support::InProcess;
use tokenmeter::sink::InMemorySink;
use tokenmeter::{ErrorClass, FinishReason, Labels, Meter, Outcome, RequestRecord, Series};
use tokenmeter_openai::async_openai::send;
use tokenmeter_server::Config;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

const MODEL: &str = "async-openai-e2e";

type Client = async_openai::Client<OpenAIConfig>;

/// The simulated server, in process, answering as [`MODEL`] with `config`'s other settings.
fn start_serve(config: Config) -> InProcess {
    InProcess::start(config.model(MODEL).seed(7))
}

/// async-openai's client for `base` (an API base such as `http://127.0.0.1:PORT/v1`), with a
/// key of its own: the environment's key is never sent.
fn client(base: String) -> Client {
    let config = OpenAIConfig::new()
        .with_api_base(base)
        .with_api_key("sk-test-not-a-key");
    Client::build(support::http::reqwest_client(), config)
}

/// A client meter and its records.
fn client_meter(operation: &str) -> (Series, InMemorySink) {
    let memory = InMemorySink::new();
    let meter = Meter::builder().sink(memory.clone()).build();
    let series = meter.series(&Labels::client(operation).request_model(MODEL));
    (series, memory)
}

fn only(memory: &InMemorySink) -> RequestRecord {
    let mut records = memory.records();
    assert_eq!(records.len(), 1, "one request, one record: {records:?}");
    records.remove(0)
}

fn chat(max_tokens: u32) -> CreateChatCompletionRequest {
    CreateChatCompletionRequestArgs::default()
        .model(MODEL)
        .messages([ChatCompletionRequestUserMessage::from("Tell me about token streams.").into()])
        .max_completion_tokens(max_tokens)
        .stream_options(ChatCompletionStreamOptions {
            include_usage: Some(true),
            include_obfuscation: None,
        })
        .build()
        .expect("a chat request")
}

/// Waits (up to 10 s) until `serve.metric(name, labels)` is `value`, blocking only this thread.
fn wait_for(serve: &InProcess, name: &str, labels: &[(&str, &str)], value: f64) {
    let what = format!("{name}{labels:?}");
    tokio::task::block_in_place(|| {
        serve.wait_for(&what, value, Duration::from_secs(10), |serve| {
            serve.metric(name, labels)
        });
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_and_completion_streams_count_what_serve_sent() {
    let serve = start_serve(Config::default());
    let client = client(format!("{}/v1", serve.url()));

    let (series, memory) = client_meter("chat");
    let chat_api = client.chat();
    let mut chunks = send(chat_api.create_stream(chat(11)), series.start())
        .await
        .expect("serve answers");
    let mut usage: Option<CompletionUsage> = None;
    let mut text = String::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.expect("a chunk");
        for choice in &chunk.choices {
            text.push_str(choice.delta.content.as_deref().unwrap_or_default());
        }
        usage = chunk.usage.or(usage);
    }
    let usage = usage.expect("serve sends usage when asked");
    let record = only(&memory);
    assert_eq!(record.outcome, Outcome::Success);
    assert!(
        record
            .ttft
            .is_some_and(|t| t > Duration::ZERO && t <= record.e2e),
        "{record:?}"
    );
    assert_eq!(usage.completion_tokens, 11);
    assert_eq!(record.output_tokens, u64::from(usage.completion_tokens));
    assert_eq!(record.input_tokens, Some(u64::from(usage.prompt_tokens)));
    assert_eq!(
        record.items, 11,
        "one token per content chunk; the role frame is none"
    );
    assert_eq!(record.finish_reason, Some(FinishReason::Length));
    assert!(!text.is_empty());

    let (series, memory) = client_meter("text_completion");
    let ask = CreateCompletionRequestArgs::default()
        .model(MODEL)
        .prompt("Once upon a time")
        .max_tokens(6u32)
        .build()
        .expect("a completion request");
    let completions = client.completions();
    let chunks = send(completions.create_stream(ask), series.start())
        .await
        .expect("serve answers");
    let items: Vec<_> = chunks.collect().await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let record = only(&memory);
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(
        record.output_tokens, 6,
        "no usage asked: one token per text chunk"
    );
    assert!(record.ttft.is_some_and(|t| t > Duration::ZERO));
    assert_eq!(record.finish_reason, Some(FinishReason::Length));

    wait_for(
        &serve,
        "tokenmeter_requests_total",
        &[("outcome", "success")],
        2.0,
    );
    assert_eq!(serve.metric("tokenmeter_output_tokens_total", &[]), 17.0);
}

/// The simulator's decode step in [`responses_and_chat_meter_the_same_answer_alike`]: every
/// batch size takes it, so each token of a request running alone comes one step after the last.
const STEP: Duration = Duration::from_millis(40);

/// Runs `create` (a `create_stream(..)` not yet awaited) metered by the helper's [`send`] to
/// its end, and returns its record.
async fn metered<F, S, T>(create: F, operation: &str) -> RequestRecord
where
    F: std::future::IntoFuture<Output = Result<S, OpenAIError>>,
    S: futures_util::Stream<Item = Result<T, OpenAIError>> + Unpin,
    T: tokenmeter_openai::async_openai::StreamChunk + std::fmt::Debug,
{
    let (series, memory) = client_meter(operation);
    let mut items = send(create, series.start()).await.expect("serve answers");
    while let Some(item) = items.next().await {
        item.expect("an item async-openai reads");
    }
    only(&memory)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_and_chat_meter_the_same_answer_alike() {
    // A flat decode table: a request running alone gets a token every STEP.
    let config = Config::default()
        .decode_table(vec![(1, STEP), (256, STEP)])
        .prefill_base(STEP)
        .prefill_per_token(Duration::ZERO);
    let serve = start_serve(config);
    let client = client(format!("{}/v1", serve.url()));
    let prompt = "Tell me about token streams.";
    const TOKENS: u32 = 8;

    let ask = CreateChatCompletionRequestArgs::default()
        .model(MODEL)
        .messages([ChatCompletionRequestUserMessage::from(prompt).into()])
        .max_completion_tokens(TOKENS)
        .stream_options(ChatCompletionStreamOptions {
            include_usage: Some(true),
            include_obfuscation: None,
        })
        .build()
        .expect("a chat request");
    let chat_api = client.chat();
    let chat = metered(chat_api.create_stream(ask), "chat").await;

    let ask = CreateResponseArgs::default()
        .model(MODEL)
        .input(prompt)
        .max_output_tokens(TOKENS)
        .build()
        .expect("a Responses request");
    let responses_api = client.responses();
    let responses = metered(responses_api.create_stream(ask), "chat").await;

    let counts = |r: &RequestRecord| {
        (
            r.outcome,
            r.items,
            r.output_tokens,
            r.input_tokens,
            r.finish_reason,
        )
    };
    assert_eq!(
        counts(&chat),
        (
            Outcome::Success,
            u64::from(TOKENS),
            u64::from(TOKENS),
            chat.input_tokens,
            Some(FinishReason::Length)
        ),
        "{chat:?}"
    );
    assert!(chat.input_tokens.is_some_and(|n| n > 0), "{chat:?}");
    assert_eq!(counts(&responses), counts(&chat), "{responses:?}");

    // The timings are the simulator's steps as the client reads them: the same steps for both,
    // off by what scheduling on a loaded machine adds to either (the tolerance: one step for
    // TTFT, half a step for the mean ITL, which spreads a late chunk over 7 gaps).
    let (ttft_chat, ttft_responses) = (chat.ttft.expect("ttft"), responses.ttft.expect("ttft"));
    let (itl_chat, itl_responses) = (chat.tpot().expect("itl"), responses.tpot().expect("itl"));
    eprintln!(
        "ttft chat {ttft_chat:?} responses {ttft_responses:?}; \
         mean itl chat {itl_chat:?} responses {itl_responses:?}"
    );
    assert!(
        ttft_chat >= STEP && ttft_responses >= STEP,
        "a prefill step first"
    );
    assert!(ttft_chat.abs_diff(ttft_responses) < STEP);
    assert!(
        itl_chat >= STEP / 2 && itl_responses >= STEP / 2,
        "a step per token"
    );
    assert!(itl_chat.abs_diff(itl_responses) < STEP / 2);

    // serve counted both requests, with the tokens the client counted.
    wait_for(
        &serve,
        "tokenmeter_requests_total",
        &[("outcome", "success")],
        2.0,
    );
    assert_eq!(
        serve.metric("tokenmeter_output_tokens_total", &[]),
        f64::from(2 * TOKENS)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_response_is_a_server_error() {
    // Every request fails, before its first token (HTTP 500, which async-openai retries) or
    // mid-stream with `response.failed`: look for the second kind.
    let serve = start_serve(Config::default().error_rate(1.0));
    let client = client(format!("{}/v1", serve.url()));
    for _ in 0..5 {
        let (series, memory) = client_meter("chat");
        let ask = CreateResponseArgs::default()
            .model(MODEL)
            .input("Tell me about token streams.")
            .max_output_tokens(200u32)
            .build()
            .expect("a Responses request");
        let responses_api = client.responses();
        let Ok(events) = send(responses_api.create_stream(ask), series.start()).await else {
            continue; // a 500 before the stream
        };
        let events: Vec<_> = events.collect().await;
        let failed = events
            .iter()
            .any(|e| matches!(e, Ok(ResponseStreamEvent::ResponseFailed(_))));
        assert!(
            failed,
            "async-openai reads serve's response.failed: {events:?}"
        );
        let record = only(&memory);
        assert_eq!(record.outcome, Outcome::Error(ErrorClass::ServerError));
        assert!(record.output_tokens < 200, "{record:?}");
        return;
    }
    panic!("5 requests, none failed mid-stream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_without_a_stream_are_classified() {
    // An unknown path: 404 with vLLM's error body. Its integer `code` is not the string
    // async-openai's `ApiError` reads, so async-openai reports the body it could not read (as
    // against vLLM itself), and the class is read from that body.
    let serve = start_serve(Config::default());
    let (series, memory) = client_meter("chat");
    let wrong = client(format!("{}/no-such-api/v1", serve.url()));
    let chat_api = wrong.chat();
    let error = send(chat_api.create_stream(chat(3)), series.start())
        .await
        .expect_err("no stream");
    assert!(
        matches!(&error, OpenAIError::JSONDeserialize(_, body) if body.contains(r#""code":404"#)),
        "{error:?}"
    );
    let record = only(&memory);
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::ClientError));
    assert_eq!((record.ttft, record.output_tokens), (None, 0));

    // A full queue: 429, retried by async-openai's client after each `retry-after: 1`, then
    // given up: still one request, rate limited.
    let full = start_serve(Config::default().queue_limit(0));
    let (series, memory) = client_meter("chat");
    let client = client(format!("{}/v1", full.url()));
    let chat_api = client.chat();
    let error = send(chat_api.create_stream(chat(3)), series.start())
        .await
        .expect_err("no stream");
    assert!(
        matches!(&error, OpenAIError::JSONDeserialize(_, body) if body.contains(r#""code":429"#)),
        "{error:?}"
    );
    let record = only(&memory);
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::RateLimited));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_event_mid_stream_is_a_server_error() {
    // Every request fails, before its first token (HTTP 500, which async-openai retries) or
    // mid-stream with `data: {"error": ...}`: look for the second kind.
    let serve = start_serve(Config::default().error_rate(1.0));
    let client = client(format!("{}/v1", serve.url()));
    for _ in 0..5 {
        let (series, memory) = client_meter("chat");
        let chat_api = client.chat();
        let Ok(chunks) = send(chat_api.create_stream(chat(200)), series.start()).await else {
            continue; // a 500 before the stream
        };
        let items: Vec<_> = chunks.collect().await;
        let error = items
            .iter()
            .find_map(|item| item.as_ref().err())
            .expect("an error item");
        assert!(
            matches!(error, OpenAIError::JSONDeserialize(..)),
            "{error:?}"
        );
        let record = only(&memory);
        assert_eq!(record.outcome, Outcome::Error(ErrorClass::ServerError));
        assert!(
            record.ttft.is_some() && record.output_tokens > 0,
            "{record:?}"
        );
        return;
    }
    panic!("no stream of five had an error event");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_after_two_chunks_is_cancelled() {
    let serve = start_serve(Config::default());
    let client = client(format!("{}/v1", serve.url()));
    let (series, memory) = client_meter("chat");
    let chat_api = client.chat();
    let mut chunks = send(chat_api.create_stream(chat(5_000)), series.start())
        .await
        .expect("serve answers");
    for _ in 0..2 {
        chunks.next().await.expect("more chunks").expect("a chunk");
    }
    drop(chunks);

    let record = only(&memory);
    assert_eq!(record.outcome, Outcome::Cancelled);
    assert_eq!(record.output_tokens, 1, "the role frame, then one token");
    assert!(record.ttft.is_some());
    // async-openai's reader task sees the dropped stream and closes the connection: serve
    // cancels its request long before 5,000 tokens.
    wait_for(
        &serve,
        "tokenmeter_requests_total",
        &[("outcome", "cancelled")],
        1.0,
    );
}

/// A server on loopback that answers one request with `head` and then writes `body` as it is
/// (raw chunked encoding, possibly broken), then closes the connection.
async fn scripted(head: &'static str, body: String) -> String {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        // Read the request: its headers, then `content-length` bytes of body.
        let mut request = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            let Ok(n) = socket.read(&mut buffer).await else {
                return;
            };
            if n == 0 {
                return;
            }
            request.extend_from_slice(&buffer[..n]);
            let text = String::from_utf8_lossy(&request);
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if request.len() >= end + 4 + length {
                    break;
                }
            }
        }
        let _ = socket.write_all(head.as_bytes()).await;
        let _ = socket.write_all(body.as_bytes()).await;
        let _ = socket.shutdown().await;
    });
    format!("http://{addr}/v1")
}

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                        transfer-encoding: chunked\r\nconnection: close\r\n\r\n";

/// One HTTP chunk holding `event`.
fn http_chunk(event: &str) -> String {
    format!("{:x}\r\n{event}\r\n", event.len())
}

fn sse(data: &str) -> String {
    http_chunk(&format!("data: {data}\n\n"))
}

fn delta(content: &str, finish: &str) -> String {
    sse(&format!(
        r#"{{"id":"x","object":"chat.completion.chunk","created":0,"model":"m","choices":[{{"index":0,"delta":{{"content":"{content}"}},"finish_reason":{finish}}}]}}"#
    ))
}

/// Sends one chat request to `base` and reads the metered stream to its end.
async fn read_all(base: String) -> (Vec<Result<(), OpenAIError>>, RequestRecord) {
    let (series, memory) = client_meter("chat");
    let client = client(base);
    let chat_api = client.chat();
    let chunks = send(chat_api.create_stream(chat(5)), series.start())
        .await
        .expect("a stream");
    let items: Vec<_> = chunks.map(|item| item.map(drop)).collect().await;
    (items, only(&memory))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_event_is_a_transport_error_counted_once() {
    let body = [
        delta("Hel", "null"),
        sse("{\"id\": not json"),
        delta("lo", "\"stop\""),
        sse("[DONE]"),
        "0\r\n\r\n".to_owned(),
    ]
    .concat();
    let (items, record) = read_all(scripted(SSE_HEAD, body).await).await;
    assert_eq!(
        items.len(),
        3,
        "async-openai goes on after a chunk it cannot parse: {items:?}"
    );
    assert!(
        matches!(items[1], Err(OpenAIError::JSONDeserialize(..))),
        "{items:?}"
    );
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::Transport));
    assert_eq!(record.output_tokens, 1, "nothing counted after the end");
    assert!(record.ttft.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_cut_mid_chunk_is_a_transport_error_counted_once() {
    // A chunk that announces 0x40 bytes and sends 10, then the connection closes.
    let body = [delta("Hel", "null"), "40\r\ndata: {\"id".to_owned()].concat();
    let (items, record) = read_all(scripted(SSE_HEAD, body).await).await;
    assert!(items[0].is_ok(), "{items:?}");
    assert!(
        matches!(items.last(), Some(Err(OpenAIError::StreamError(_)))),
        "{items:?}"
    );
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::Transport));
    assert_eq!(record.output_tokens, 1);
}
