//! Tests of the bench client and runner against scripted servers on loopback (real HTTP).

mod embedded;
mod faults;
mod hostile_metrics;
mod hostile_stream;
mod hostile_text;
pub(crate) mod manual_run;
mod server;

use std::sync::Arc;
use std::time::Duration;

use tokenmeter::sink::{FirstToken, InMemorySink, SeriesSink, Sink};
use tokenmeter::{Labels, Meter};
use tokio::sync::watch;

use crate::api::Api;
use crate::api_key::ApiKey;
use crate::client::{Client, Target};
use crate::clock::BenchClock;
use crate::trace::Trace;
use crate::workload::{Prompt, RequestSpec};

use server::{Step, chat_stream, paced_chat_stream};

/// A client for the server at `addr`, its core sink, with `timeout`.
fn client(
    addr: std::net::SocketAddr,
    timeout: Duration,
    key: Option<&str>,
) -> (Arc<Client>, InMemorySink) {
    client_seen(addr, timeout, key, None)
}

/// [`client`], whose meter also counts the tokens it takes into `seen`.
fn client_seen(
    addr: std::net::SocketAddr,
    timeout: Duration,
    key: Option<&str>,
    seen: Option<TokensSeen>,
) -> (Arc<Client>, InMemorySink) {
    let clock = BenchClock::start();
    let core = InMemorySink::new();
    let mut meter = Meter::builder().sink(core.clone());
    if let Some(seen) = seen {
        // The server waits on each item the meter takes: it must see each at once.
        meter = meter.sink(seen).item_batch(1);
    }
    let target = Target {
        url: reqwest::Url::parse(&format!("http://{addr}/v1/chat/completions")).unwrap(),
        api: Api::Chat,
        model: tokenmeter_sim::DEFAULT_MODEL.into(),
        ignore_eos: false,
        follow_redirects: false,
        timeout,
        max_event_size: tokenmeter_openai::DEFAULT_MAX_EVENT_SIZE,
        tls: crate::tls::Tls::default(),
        shape: crate::request_shape::RequestShape::default(),
        tokenizer: None,
    };
    let key = key.map(|k| ApiKey::new(k.to_owned()));
    (
        Arc::new(Client::new(target, key, clock, meter).unwrap()),
        core,
    )
}

/// A sink that counts the tokens the client's meter has taken (the first and every later one,
/// each counted when the client reads and stamps it), for a server that paces its writes on
/// the client's reads ([`paced_chat_stream`]).
#[derive(Clone)]
struct TokensSeen(Arc<watch::Sender<u64>>);

impl TokensSeen {
    /// A count at 0 and a receiver that follows it.
    fn new() -> (Self, watch::Receiver<u64>) {
        let (count, seen) = watch::channel(0);
        (Self(Arc::new(count)), seen)
    }

    fn add(&self, tokens: u32) {
        self.0.send_modify(|n| *n += u64::from(tokens));
    }
}

impl Sink for TokensSeen {
    fn series(&self, _labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(self.clone())
    }
}

impl SeriesSink for TokensSeen {
    fn first_token(&self, event: &FirstToken) {
        self.add(event.tokens);
    }

    fn item(&self, _gap: Duration, tokens: u32) {
        self.add(tokens);
    }
}

fn spec(id: u64) -> RequestSpec {
    RequestSpec::single(id, Prompt::Text("the of and".into()), 3, 5)
}

async fn one(
    script: impl Fn(&server::Seen) -> Vec<Step> + Send + Sync + 'static,
    timeout: Duration,
) -> (Trace, InMemorySink) {
    let addr = server::start(script).await;
    let (client, core) = client(addr, timeout, None);
    (Trace::of(&client.send(&spec(0)).await), core)
}

