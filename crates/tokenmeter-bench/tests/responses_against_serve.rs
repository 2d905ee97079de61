//! Issue 29, item 5: `--endpoint /v1/responses` against `tokenmeter serve` measures what the
//! chat endpoint does for the same simulated answers. The same plan (seed, prompts, lengths)
//! runs once on each endpoint of one in-process server, one request at a time; the bench's
//! per-request figures are compared.
//!
//! Token counts must be equal. TTFT and ITL are timed on the wall clock (the simulator sleeps
//! its step times on tokio's timer, over real HTTP), so each request's figures move by timer
//! and scheduling jitter on a loaded machine: the medians over the run are compared, within
//! 15 ms for TTFT (a prefill step of 30 ms) and 6 ms for ITL (a decode step of 20 ms), a
//! fraction of the step times a parser that miscounted (a token per event, say) or stamped
//! the wrong event would shift by whole steps.

use std::time::Duration;

use tokenmeter::{Outcome, RequestRecord};
use tokenmeter_bench::Plan;
use tokenmeter_server::{Config, Server};

const REQUESTS: usize = 6;
const OUTPUT: u64 = 6;
const STEP: Duration = Duration::from_millis(20);

async fn run(server: &Server, endpoint: &str) -> anyhow::Result<Vec<RequestRecord>> {
    let run = Plan::builder()
        .url(&format!("{}{endpoint}", server.url()))
        .requests(REQUESTS)
        .concurrency(1)
        .input_tokens(64)
        .output_tokens(OUTPUT)
        .slo("none")
        .seed(7)
        .build()?
        .run()
        .await?;
    let mut records: Vec<RequestRecord> = run.records().collect();
    records.sort_by_key(|r| r.arrival);
    Ok(records)
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_are_measured_as_chat_is() -> anyhow::Result<()> {
    let config = Config::default()
        .decode_table(vec![(1, STEP), (256, STEP)])
        .prefill_base(Duration::from_millis(30))
        .prefill_per_token(Duration::ZERO);
    let server = Server::start(config, "127.0.0.1:0".parse()?).await?;
    let chat = run(&server, "/v1/chat/completions").await?;
    let responses = run(&server, "/v1/responses").await?;
    server.shutdown().await?;

    assert_eq!((chat.len(), responses.len()), (REQUESTS, REQUESTS));
    for (c, r) in chat.iter().zip(&responses) {
        assert_eq!(r.outcome, Outcome::Success, "{r:?}");
        assert_eq!(c.outcome, Outcome::Success, "{c:?}");
        assert_eq!(r.output_tokens, OUTPUT);
        assert_eq!(
            (r.output_tokens, r.input_tokens, r.items, r.finish_reason),
            (c.output_tokens, c.input_tokens, c.items, c.finish_reason)
        );
    }
    let ttft = |records: &[RequestRecord]| median(records.iter().filter_map(|r| r.ttft).collect());
    // The mean gap between a request's tokens (its TPOT), per request.
    let itl = |records: &[RequestRecord]| {
        median(records.iter().filter_map(RequestRecord::tpot).collect())
    };
    let (chat_ttft, resp_ttft) = (ttft(&chat), ttft(&responses));
    let (chat_itl, resp_itl) = (itl(&chat), itl(&responses));
    println!(
        "median TTFT chat {:.1} ms, responses {:.1} ms; median ITL chat {:.1} ms, responses {:.1} ms",
        ms(chat_ttft),
        ms(resp_ttft),
        ms(chat_itl),
        ms(resp_itl)
    );
    assert!(
        ms(chat_ttft.abs_diff(resp_ttft)) < 15.0,
        "TTFT chat {chat_ttft:?}, responses {resp_ttft:?}"
    );
    assert!(
        ms(chat_itl.abs_diff(resp_itl)) < 6.0,
        "ITL chat {chat_itl:?}, responses {resp_itl:?}"
    );
    assert!(
        ms(resp_itl) >= ms(STEP) - 1.0,
        "ITL {resp_itl:?} below a step"
    );
    Ok(())
}
