//! The chunk stream over in-memory bodies, on a manual clock that moves 1 ms per byte chunk read.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_core::Stream;
use futures_util::stream;
use tokenmeter::sink::InMemorySink;
use tokenmeter::{
    Clock, ErrorClass, FinishReason, Labels, ManualClock, Meter, Outcome, Request, RequestRecord,
};

use crate::{Chunk, EventClock, SseChunks, StatusError, StreamError};

const MS: Duration = Duration::from_millis(1);
const ROLE: &str =
    "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
const DONE: &str = "data: [DONE]\n\n";

fn token(text: &str) -> String {
    format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n")
}

fn last(text: &str) -> String {
    format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":\"stop\"}}]}}\n\n"
    )
}

/// A meter on a manual clock, its sink, and a request started at time 0.
struct Setup {
    manual: ManualClock,
    memory: InMemorySink,
    request: Request,
}

fn setup() -> Setup {
    let manual = ManualClock::new();
    let (meter, memory) = Meter::manual(&manual);
    let request = meter.series(&Labels::client("chat")).start();
    Setup {
        manual,
        memory,
        request,
    }
}

/// The one record `memory` holds.
fn only(memory: &InMemorySink) -> RequestRecord {
    let records = memory.records();
    assert_eq!(records.len(), 1, "exactly one request end: {records:?}");
    records[0].clone()
}

/// `parts` as a body; reading each part moves `manual` forward by 1 ms.
fn body<T: AsRef<[u8]>>(
    manual: &ManualClock,
    parts: Vec<Result<T, std::io::Error>>,
) -> impl Stream<Item = Result<T, std::io::Error>> + Unpin {
    let manual = manual.clone();
    let mut parts = parts.into_iter();
    stream::poll_fn(move |_| {
        manual.advance(MS);
        Poll::Ready(parts.next())
    })
}

fn ok(parts: &[&str]) -> Vec<Result<String, std::io::Error>> {
    parts.iter().map(|p| Ok((*p).to_owned())).collect()
}

/// Polls an in-memory stream (never pending) to its next item.
fn next<S: Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    match Pin::new(stream).poll_next(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(item) => item,
        Poll::Pending => panic!("an in-memory body is always ready"),
    }
}

fn all<S: Stream + Unpin>(mut stream: S) -> Vec<S::Item> {
    std::iter::from_fn(|| next(&mut stream)).collect()
}

/// Runs `parts` through a metered stream to its end.
fn run(parts: &[&str]) -> (Vec<Result<Chunk, StreamError>>, RequestRecord) {
    let s = setup();
    let clock = Clock::manual(&s.manual);
    let items = all(SseChunks::new(body(&s.manual, ok(parts)), clock).meter(s.request));
    let record = only(&s.memory);
    (items, record)
}

#[test]
fn split_events_are_joined_and_stamped_when_complete_and_the_role_frame_is_no_token() {
    let content = token("Hi");
    let (head, tail) = content.split_at(20);
    let role_end = ROLE.len() - 1;
    let (items, record) = run(&[&ROLE[..role_end], "\n", head, tail, DONE]);
    let chunks: Vec<&Chunk> = items.iter().map(|i| i.as_ref().unwrap()).collect();
    let stamps: Vec<(Duration, u32, bool)> =
        chunks.iter().map(|c| (c.at, c.tokens(), c.done)).collect();
    assert_eq!(
        stamps,
        [(2 * MS, 0, false), (4 * MS, 1, false), (5 * MS, 0, true)]
    );
    assert_eq!(chunks[1].text(), "Hi");
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(
        record.ttft,
        Some(4 * MS),
        "TTFT is the content, not the role frame"
    );
    assert_eq!(
        (record.output_tokens, record.items, record.frames),
        (1, 1, 3)
    );
}

#[test]
fn done_ends_the_body_and_what_follows_is_ignored() {
    let (items, record) = run(&[&token("a"), DONE, "data: {not json\n\n", &token("b")]);
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(items[1].as_ref().unwrap().done);
    assert_eq!(
        (record.outcome, record.output_tokens),
        (Outcome::Success, 1)
    );
}

#[test]
fn a_finish_reason_without_done_is_complete_and_recorded() {
    let (items, record) = run(&[&token("a"), &last("b")]);
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(record.finish_reason, Some(FinishReason::Stop));
    assert_eq!(record.output_tokens, 2);
}