#[tokio::test]
async fn a_good_stream_is_traced_and_metered_at_the_same_instants() {
    // Each token is written 3 ms after the client took the one before, so every gap the client
    // sees is at least 3 ms however late it reads (a busy machine); a client that stamped the
    // tokens only when the stream ended would never take the first and fail here.
    let (seen, taken) = TokensSeen::new();
    let addr = server::start(move |_| paced_chat_stream(5, Duration::from_millis(3), &taken)).await;
    let (client, core) = client_seen(addr, Duration::from_secs(10), None, Some(seen));
    let measured = client.send(&spec(0)).await;
    let trace = Trace::of(&measured);
    assert_eq!(trace.outcome, "success", "{trace:?}");
    assert_eq!(trace.status, Some(200));
    assert_eq!(trace.output_tokens, 5);
    assert_eq!(trace.finish_reason.as_deref(), Some("stop"));
    assert_eq!(trace.response_id.as_deref(), Some("r1"));
    // 5 token-bearing chunks (the role frame and usage carry none)
    let tokens: Vec<u32> = trace.chunks.iter().map(|c| c.1).collect();
    assert_eq!(tokens, [1, 1, 1, 1, 1]);
    assert_eq!(trace.first_token_ns, Some(trace.chunks[0].0));
    assert!(trace.send_ns < trace.chunks[0].0 && trace.chunks.last().unwrap().0 <= trace.end_ns);
    let record = measured.record().expect("the core's record");
    let gaps: Vec<Duration> = record.item_gaps().collect();
    assert_eq!(gaps.len(), 4);
    assert!(
        gaps.iter().all(|&gap| gap >= Duration::from_millis(2)),
        "{trace:?}"
    );

    // Another sink of the same meter saw the same first token and the same gaps, to the
    // nanosecond.
    let records = core.records();
    assert_eq!(records.len(), 1);
    let other = &records[0];
    assert_eq!(other.outcome, tokenmeter::Outcome::Success);
    assert_eq!(other.ttft, record.ttft);
    assert_eq!(other.output_tokens, 5);
    assert_eq!(other.input_tokens, Some(3));
    let core_gaps: Vec<Duration> = core.gaps().iter().map(|g| g.0).collect();
    assert_eq!(core_gaps, gaps);
}

#[tokio::test]
async fn the_request_is_openai_shaped_and_asks_for_usage() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let keep = seen.clone();
    let addr = server::start(move |s| {
        *keep.lock().unwrap() = Some(s.clone());
        chat_stream(1, Duration::ZERO)
    })
    .await;
    let (client, _) = client(addr, Duration::from_secs(5), Some("sk-test-123"));
    let trace = client.send(&spec(41)).await;
    assert!(trace.succeeded());
    let seen = seen.lock().unwrap().clone().unwrap();
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(seen.body["stream"], true);
    assert_eq!(seen.body["stream_options"]["include_usage"], true);
    assert_eq!(seen.body["max_tokens"], 5);
    assert_eq!(seen.body["messages"][0]["content"], "the of and");
    let has = |h: &str| seen.headers.iter().any(|l| l.eq_ignore_ascii_case(h));
    assert!(
        has("authorization: Bearer sk-test-123"),
        "{:?}",
        seen.headers
    );
    assert!(has("x-tokenmeter-request: 41"), "{:?}", seen.headers);
}

#[tokio::test]
async fn without_usage_output_tokens_come_from_chunks() {
    let (trace, _) = one(
        |_| {
            vec![
                Step::StreamHead,
                Step::Data(r#"{"choices":[{"delta":{"content":"a"}}]}"#.into()),
                Step::Data(
                    r#"{"choices":[{"delta":{"content":"b"},"finish_reason":"length"}]}"#.into(),
                ),
                Step::Data("[DONE]".into()),
                Step::End,
            ]
        },
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(
        (trace.outcome.as_str(), trace.output_tokens),
        ("success", 2)
    );
    assert_eq!(trace.usage, None);
    assert_eq!(trace.finish_reason.as_deref(), Some("length"));
}
