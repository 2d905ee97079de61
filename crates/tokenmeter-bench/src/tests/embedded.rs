//! The bench client against the embedded `tokenmeter serve`, over real HTTP: the two sides see
//! the same requests, the client's TTFT is never below the server's, and the server's
//! `/metrics` counts equal the client's counts by outcome.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::SeedableRng as _;

use super::client;
use crate::progress::Progress;
use crate::runner::{self, Load};
use crate::summary::Outcomes;
use crate::workload::{ArrivalKind, LengthDist, Source, specs};
use tokenmeter_server::{Config, Server};

/// `tokenmeter_requests_total` by `outcome` (errors by `error_type`), summed over series.
fn server_counts(metrics: &str) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in metrics
        .lines()
        .filter(|l| l.starts_with("tokenmeter_requests_total{"))
    {
        let label = |name: &str| {
            let start = line.find(&format!("{name}=\""))? + name.len() + 2;
            let end = start + line[start..].find('"')?;
            Some(line[start..end].to_owned())
        };
        let value: f64 = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        let key = match label("outcome").as_deref() {
            Some("error") => label("error_type").unwrap_or_else(|| "_OTHER".into()),
            Some(other) => other.to_owned(),
            None => continue,
        };
        *counts.entry(key).or_default() += value as u64;
    }
    counts.retain(|_, n| *n > 0);
    counts
}

fn client_counts(outcomes: &Outcomes) -> BTreeMap<String, u64> {
    let mut counts = outcomes.errors.clone();
    for (name, n) in [
        ("success", outcomes.success),
        ("degraded", outcomes.degraded),
        ("cancelled", outcomes.cancelled),
    ] {
        if n > 0 {
            counts.insert(name.to_owned(), n);
        }
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_and_server_agree_request_by_request() {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let config = Config::default()
        .error_rate(0.15)
        .queue_limit(3)
        .max_batch(4)
        .keep_records(true);
    let server = Server::from_listener(config, listener).expect("the embedded server starts");
    let (client, core) = client(server.local_addr(), Duration::from_secs(20), None);
    let source = Source::Synthetic {
        input: LengthDist::Uniform(16, 128),
        output: LengthDist::Uniform(4, 32),
        tokenizer: None,
        shared_prefix: None,
        turns: 1,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let specs = specs(&source, 60, &mut rng);
    let mut progress = Progress::new(60, "test", false);
    let load = Load::Rate {
        rate: 80.0,
        kind: ArrivalKind::Poisson,
        max_concurrency: None,
        burstiness: 1.0,
        ramp: None,
    };
    // A run drops each response id once its trace line is written; this one keeps them, to
    // find each request among the server's records.
    let mut into = crate::collect::Collector::keeping_response_ids();
    runner::run_until(
        client,
        specs,
        load,
        &mut rng,
        &mut progress,
        &crate::interrupt::Interrupt::never(),
        &mut into,
        &mut crate::saturation::Watch::off(),
    )
    .await;
    let traces = into.finish().0.measured;
    let outcomes = Outcomes::of(&traces);
    assert!(outcomes.success > 0, "{outcomes:?}");
    assert!(
        outcomes.errors_total() > 0,
        "the faults produced errors: {outcomes:?}"
    );

    let mut matched = 0;
    for trace in traces.iter().filter(|t| t.succeeded()) {
        let id = trace
            .response_id()
            .map(|id| id.as_str())
            .expect("the server names its responses");
        let record = server
            .record_for(id)
            .expect("the server recorded the request");
        let server_ttft = record.ttft.expect("a server-side TTFT");
        let ours = trace.record().expect("the client's record");
        let client_ttft = ours.ttft.expect("a client-side TTFT");
        assert!(
            client_ttft >= server_ttft,
            "request {id}: client TTFT {client_ttft:?} < server TTFT {server_ttft:?}"
        );
        assert!(
            ours.e2e >= record.e2e,
            "request {id}: client E2E below the server's"
        );
        assert_eq!(trace.output_tokens(), record.output_tokens, "request {id}");
        matched += 1;
    }
    assert_eq!(matched, outcomes.success);

    let client = client_counts(&outcomes);
    assert_eq!(
        server_counts(&server.metrics_text()),
        client,
        "server /metrics vs client"
    );
    // Another sink of the client's meter counted the same outcomes.
    let report = core.report();
    assert_eq!(report.outcomes.success, outcomes.success);
    assert_eq!(report.outcomes.errors_total(), outcomes.errors_total());
    server.shutdown().await.expect("the server stops");
}