/// `vllm bench serve` 0.33 fails a stream that never carried a token ("Never received a valid
/// chunk to calculate TTFT"): a role frame, a finish reason and `[DONE]` are not an answer.
#[test]
fn a_stream_without_a_token_is_an_empty_response() {
    let finish = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    let usage = "data: {\"choices\":[],\"usage\":{\"completion_tokens\":0}}\n\n";
    for parts in [
        vec![ROLE, DONE],
        vec![ROLE, finish, usage, DONE],
        vec![ROLE, finish],
        vec![DONE],
    ] {
        let (items, record) = run(&parts);
        assert!(items.iter().all(Result::is_ok), "{items:?}");
        assert_eq!(
            record.outcome,
            Outcome::Error(ErrorClass::EmptyResponse),
            "{parts:?}"
        );
        assert_eq!((record.ttft, record.items), (None, 0));
    }
    // One empty content without a role is a token (vLLM counts it): not empty.
    let (_, record) = run(&[
        ROLE,
        "data: {\"choices\":[{\"delta\":{\"content\":\"\"}}]}\n\n",
        DONE,
    ]);
    assert_eq!((record.outcome, record.items), (Outcome::Success, 1));
}

#[test]
fn a_body_that_stops_early_is_truncated() {
    let (items, record) = run(&[ROLE, &token("a"), "data: {\"choi"]);
    assert_eq!(items.last(), Some(&Err(StreamError::Truncated)));
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::Transport));
    assert_eq!((record.output_tokens, record.ttft), (1, Some(2 * MS)));
    assert!(StreamError::Truncated.to_string().contains("truncated"));
}

#[test]
fn error_events_and_error_objects_end_the_stream_classified() {
    let cases = [
        (
            "event: error\ndata: {\"error\":{\"message\":\"engine died\",\"code\":503}}\n\n",
            ErrorClass::Overloaded,
            "engine died",
        ),
        (
            "data: {\"error\":{\"message\":\"slow down\",\"code\":429}}\n\n",
            ErrorClass::RateLimited,
            "slow down",
        ),
        (
            "event: error\ndata: the engine fell over\n\n",
            ErrorClass::ServerError,
            "the engine fell over",
        ),
    ];
    for (event, class, message) in cases {
        let (items, record) = run(&[&token("a"), event, &token("b"), DONE]);
        assert_eq!(items.len(), 2, "nothing after the error: {items:?}");
        let error = items[1].as_ref().unwrap_err();
        assert!(
            matches!(error, StreamError::Server(e) if e.class == class && e.message == message)
        );
        assert!(error.to_string().contains(message), "{error}");
        assert_eq!(record.outcome, Outcome::Error(class));
        assert_eq!(record.output_tokens, 1);
    }
}

#[test]
fn malformed_json_and_invalid_utf8_are_transport_errors() {
    let (items, record) = run(&[&token("a"), "data: {\"choices\": [oops\n\n"]);
    let error = items.last().unwrap().as_ref().unwrap_err();
    assert!(matches!(error, StreamError::Malformed(_)), "{error:?}");
    assert!(
        error.to_string().starts_with("malformed stream: "),
        "{error}"
    );
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::Transport));

    let s = setup();
    let parts: Vec<Result<&[u8], std::io::Error>> = vec![Ok(b"data: \xff\xfe\n\n")];
    let items = all(SseChunks::new(body(&s.manual, parts), Clock::default()).meter(s.request));
    assert!(
        matches!(&items[..], [Err(StreamError::Malformed(m))] if m.contains("UTF-8")),
        "{items:?}"
    );
    assert_eq!(
        only(&s.memory).outcome,
        Outcome::Error(ErrorClass::Transport)
    );
}

#[test]
fn transport_errors_are_classified_by_kind() {
    use std::io::ErrorKind;
    for (kind, class) in [
        (ErrorKind::ConnectionReset, ErrorClass::Transport),
        (ErrorKind::TimedOut, ErrorClass::Timeout),
        (ErrorKind::Other, ErrorClass::Transport),
    ] {
        let s = setup();
        let parts = vec![Ok(token("a")), Err(std::io::Error::new(kind, "gone"))];
        let items = all(SseChunks::new(body(&s.manual, parts), Clock::default()).meter(s.request));
        let error = items.last().unwrap().as_ref().unwrap_err();
        assert_eq!(error.class(), class, "{kind:?}");
        assert!(
            error
                .to_string()
                .starts_with("reading the stream failed: gone")
        );
        assert_eq!(only(&s.memory).outcome, Outcome::Error(class));
    }
}

