//! Admission of requests with `n` choices, the stall limit for a client that never reads, and
//! how requests are counted (issue 26, items 1, 5 and 6), over real HTTP on loopback.
//! The tests print the latencies they measure (`--no-capture` shows them).

#![allow(clippy::print_stderr)]

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::{eventually, json, post, server};
use crate::{Config, MetricsProfile, Server};

fn chat(n: u32, max_tokens: u32, stream: bool) -> Value {
    json!({
        "messages": [{"role": "user", "content": "hi"}],
        "n": n,
        "max_tokens": max_tokens,
        "stream": stream,
    })
}

/// The sum of the samples of `name` whose labels contain every one of `labels`.
fn metric(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter(|line| labels.iter().all(|label| line.contains(label)))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Sends a 1-token streaming request and returns how long its whole answer took from its send.
async fn one_token(handle: &Server) -> Duration {
    let sent = Instant::now();
    let answer = tokio::time::timeout(Duration::from_secs(10), async {
        post(handle, "/v1/chat/completions", &chat(1, 1, true))
            .await
            .text()
            .await
    })
    .await
    .expect("the 1-token request is answered within 10 s")
    .expect("a body");
    assert!(answer.contains("[DONE]"), "{answer}");
    sent.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_choices_cannot_all_run_is_refused_and_holds_no_one() {
    let handle = server(Config::default()).await;
    // n = 65 > --max-batch 64, and 60 × (prompt + 8,000) > the 400,000-token KV cache: sent
    // first, each would once hold its admitted choices' answers (and the queue behind them)
    // until the 30 s stall limit (its choices make more tokens than their output queues hold).
    for (hostile, says) in [
        (chat(65, 200, true), "at most 64 sequences"),
        (chat(60, 8_000, true), "KV-cache tokens together"),
    ] {
        let refused = tokio::time::timeout(
            Duration::from_secs(10),
            post(&handle, "/v1/chat/completions", &hostile),
        )
        .await
        .expect("answered at once, not held");
        assert_eq!(refused.status(), 400);
        let body = json(&refused.text().await.expect("a body"));
        assert_eq!(body["error"]["param"], "n", "{body}");
        assert_eq!(body["error"]["type"], "BadRequestError", "{body}");
        let message = body["error"]["message"].as_str().expect("a message");
        assert!(message.contains(says), "{message}");
        assert!(message.contains("lower `n`"), "{message}");
        let latency = one_token(&handle).await;
        eprintln!("1-token request after n={}: {latency:?}", hostile["n"]);
        assert!(latency < Duration::from_secs(3), "{latency:?}");
    }
    // Nothing of them was queued or run: the engine is idle and each was recorded once.
    let text = handle.metrics_text();
    let refused = metric(
        &text,
        "tokenmeter_requests_total",
        &["role=\"server\"", "error_type=\"client_error\""],
    );
    assert_eq!(refused, 2.0, "{text}");
    assert_eq!(
        metric(
            &text,
            "tokenmeter_requests_total",
            &["outcome=\"cancelled\""]
        ),
        0.0
    );
    // The largest request that fits is served whole.
    let most = post(&handle, "/v1/chat/completions", &chat(64, 2, false)).await;
    assert_eq!(most.status(), 200);
    let body = json(&most.text().await.expect("a body"));
    assert_eq!(body["choices"].as_array().map(Vec::len), Some(64));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_choice_streams_as_it_comes_not_after_its_siblings() {
    // A batch of 4: a long request holds one slot, so only 3 of the next request's 4 choices
    // run until it ends; they stream meanwhile, with their index.
    let handle = server(Config {
        max_batch: 4,
        ..Config::default()
    })
    .await;
    let long = post(&handle, "/v1/chat/completions", &chat(1, 300, true)).await;
    let long_ended = tokio::spawn(async move {
        let _ = long.text().await;
        Instant::now()
    });
    eventually("the long request running", || {
        (handle.engine().snapshot().running == 1).then_some(())
    })
    .await;
    let sent = Instant::now();
    // More tokens than an output queue holds (16): the 3 running choices cannot end and free
    // a slot before their answer is read.
    let response = post(&handle, "/v1/chat/completions", &chat(4, 40, true)).await;
    let mut body = response.bytes_stream();
    let first = body.next().await.expect("a first chunk").expect("bytes");
    let first_at = Instant::now();
    let text = String::from_utf8_lossy(&first).into_owned();
    assert!(text.contains("\"index\":"), "{text}");
    let mut rest = text;
    while let Some(chunk) = body.next().await {
        rest.push_str(&String::from_utf8_lossy(&chunk.expect("bytes")));
    }
    assert!(rest.contains("[DONE]"), "{rest}");
    for index in 0..4 {
        assert!(
            rest.contains(&format!("\"index\":{index}")),
            "choice {index}"
        );
    }
    let long_ended = long_ended.await.expect("the long reader");
    eprintln!(
        "first chunk {:?} after the send; the long request ended {:?} after it",
        first_at - sent,
        long_ended.saturating_duration_since(sent)
    );
    assert!(
        first_at < long_ended,
        "the running choices streamed before the long request freed a slot"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_leaves_running_at_the_stall_limit() {
    // The listener as `serve` binds it: a small fixed send buffer for every connection.
    let listener = tokio::net::TcpSocket::new_v4().expect("a socket");
    listener.set_send_buffer_size(4096).expect("SO_SNDBUF");
    listener
        .bind("127.0.0.1:0".parse().expect("an address"))
        .expect("bind");
    let args = Config {
        stall_limit: Duration::from_secs(1),
        ..Config::default()
    };
    let handle = Server::from_listener(
        args.keep_records(true),
        listener.listen(64).expect("listen"),
    )
    .expect("the server starts");
    // A raw client with a small receive buffer that sends a long streaming request and never
    // reads: the socket buffers fill, hyper stops polling the body, the output queue fills.
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
    let mut stream = socket.connect(handle.local_addr()).await.expect("connect");
    let body = chat(1, 4_000, true).to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let sent = Instant::now();
    stream.write_all(head.as_bytes()).await.expect("send");
    stream.write_all(body.as_bytes()).await.expect("send");
    const RUNNING: &str = "tokenmeter_requests_running";
    eventually("the request running", || {
        (metric(&handle.metrics_text(), RUNNING, &[]) == 1.0).then_some(())
    })
    .await;
    // Cut by the engine at the stall limit, though the client never reads again: it leaves
    // `running` and is counted cancelled (before, only at the 60 s send timeout).
    let text = eventually("the request out of running", || {
        let text = handle.metrics_text();
        (metric(&text, RUNNING, &[]) == 0.0).then_some(text)
    })
    .await;
    let left = sent.elapsed();
    eprintln!("a client that never reads left `running` {left:?} after its send");
    assert!(left >= Duration::from_secs(1), "not before the limit");
    let cancelled = metric(
        &text,
        "tokenmeter_requests_total",
        &["outcome=\"cancelled\""],
    );
    assert_eq!(cancelled, 1.0, "{text}");
    assert_eq!(
        metric(&text, "tokenmeter_requests_total", &[]),
        1.0,
        "counted once"
    );
    drop(stream);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn choices_count_as_vllm_counts_them_and_a_refused_request_counts_once() {
    let handle = server(Config {
        profile: MetricsProfile::Vllm,
        max_batch: 2,
        queue_limit: 3,
        ..Config::default()
    })
    .await;
    // As vLLM's engine counts its child requests: an n = 2 answer finishes 2 requests, and
    // its `n` is observed once.
    let answer = post(&handle, "/v1/chat/completions", &chat(2, 2, false)).await;
    assert_eq!(answer.status(), 200);
    let _ = answer.text().await;
    let text = handle.metrics_text();
    assert_eq!(
        metric(&text, "vllm:request_success_total", &[]),
        2.0,
        "{text}"
    );
    assert_eq!(
        metric(&text, "vllm:request_params_n_count", &[]),
        1.0,
        "{text}"
    );
    assert_eq!(
        metric(&text, "vllm:request_params_n_sum", &[]),
        2.0,
        "{text}"
    );
    assert_eq!(
        metric(&text, "vllm:num_requests_running", &[]),
        0.0,
        "{text}"
    );

    // Two long requests fill the batch, an n = 2 request waits (2 of the queue's 3 places),
    // and an n = 2 request finds room for one choice only: refused 429 whole, counted once,
    // and no choice of it queued or counted cancelled.
    let long = [
        post(&handle, "/v1/chat/completions", &chat(1, 2_000, true)).await,
        post(&handle, "/v1/chat/completions", &chat(1, 2_000, true)).await,
    ];
    let waiting = tokio::spawn({
        let url = handle.url();
        async move {
            crate::tests::client()
                .post(format!("{url}/v1/chat/completions"))
                .header("content-type", "application/json")
                .body(chat(2, 2, false).to_string())
                .send()
                .await
        }
    });
    eventually("two choices waiting", || {
        (handle.engine().queue_depth() == 2).then_some(())
    })
    .await;
    let refused = post(&handle, "/v1/chat/completions", &chat(2, 2, false)).await;
    assert_eq!(refused.status(), 429);
    // Once the engine has settled (before, it dropped the one choice queued), none of it is
    // queued.
    eventually("the queue settled", || {
        (handle.engine().queue_depth() == 2).then_some(())
    })
    .await;
    // In this profile every request end is in request_success_total: the refusal once, as
    // `error`, and no choice of it as `abort` (cancelled).
    let text = handle.metrics_text();
    let success = "vllm:request_success_total";
    assert_eq!(
        metric(&text, success, &["finished_reason=\"abort\""]),
        0.0,
        "{text}"
    );
    assert_eq!(
        metric(&text, success, &["finished_reason=\"error\""]),
        1.0,
        "{text}"
    );
    drop(long);
    let waited = waiting.await.expect("task").expect("answered");
    assert_eq!(waited.status(), 200);
    let _ = waited.text().await;
}
