//! End to end: the OTLP pipeline against real receivers on loopback — gRPC (the generated
//! tonic `MetricsService`) and HTTP/protobuf (axum + prost) — decoding what the exporter sends.

mod common;

use std::time::{Duration, Instant};

use tokenmeter::conventions::Conventions;
use tokenmeter::sink::{Step, StepKind};
use tokenmeter::{Clock, ErrorClass, Labels, ManualClock, Meter, Role};
use tokenmeter_otel::names::{self, attr};
use tokenmeter_otel::{OtelSink, OtlpError, Protocol};

use common::checks;
use common::receiver::{BlackHole, Receiver, bind};
use common::snapshot::Snapshot;
use common::workload::Script;

const WAIT: Duration = Duration::from_secs(15);

fn server() -> Labels<'static> {
    Labels::server("chat")
        .provider("vllm")
        .request_model("llama-3-8b")
        .server_address("127.0.0.1")
        .server_port(8000)
}

fn client() -> Labels<'static> {
    Labels::client("chat")
        .provider("openai")
        .request_model("gpt-4o")
}

async fn round_trip(protocol: Protocol, receiver: Receiver) {
    let otlp = common::otlp_config()
        .protocol(protocol)
        .endpoint(receiver.url())
        .interval(Duration::from_millis(150))
        .timeout(Duration::from_secs(5))
        .service_name("tokenmeter-e2e")
        .resource_attribute("deployment.environment.name", "test")
        .header("x-api-key", "e2e-key-123")
        // every name the receiver should see, the superseded ones asked for
        .sink(OtelSink::builder().conventions(Conventions::default()))
        .install()
        .expect("install");
    let clock = ManualClock::new();
    let meter = Meter::builder()
        .clock(Clock::manual(&clock))
        .sink(otlp.sink())
        .build();
    let served = Script::default().run(&meter, &clock, &server());
    let script = Script {
        errors: vec![ErrorClass::Timeout],
        ..Script::default()
    };
    let sent = script.run(&meter, &clock, &client());
    // An engine's steps: a decode of 8 sequences in 8 ms and a prefill of 512 tokens.
    let steps = meter.engine(
        &Labels::server("")
            .provider("vllm")
            .request_model("llama-3-8b"),
    );
    steps.record(&Step::new(StepKind::Decode, 8, 8, Duration::from_millis(8)));
    steps.record(&Step::new(
        StepKind::Prefill,
        1,
        512,
        Duration::from_millis(60),
    ));
    steps.add_prefix_cache(512, 384);
    steps.add_speculation(2, 8, 5);

    // A periodic export carries every request and step.
    let got = receiver
        .wait_for("a periodic export with every request and step", WAIT, |s| {
            s.total(names::SERVER_REQUEST_DURATION.name, &[]) as u64 == served.requests
                && s.total(names::CLIENT_OPERATION_DURATION.name, &[]) as u64 == sent.requests
                && s.total(names::ENGINE_STEP_TOKENS.name, &[]) == 520.0
        })
        .await;
    let s = &got.snapshot;
    let mut expected: Vec<&str> = names::ALL
        .iter()
        .map(|m| m.name)
        .filter(|n| {
            ![
                names::SERIES_FOLDED.name,
                names::KV_CACHE_USAGE.name,
                names::PREEMPTIONS.name,
                // nor the model-server protocol's engine signals (tests/gaie_otel.rs has them)
                names::ENGINE_CACHE_CONFIG_INFO.name,
                names::ENGINE_LORA_REQUESTS_INFO.name,
                names::ENGINE_WAITING_BY_REASON.name,
                names::ENGINE_ADMISSION_REJECTIONS.name,
                // the scripts set no request parameters
                names::REQUEST_MAX_TOKENS.name,
                names::REQUEST_CHOICES.name,
                // nor cached input nor reasoning tokens on the client side
                names::CLIENT_USAGE_CACHE_READ_INPUT_TOKENS.name,
                names::CLIENT_USAGE_REASONING_OUTPUT_TOKENS.name,
            ]
            .contains(n)
        })
        .collect();
    expected.sort_unstable();
    assert_eq!(s.names(), expected);
    checks::units_and_bounds(s);
    checks::counts(
        s,
        Role::Server,
        &[(attr::REQUEST_MODEL, "llama-3-8b")],
        &served,
    );
    checks::counts(s, Role::Client, &[(attr::REQUEST_MODEL, "gpt-4o")], &sent);
    let decode = [(attr::PROVIDER, "vllm"), (attr::KIND, "decode")];
    assert_eq!(s.total(names::ENGINE_STEP_TOKENS.name, &decode), 8.0);
    assert_eq!(s.total(names::ENGINE_BATCH_SIZE.name, &decode), 1.0);
    assert_eq!(s.total(names::ENGINE_STEP_DURATION.name, &decode), 1.0);
    let prefill = [(attr::KIND, "prefill")];
    assert_eq!(s.total(names::ENGINE_STEP_TOKENS.name, &prefill), 512.0);
    let engine = [(attr::PROVIDER, "vllm")];
    for (instrument, value) in [
        (names::PREFIX_CACHE_QUERIES, 512.0),
        (names::PREFIX_CACHE_HITS, 384.0),
        (names::SPEC_DECODE_DRAFTS, 2.0),
        (names::SPEC_DECODE_DRAFT_TOKENS, 8.0),
        (names::SPEC_DECODE_ACCEPTED_TOKENS, 5.0),
    ] {
        assert_eq!(
            s.total(instrument.name, &engine),
            value,
            "{}",
            instrument.name
        );
    }
    let port =
        s.metric(names::SERVER_TIME_TO_FIRST_TOKEN.name).points[0].attrs[attr::SERVER_PORT].clone();
    assert_eq!(port, "8000");
    assert_eq!(s.resource["service.name"], "tokenmeter-e2e");
    assert_eq!(s.resource["deployment.environment.name"], "test");
    let key = got.headers.iter().find(|(k, _)| k == "x-api-key");
    assert_eq!(key.map(|(_, v)| v.as_str()), Some("e2e-key-123"));
    if protocol == Protocol::HttpProtobuf {
        let content = got.headers.iter().find(|(k, _)| k == "content-type");
        assert_eq!(
            content.map(|(_, v)| v.as_str()),
            Some("application/x-protobuf")
        );
    }
    // The receiver stores a request before it answers: the exporter counts it a moment later.
    let asked = Instant::now();
    while otlp.stats().succeeded == 0 {
        assert!(
            asked.elapsed() < WAIT,
            "no export counted as sent: {:?}",
            otlp.stats()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(otlp.stats().failed, 0, "{:?}", otlp.stats());

    // Requests after that, then shutdown: the final export carries the new totals.
    let more = Script {
        ok: 2,
        errors: vec![],
        cancelled: 0,
        ..Script::default()
    };
    let mut total = served;
    total += more.run(&meter, &clock, &server());
    tokio::task::spawn_blocking(move || otlp.shutdown(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("shutdown flushes");
    let last = receiver.received().pop().expect("an export").snapshot;
    checks::counts(
        &last,
        Role::Server,
        &[(attr::REQUEST_MODEL, "llama-3-8b")],
        &total,
    );
    checks::counts(
        &last,
        Role::Client,
        &[(attr::REQUEST_MODEL, "gpt-4o")],
        &sent,
    );
    receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_receiver_decodes_names_units_bounds_and_counts() {
    round_trip(Protocol::Grpc, Receiver::grpc(bind().await)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_receiver_decodes_names_units_bounds_and_counts() {
    round_trip(Protocol::HttpProtobuf, Receiver::http(bind().await)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exponential_histograms_reach_the_receiver() {
    let receiver = Receiver::grpc(bind().await);
    let otlp = common::otlp_config()
        .protocol(Protocol::Grpc)
        .endpoint(receiver.url())
        .histograms(tokenmeter_otel::HistogramAggregation::exponential())
        .install()
        .expect("install");
    let clock = ManualClock::new();
    let meter = Meter::builder()
        .clock(Clock::manual(&clock))
        .sink(otlp.sink())
        .build();
    let e = Script::default().run(&meter, &clock, &server());
    tokio::task::spawn_blocking(move || otlp.flush(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("flush");
    let s: Snapshot = receiver.received().pop().expect("an export").snapshot;
    let itl = s.metric(names::INTER_TOKEN_LATENCY.name);
    assert!(
        matches!(
            itl.points[0].value,
            common::snapshot::Value::Exponential { .. }
        ),
        "{itl:?}"
    );
    assert_eq!(
        s.total(names::INTER_TOKEN_LATENCY.name, &[]) as u64,
        e.later_items
    );
    receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_and_shutdown_wait_at_most_their_bound_when_the_receiver_never_answers() {
    let hole = BlackHole::start(bind().await);
    let otlp = common::otlp_config()
        .protocol(Protocol::Grpc)
        .endpoint(format!("http://{}", hole.addr))
        .timeout(Duration::from_secs(30))
        .install()
        .expect("install");
    let meter = Meter::builder().sink(otlp.sink()).build();
    let mut request = meter.series(&server()).start();
    request.record_tokens(1);
    request.succeed();

    let (flush, shutdown, took) = tokio::task::spawn_blocking(move || {
        let start = Instant::now();
        let flush = otlp.flush(Duration::from_millis(300));
        let shutdown = otlp.shutdown(Duration::from_millis(500));
        (flush, shutdown, start.elapsed())
    })
    .await
    .unwrap();
    assert!(
        matches!(flush, Err(OtlpError::FlushTimedOut(_))),
        "{flush:?}"
    );
    assert!(
        matches!(shutdown, Err(OtlpError::ShutdownTimedOut(_))),
        "{shutdown:?}"
    );
    assert!(
        took < Duration::from_secs(3),
        "flush + shutdown took {took:?}"
    );
    hole.stop().await;
}

#[test]
fn a_malformed_endpoint_is_an_error_that_says_what_to_fix() {
    let error = common::otlp_config()
        .protocol(Protocol::Grpc)
        .endpoint("not a url")
        .install()
        .expect_err("a malformed endpoint");
    assert!(
        matches!(error, tokenmeter_otel::OtlpError::Exporter(_)),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{message}");
}

#[test]
fn an_invalid_header_is_refused_without_showing_its_value() {
    let error = common::otlp_config()
        .protocol(Protocol::HttpProtobuf)
        .header("x api key", "top-secret-value")
        .install()
        .expect_err("an invalid header");
    let message = error.to_string();
    assert!(
        message.contains("x api key") && !message.contains("top-secret"),
        "{message}"
    );
}