#[test]
fn a_non_2xx_status_reads_the_body_and_ends_classified() {
    let cases: [(u16, &str, ErrorClass, &str); 5] = [
        (
            429,
            r#"{"error":{"message":"slow down"}}"#,
            ErrorClass::RateLimited,
            "slow down",
        ),
        (
            503,
            "",
            ErrorClass::Overloaded,
            "HTTP 503 (overloaded) with an empty body",
        ),
        (
            500,
            r#"{"error":{"message":"m","code":"rate_limit_exceeded"}}"#,
            ErrorClass::RateLimited,
            "m",
        ),
        (
            404,
            "<html>not here</html>",
            ErrorClass::ClientError,
            "<html>not here</html>",
        ),
        (
            504,
            r#"{"object":"error","message":"late","code":504}"#,
            ErrorClass::Timeout,
            "late",
        ),
    ];
    for (status, text, class, message) in cases {
        let s = setup();
        let (a, b) = text.split_at(text.len() / 2);
        let parts = ok(&[a, b]);
        let chunks =
            SseChunks::with_status(status, body(&s.manual, parts), Clock::manual(&s.manual));
        let items = all(chunks.meter(s.request));
        let [Err(StreamError::Status(error))] = &items[..] else {
            panic!("{status}: {items:?}");
        };
        assert_eq!((error.status, error.class), (status, class));
        let shown = StreamError::Status(error.clone()).to_string();
        assert!(shown.starts_with(&format!("HTTP {status} (")), "{shown}");
        assert!(shown.contains(message), "{shown}");
        let record = only(&s.memory);
        assert_eq!(record.outcome, Outcome::Error(class));
        assert_eq!(record.e2e, 3 * MS, "the request ends once the body is read");
    }
}

#[test]
fn an_endless_error_body_is_read_up_to_the_limit() {
    let s = setup();
    let endless = stream::repeat_with(|| Ok::<_, std::io::Error>(vec![b'x'; 1000]));
    let items = all(SseChunks::with_status(500, endless, Clock::default()).meter(s.request));
    let [Err(StreamError::Status(error))] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!(error.class, ErrorClass::ServerError);
    assert_eq!(
        error.message.chars().count(),
        crate::chunk::MESSAGE_LIMIT + 1,
        "an excerpt"
    );
}

