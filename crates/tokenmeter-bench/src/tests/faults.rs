//! Every way a server can fail gives a classified outcome, never a panic.

use std::time::Duration;

use tokenmeter::{ErrorClass, Outcome};

use super::server::{Step, chat_stream};
use super::{client, one, spec};
use crate::progress::Progress;
use crate::runner::{self, Load};
use crate::summary::summarize;
use crate::trace::Trace;

/// The timeout of the requests meant to time out (a server that stalls).
const SHORT: Duration = Duration::from_millis(400);
/// The timeout of the others: far beyond what a loaded machine may take to answer, so that
/// they end with their own outcome, never a timeout.
const LONG: Duration = Duration::from_secs(30);

fn head_and_one_token() -> Vec<Step> {
    vec![
        Step::StreamHead,
        Step::Data(r#"{"choices":[{"delta":{"content":"a"}}]}"#.into()),
    ]
}

fn with(mut steps: Vec<Step>, more: Vec<Step>) -> Vec<Step> {
    steps.extend(more);
    steps
}

/// (name, script, expected class, message fragment)
fn cases() -> Vec<(&'static str, Vec<Step>, ErrorClass, &'static str)> {
    let status = |code: u16| {
        vec![Step::Status(
            code,
            format!(r#"{{"error":{{"message":"status {code}"}}}}"#),
        )]
    };
    vec![
        ("429", status(429), ErrorClass::RateLimited, "HTTP 429"),
        ("503", status(503), ErrorClass::Overloaded, "status 503"),
        ("500", status(500), ErrorClass::ServerError, "HTTP 500"),
        ("404", status(404), ErrorClass::ClientError, "HTTP 404"),
        ("504", status(504), ErrorClass::Timeout, "HTTP 504"),
        (
            "malformed json",
            with(
                head_and_one_token(),
                vec![Step::Data("{\"choices\": [oops".into()), Step::End],
            ),
            ErrorClass::Transport,
            "malformed",
        ),
        (
            "invalid utf-8",
            with(
                head_and_one_token(),
                vec![Step::Raw(b"data: \xff\xfe\n\n".to_vec()), Step::End],
            ),
            ErrorClass::Transport,
            "malformed",
        ),
        (
            "error object mid-stream",
            with(
                head_and_one_token(),
                vec![
                    Step::Data(r#"{"error":{"message":"engine died","code":503}}"#.into()),
                    Step::End,
                ],
            ),
            ErrorClass::Overloaded,
            "engine died",
        ),
        (
            "truncated body",
            with(head_and_one_token(), vec![Step::End]),
            ErrorClass::Transport,
            "truncated",
        ),
        (
            "closed mid-chunk",
            with(
                head_and_one_token(),
                vec![Step::Raw(b"data: {\"cho".to_vec()), Step::Close],
            ),
            ErrorClass::Transport,
            "reading the stream failed",
        ),
        (
            "reset mid-stream",
            with(head_and_one_token(), vec![Step::Reset]),
            ErrorClass::Transport,
            "reading the stream failed",
        ),
        (
            "reset before headers",
            vec![Step::Reset],
            ErrorClass::Transport,
            "sending the request failed",
        ),
        (
            "stall before headers",
            vec![Step::Stall],
            ErrorClass::Timeout,
            "before the response headers",
        ),
        (
            "stall mid-stream",
            with(head_and_one_token(), vec![Step::Stall]),
            ErrorClass::Timeout,
            "while streaming",
        ),
        (
            "not an event stream",
            vec![Step::Status(
                200,
                r#"{"choices":[{"message":{"content":"hi"}}]}"#.into(),
            )],
            ErrorClass::Transport,
            "200 with application/json, not an event stream",
        ),
    ]
}

#[tokio::test]
async fn every_fault_is_a_classified_outcome() {
    for (name, script, class, fragment) in cases() {
        let stalls = script.iter().any(|step| matches!(step, Step::Stall));
        let timeout = if stalls { SHORT } else { LONG };
        let (trace, core) = one(move |_| script.clone(), timeout).await;
        assert_eq!(trace.outcome, "error", "{name}: {trace:?}");
        assert_eq!(
            trace.error_class.as_deref(),
            Some(class.as_str()),
            "{name}: {trace:?}"
        );
        let message = trace.error.clone().unwrap_or_default();
        assert!(
            message.contains(fragment),
            "{name}: `{message}` lacks `{fragment}`"
        );
        let records = core.records();
        assert_eq!(records.len(), 1, "{name}");
        assert_eq!(
            records[0].outcome,
            Outcome::Error(class),
            "{name}: the core disagrees"
        );
        assert!(trace.end_ns >= trace.send_ns, "{name}");
    }
}

#[tokio::test]
async fn a_closed_port_is_a_transport_error() {
    // Bound and never listening: connections are refused, and the port stays reserved.
    let reserved = tokio::net::TcpSocket::new_v4().unwrap();
    reserved.bind(([127, 0, 0, 1], 0).into()).unwrap();
    let addr = reserved.local_addr().unwrap();
    let (client, _) = client(addr, LONG, None);
    let trace = Trace::of(&client.send(&spec(0)).await);
    assert_eq!(trace.error_class.as_deref(), Some("transport"), "{trace:?}");
    assert!(trace.error.unwrap().contains("sending the request failed"));
}

#[tokio::test]
async fn a_mixed_run_counts_every_outcome_and_never_stops() {
    let addr = super::server::start(|seen| {
        let id: u64 = seen
            .headers
            .iter()
            .find_map(|h| {
                h.to_ascii_lowercase()
                    .strip_prefix("x-tokenmeter-request:")
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
            .unwrap_or(0);
        match id % 4 {
            0 => chat_stream(3, Duration::from_millis(1)),
            1 => vec![Step::Status(429, "slow down".into())],
            2 => with(head_and_one_token(), vec![Step::Reset]),
            _ => with(head_and_one_token(), vec![Step::Stall]),
        }
    })
    .await;
    let (client, core) = client(addr, SHORT, None);
    let specs: Vec<_> = (0..20).map(spec).collect();
    let mut progress = Progress::new(20, "test", false);
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(0);
    let load = Load::Rate {
        rate: 200.0,
        kind: crate::workload::ArrivalKind::Constant,
        max_concurrency: Some(8),
        burstiness: 1.0,
        ramp: None,
    };
    let run = runner::run(client, specs, load, &mut rng, &mut progress).await;
    let traces = run.measured;
    assert_eq!(traces.len(), 20);
    let summary = summarize(&traces, &run.gaps, &"ttft=1s".parse().unwrap());
    assert_eq!(summary.outcomes.success, 5);
    let errors = &summary.outcomes.errors;
    assert_eq!(errors.get("rate_limited"), Some(&5));
    assert_eq!(errors.get("transport"), Some(&5));
    assert_eq!(errors.get("timeout"), Some(&5));
    assert_eq!(summary.good_requests, 5);
    assert!((summary.attainment - 0.25).abs() < 1e-12);
    // The core counted the same outcomes.
    let report = core.report();
    assert_eq!(report.outcomes.success, 5);
    assert_eq!(report.outcomes.errors.get(&ErrorClass::Timeout), Some(&5));
    assert_eq!(report.outcomes.total(), 20);
    for measured in traces.iter() {
        let record = measured.record().expect("every request has its record");
        assert_eq!(measured.outcome(), record.outcome);
        assert_eq!(Trace::of(&measured).outcome, record.outcome.as_str());
    }
}

/// One typed event of a Responses API stream (`POST /v1/responses`).
fn typed(kind: &str, rest: &str) -> Step {
    Step::Raw(
        format!("event: {kind}\ndata: {{\"type\":\"{kind}\",\"sequence_number\":0{rest}}}\n\n")
            .into_bytes(),
    )
}

/// A Responses stream of two text deltas, before its last event.
fn responses_head() -> Vec<Step> {
    let delta = |text: &str| {
        typed(
            "response.output_text.delta",
            &format!(r#","delta":"{text}""#),
        )
    };
    vec![
        Step::StreamHead,
        typed(
            "response.created",
            r#","response":{"id":"resp_1","status":"in_progress"}"#,
        ),
        delta("a"),
        delta("b"),
    ]
}

/// Issue 29, item 5: a Responses stream has no `[DONE]`. Its `response.completed` ends it
/// (a success with its usage, even when the server keeps the body open after it, as `[DONE]`
/// does); a body that ends before any last event is truncated, as a chat stream that ends
/// before `[DONE]` and any finish reason is.
#[tokio::test]
async fn a_responses_stream_ends_at_its_last_event_and_is_truncated_without_it() {
    let completed = typed(
        "response.completed",
        r#","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":7,"output_tokens":2,"total_tokens":9}}"#,
    );
    for then in [Step::End, Step::Stall] {
        let script = with(responses_head(), vec![completed.clone(), then.clone()]);
        let (trace, core) = one(move |_| script.clone(), SHORT).await;
        assert_eq!(trace.outcome, "success", "then {then:?}: {trace:?}");
        assert_eq!(trace.output_tokens, 2, "{trace:?}");
        assert_eq!(trace.finish_reason.as_deref(), Some("stop"), "{trace:?}");
        assert_eq!(core.records()[0].outcome, Outcome::Success);
    }
    let script = with(responses_head(), vec![Step::End]);
    let (trace, core) = one(move |_| script.clone(), LONG).await;
    assert_eq!(trace.error_class.as_deref(), Some("transport"), "{trace:?}");
    assert!(trace.error.unwrap_or_default().contains("truncated"));
    assert_eq!(
        core.records()[0].outcome,
        Outcome::Error(ErrorClass::Transport)
    );
}
