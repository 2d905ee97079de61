//! The HTTP stack alone: the same requests sent by the bench client's own HTTP client
//! ([`Client::post`]: reqwest and hyper, the same connection pool and settings), each body read
//! to its end, with no SSE decoding, no JSON, no metering and no per-request bookkeeping. It
//! counts the token events as the raw-socket floor does ([`count_data_lines`]).
//!
//! It is not a goal: it shows how much of the client's cost over the raw-socket floor is the
//! HTTP stack's, and how much is left for what tokenmeter adds above it.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use reqwest::header::HeaderValue;

use super::baseline::{UNTOKENED_EVENTS, count_data_lines};
use crate::client::Client;
use crate::workload::RequestSpec;

/// Sends `specs` over `streams` concurrent workers, each one request after another on the
/// client's keep-alive pool, and returns the token events received in the requests answered
/// 2xx whose body was read to its end before `timeout`.
pub(crate) async fn run(
    client: Arc<Client>,
    specs: Vec<RequestSpec>,
    streams: usize,
    timeout: Duration,
) -> u64 {
    let specs = Arc::new(specs);
    let streams = streams.max(1);
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..streams {
        let (client, specs) = (client.clone(), specs.clone());
        workers.spawn(async move {
            let mut received = 0;
            for spec in specs.iter().skip(worker).step_by(streams) {
                let one = read_to_end(&client, spec);
                if let Ok(Some(events)) = tokio::time::timeout(timeout, one).await {
                    received += events.saturating_sub(UNTOKENED_EVENTS);
                }
            }
            received
        });
    }
    let mut total = 0;
    while let Some(done) = workers.join_next().await {
        total += done.unwrap_or(0);
    }
    total
}

/// Sends `spec` and reads its body to the end: the `data: ` lines in it, or `None` when it was
/// not answered 2xx or not read whole.
async fn read_to_end(client: &Client, spec: &RequestSpec) -> Option<u64> {
    let response = client
        .post(HeaderValue::from(spec.id), spec)
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let mut body = response.bytes_stream();
    let mut events = 0;
    while let Some(piece) = body.next().await {
        events += count_data_lines(&piece.ok()?);
    }
    Some(events)
}