#[test]
fn status_errors_refine_only_generic_statuses() {
    let overloaded = br#"{"error":{"type":"overloaded_error","message":"busy"}}"#;
    assert_eq!(
        StatusError::new(529, overloaded).class,
        ErrorClass::Overloaded
    );
    assert_eq!(
        StatusError::new(400, overloaded).class,
        ErrorClass::Overloaded
    );
    assert_eq!(
        StatusError::new(429, overloaded).class,
        ErrorClass::RateLimited
    );
    assert_eq!(StatusError::new(302, b"").class, ErrorClass::Other);
    let plain = StatusError::new(401, br#"{"error":"invalid api key"}"#);
    assert_eq!(
        (plain.class, plain.message.as_str()),
        (ErrorClass::ClientError, "invalid api key")
    );
}

#[test]
fn usage_sets_the_token_counts() {
    let usage =
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":7}}\n\n";
    let (_, record) = run(&[ROLE, &token("a"), &last("b"), usage, DONE]);
    assert_eq!((record.input_tokens, record.output_tokens), (Some(9), 7));
    assert_eq!(
        record.items, 2,
        "the chunks themselves are still counted as items"
    );

    let mut s = setup();
    s.request.set_input_tokens(3);
    let parts = ok(&[&last("b"), usage, DONE]);
    let chunks = SseChunks::new(body(&s.manual, parts), Clock::manual(&s.manual));
    let _ = all(chunks.meter(s.request).input_tokens_from_usage(false));
    let record = only(&s.memory);
    assert_eq!((record.input_tokens, record.output_tokens), (Some(3), 7));
}

#[test]
fn dropping_the_stream_mid_body_is_cancelled() {
    let s = setup();
    let parts = ok(&[ROLE, &token("a"), &token("b"), &token("c"), DONE]);
    let mut metered =
        SseChunks::new(body(&s.manual, parts), Clock::manual(&s.manual)).meter(s.request);
    for _ in 0..3 {
        assert!(next(&mut metered).unwrap().is_ok());
    }
    assert!(!metered.request().is_ended());
    drop(metered);
    let record = only(&s.memory);
    assert_eq!(record.outcome, Outcome::Cancelled);
    assert_eq!((record.output_tokens, record.ttft), (2, Some(2 * MS)));
}

/// The meter's clock shifted by 7 ns: chunk times that the meter's clock would not give.
#[derive(Clone, Debug)]
struct Shifted(ManualClock);

impl EventClock for Shifted {
    fn now(&self) -> Duration {
        self.0.now() + Duration::from_nanos(7)
    }
}

#[test]
fn token_bearing_chunks_are_recorded_at_their_parse_instant() {
    let s = setup();
    let parts = ok(&[ROLE, &token("a"), &last("b"), DONE]);
    let clock = Shifted(s.manual.clone());
    let items = all(SseChunks::new(body(&s.manual, parts), clock).meter(s.request));
    let token_times: Vec<Duration> = items
        .iter()
        .flatten()
        .filter(|c| c.tokens() > 0)
        .map(|c| c.at)
        .collect();
    let shift = Duration::from_nanos(7);
    assert_eq!(token_times, [2 * MS + shift, 3 * MS + shift]);
    let record = only(&s.memory);
    assert_eq!(
        record.ttft,
        Some(token_times[0]),
        "the chunk's time, not a later read"
    );
    assert_eq!(record.decode, Some(MS));
}

/// A body open after `[DONE]` (it never ends), or garbage and invalid UTF-8 after it: the
/// stream ends at `[DONE]` with a success, without reading further.
#[test]
fn the_stream_ends_at_done_whatever_follows() {
    let s = setup();
    let head = stream::iter([Ok::<_, std::io::Error>(format!("{}{DONE}", token("a")))]);
    // After [DONE] the body never answers: polling it again would be Pending forever.
    let open = futures_util::StreamExt::chain(head, stream::pending());
    let items = all(SseChunks::new(open, Clock::default()).meter(s.request));
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(only(&s.memory).outcome, Outcome::Success);

    for after in [
        &b"\xff\xfe garbage\n\n"[..],
        b"data: {\"error\":{\"code\":500}}\n\n",
    ] {
        let s = setup();
        let mut body = format!("{}{DONE}", token("a")).into_bytes();
        body.extend_from_slice(after);
        let parts: Vec<Result<Vec<u8>, std::io::Error>> = vec![Ok(body), Ok(after.to_vec())];
        let items = all(SseChunks::new(body_of(parts), Clock::default()).meter(s.request));
        assert!(items.iter().all(Result::is_ok), "{items:?}");
        assert_eq!(only(&s.memory).outcome, Outcome::Success);
    }
}

fn body_of<T>(parts: Vec<T>) -> impl Stream<Item = T> + Unpin {
    stream::iter(parts)
}

/// An event over the limit ends the stream as `transport`, naming the limit; one at the limit
/// is read.
#[test]
fn an_event_over_the_size_limit_ends_the_stream() {
    let s = setup();
    let long = token(&"x".repeat(2000));
    let items = all(
        SseChunks::new(body(&s.manual, ok(&[&token("a"), &long])), Clock::default())
            .max_event_size(1024)
            .meter(s.request),
    );
    assert_eq!(items.len(), 2, "{items:?}");
    let error = items[1].as_ref().unwrap_err();
    assert_eq!(error, &StreamError::EventTooLarge { limit: 1024 });
    assert!(error.to_string().contains("limit of 1024 bytes"), "{error}");
    assert_eq!(
        only(&s.memory).outcome,
        Outcome::Error(ErrorClass::Transport)
    );

    let (items, record) = run(&[&long, DONE]);
    assert_eq!((items.len(), record.outcome), (2, Outcome::Success));
}

/// Decoding is linear in the bytes: one 8 MiB line in 4 KiB pieces takes about 8 times as long
/// as a 1 MiB one (eventsource-stream re-scanned its buffer for each piece: 64 times).
#[test]
fn one_long_line_costs_time_linear_in_its_length() {
    let time = |size: usize| {
        let mut parts = vec![b"data: {\"choices\":[{\"delta\":{\"content\":\"".to_vec()];
        parts.extend(std::iter::repeat_n(vec![b'a'; 4096], size / 4096));
        parts.push(b"\"}}]}\n\n".to_vec());
        let body = stream::iter(parts.into_iter().map(Ok::<_, std::io::Error>));
        let start = std::time::Instant::now();
        let items: Vec<_> = futures_executor::block_on(futures_util::StreamExt::collect::<Vec<_>>(
            SseChunks::new(body, Clock::default()).max_event_size(usize::MAX),
        ));
        let elapsed = start.elapsed();
        assert_eq!(items[0].as_ref().map(|c| c.data.len() > size), Ok(true));
        elapsed
    };
    let _warm = time(1 << 20);
    let small = time(1 << 20);
    let large = time(8 << 20);
    assert!(
        large < small * 24 + Duration::from_millis(100),
        "1 MiB {small:?}, 8 MiB {large:?}: not linear"
    );
}

/// One poll decodes a bounded number of bytes: a body that is always ready still returns
/// `Pending` (after waking itself) while a long line arrives, so a timer raced against it runs.
#[test]
fn a_poll_decodes_a_bounded_number_of_bytes() {
    let parts = std::iter::once(b"data: ".to_vec())
        .chain(std::iter::repeat_n(vec![b'a'; 4096], 1024))
        .map(Ok::<_, std::io::Error>);
    let mut chunks = SseChunks::new(stream::iter(parts), Clock::default()).max_event_size(8 << 20);
    let waker = Arc::new(Woken::default());
    let waker_handle = std::task::Waker::from(waker.clone());
    let mut cx = Context::from_waker(&waker_handle);
    let mut pending = 0;
    loop {
        match Pin::new(&mut chunks).poll_next(&mut cx) {
            Poll::Pending => pending += 1,
            Poll::Ready(item) => {
                assert_eq!(item, Some(Err(StreamError::Truncated)));
                break;
            }
        }
    }
    // 4 MiB in pieces of at most 256 KiB per poll: at least 15 yields, each one woken.
    assert!(pending >= 15, "{pending}");
    assert_eq!(*waker.0.lock().unwrap(), pending);
}

#[derive(Default)]
struct Woken(Mutex<usize>);

impl std::task::Wake for Woken {
    fn wake(self: Arc<Self>) {
        *self.0.lock().unwrap() += 1;
    }

    fn wake_by_ref(self: &Arc<Self>) {
        *self.0.lock().unwrap() += 1;
    }
}

/// Issue 26, item 11: valid SSE that is not a chunk (an `event: ping` with `data: pong`, an
/// empty `data:` event, which the specification dispatches, a comment) is skipped and counted,
/// and the stream around it stays a success with every token.
#[test]
fn events_that_are_not_chunks_are_skipped_and_counted_not_fatal() {
    let s = setup();
    let clock = Clock::manual(&s.manual);
    let ping = "event: ping\ndata: pong\n\n";
    let (a, b) = (token("a"), last("b"));
    let parts = [
        ROLE,
        ping,
        &a,
        "data:\n\n",
        ": hi\n\n",
        "data:  \n\n",
        &b,
        ping,
        DONE,
    ];
    let mut chunks = SseChunks::new(body(&s.manual, ok(&parts)), clock).meter(s.request);
    let items = std::iter::from_fn(|| next(&mut chunks)).collect::<Vec<_>>();
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let tokens: u32 = items.iter().flatten().map(Chunk::tokens).sum();
    assert_eq!(tokens, 2);
    let (chunks, _request) = chunks.into_parts();
    let skipped = chunks.skipped();
    assert_eq!(
        (skipped.other_events, skipped.empty_events, skipped.comments),
        (2, 2, 1)
    );
    assert_eq!(skipped.events(), 4);
    let record = only(&s.memory);
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(record.output_tokens, 2);
}

/// Issue 26, item 11: a chunk with a field given twice and a usage count no float holds keep
/// the stream complete: the tokens are counted, the oddities flagged.
#[test]
fn duplicate_keys_and_huge_usage_counts_are_flagged_not_fatal() {
    let twice = "data: {\"choices\":[{\"delta\":{\"content\":\"x\",\"content\":\"y\"}}]}\n\n";
    let usage =
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1e400}}\n\n";
    let (items, record) = run(&[ROLE, twice, &last("b"), usage, DONE]);
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let chunks: Vec<&Chunk> = items.iter().flatten().collect();
    assert!(chunks[1].parsed.duplicate_keys && chunks[1].tokens() == 1);
    assert_eq!(chunks[1].text(), "y", "the last value wins");
    let usage = chunks[3].parsed.usage.unwrap();
    assert_eq!(
        (usage.prompt_tokens, usage.completion_tokens, usage.unusable),
        (Some(3), None, true)
    );
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(record.output_tokens, 2, "counted from the chunks");
}

/// Issue 29, item 5: a Responses API stream (typed `event:` lines, no `[DONE]`) is metered
/// as the chat stream of the same answer is: the same tokens at the same instants, the same
/// usage and finish reason, success at its end; a `response.failed` ends it with its class.
#[test]
fn a_responses_stream_is_metered_as_the_same_chat_stream() {
    let typed = |kind: &str, rest: &str| {
        format!("event: {kind}\ndata: {{\"type\":\"{kind}\",\"sequence_number\":0{rest}}}\n\n")
    };
    let response = |status: &str, usage: &str| {
        format!(r#","response":{{"id":"resp_1","status":"{status}","output":[],"usage":{usage}}}"#)
    };
    let delta = |text: &str| {
        typed(
            "response.output_text.delta",
            &format!(r#","delta":"{text}""#),
        )
    };
    let usage = r#"{"input_tokens":8,"output_tokens":2,"total_tokens":10}"#;
    let responses = [
        typed("response.created", &response("in_progress", "null")),
        typed("response.in_progress", &response("in_progress", "null")),
        typed(
            "response.output_item.added",
            r#","item":{"type":"message"}"#,
        ),
        typed(
            "response.content_part.added",
            r#","part":{"type":"output_text"}"#,
        ),
        delta("a"),
        delta("b"),
        typed("response.output_text.done", r#","text":"ab""#),
        typed("response.content_part.done", ""),
        typed("response.output_item.done", ""),
        typed("response.completed", &response("completed", usage)),
    ];
    let chat_usage =
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":2}}\n\n";
    let chat = [
        ROLE.to_owned(),
        ": a\n\n".to_owned(),
        ": b\n\n".to_owned(),
        ": c\n\n".to_owned(),
        token("a"),
        token("b"),
        ": d\n\n".to_owned(),
        ": e\n\n".to_owned(),
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n".to_owned(),
        chat_usage.to_owned(),
        DONE.to_owned(),
    ];
    let metered = |parts: &[String]| {
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        run(&parts)
    };
    let (items, record) = metered(&responses);
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let (_, chat) = metered(&chat);
    assert_eq!(record.outcome, Outcome::Success);
    assert_eq!(record.finish_reason, Some(FinishReason::Stop));
    assert_eq!((record.output_tokens, record.input_tokens), (2, Some(8)));
    assert_eq!(
        record.ttft,
        Some(5 * MS),
        "the first delta is the 5th part read"
    );
    for (name, ours, theirs) in [
        ("ttft", record.ttft, chat.ttft),
        ("second token", record.second_token, chat.second_token),
        ("decode", record.decode, chat.decode),
    ] {
        assert_eq!(ours, theirs, "{name}");
    }
    assert_eq!(
        (record.output_tokens, record.input_tokens, record.items),
        (chat.output_tokens, chat.input_tokens, chat.items)
    );
    let text: String = items.iter().flatten().map(Chunk::text).collect();
    assert_eq!(text, "ab");

    let failed = typed(
        "response.failed",
        r#","response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"boom"}}"#,
    );
    let (items, record) = metered(&[delta("a"), failed]);
    assert!(
        matches!(items.last(), Some(Err(StreamError::Server(_)))),
        "{items:?}"
    );
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::ServerError));
    let error = "event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"later\"}\n\n".to_owned();
    let (_, record) = metered(&[delta("a"), error]);
    assert_eq!(record.outcome, Outcome::Error(ErrorClass::RateLimited));
    // `response.completed` ends the stream as `[DONE]` does: what follows is not read.
    let completed = typed("response.completed", &response("completed", usage));
    let after = "data: not json\n\n".to_owned();
    let (items, record) = metered(&[delta("a"), completed, after]);
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert_eq!(record.outcome, Outcome::Success);
    // Ended before `response.completed`: truncated, as a chat stream without its end is.
    let (items, record) = metered(&[delta("a")]);
    assert_eq!(items.last(), Some(&Err(StreamError::Truncated)));
    assert!(matches!(record.outcome, Outcome::Error(_)));
}
