//! `tokenmeter bench --self-check-ceiling`: how much load one bench process measures within
//! 1 ms of the truth.
//!
//! A ramp of offered loads against the paced server (every answer 64 tokens, the first 20 ms
//! after the request is read, then one every 2 ms: about 440 tokens/s a stream): each step
//! sends 4 requests per stream (512 at least) at a constant rate that keeps that many streams
//! in flight (open loop: each request has a due time, so the client's dispatch lag is
//! measured), 0.7 to 9.5 s a step. The ramp stops at the first step where the client's TTFT
//! p50 or ITL p50 is more than 1 ms off the server's, or its dispatch lag p99 passes 1 ms, or a
//! request fails, on that step and on its second run ([`ramp`]); the last step within the line
//! is the ceiling, in tokens/s and streams, on the runtime's worker threads (one per core the
//! process may use).
//!
//! The server's figures are its own: TTFT = its write of the first token − its read of the
//! request, ITL = the gaps between its writes, read from `GET /tokenmeter/truth` after each
//! step. They need no shared clock, so a client in another process (another benchmark
//! client) is judged by the same figures against `tokenmeter bench --self-check-serve`.
//! Without `--url` the server runs in this process, on a thread of its own that competes with
//! the client for the cores; the client's CPU time is the process's less that thread's.

mod ramp;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tokenmeter::Meter;
use tokenmeter::report::Summary;

use super::paced::Paced;
use super::server::{Pace, Truth};
use super::{chat_at, paced_specs, process_cpu_time};
use crate::client::Client;
use crate::clock::BenchClock;
use crate::collect::Collected;
use crate::progress::Progress;
use crate::runner::{self, Load};
use crate::workload::ArrivalKind;

use ramp::{Ceiling, Step};

/// Tokens of every answer.
const TOKENS: u64 = 64;
/// Requests each stream sends in a step.
const REQUESTS_PER_STREAM: usize = 4;
/// Requests of a step at least: enough that one late wake-up of the thread, a few requests
/// late, does not make the dispatch lag's p99 by itself.
const MIN_REQUESTS: usize = 512;
/// Time a step may take beyond its schedule before it is cut.
const STEP_GRACE: Duration = Duration::from_secs(10);

/// Runs the ramp against the self-check server at `url` (one started in this process when
/// `None`), prints it, and writes it to `json`.
pub(crate) async fn run(url: Option<reqwest::Url>, json: Option<PathBuf>) -> anyhow::Result<()> {
    let (server, origin) = match url {
        Some(url) => (None, url.origin().ascii_serialization()),
        None => {
            let paced = Paced::start(([127, 0, 0, 1], 0).into(), Instant::now(), Pace::default())?;
            let origin = format!("http://{}", paced.addr);
            (Some(paced), origin)
        }
    };
    let result = ramp_against(&origin, server.is_some()).await;
    if let Some(server) = server {
        server.stop()?;
    }
    let ceiling = result?;
    crate::console::out(&ceiling.render());
    if let Some(path) = json {
        crate::output::write_json(&path, &serde_json::to_value(&ceiling)?)?;
    }
    Ok(())
}

/// The ramp against the server at `origin`; `in_process`: its CPU time is this process's.
async fn ramp_against(origin: &str, in_process: bool) -> anyhow::Result<Ceiling> {
    let truth = TruthReader::new(origin)?;
    truth.read().await?;
    let chat = reqwest::Url::parse(&format!("{origin}/v1/chat/completions"))?;
    let clock = BenchClock::start();
    let client = Arc::new(Client::new(chat_at(chat), None, clock, Meter::builder())?);
    let workers = tokio::runtime::Handle::current().metrics().num_workers();
    let mut steps: Vec<Step> = Vec::new();
    let mut next = ramp::streams().next();
    while let Some(streams) = next {
        let first_id = steps.len() as u64 * 1_000_000;
        let step = step(&client, &truth, streams, MIN_REQUESTS, first_id, in_process).await?;
        // Each step as it ends, on stderr: a ramp takes a minute or more.
        crate::console::err(&format!("{}\n", step.row()));
        steps.push(step);
        next = Ceiling::next(&steps, ramp::streams());
    }
    Ok(Ceiling::of(workers, steps))
}

/// How long the paced server takes to answer one request.
fn answer_time(pace: Pace) -> Duration {
    pace.ttft + pace.gap * u32::try_from(TOKENS - 1).unwrap_or(u32::MAX)
}

/// One step: `streams` streams in flight, on average, for `REQUESTS_PER_STREAM` answers each
/// and `min_requests` in all at least.
async fn step(
    client: &Arc<Client>,
    truth: &TruthReader,
    streams: usize,
    min_requests: usize,
    first_id: u64,
    in_process: bool,
) -> anyhow::Result<Step> {
    let requests = (streams * REQUESTS_PER_STREAM).max(min_requests);
    let answer = answer_time(Pace::default());
    let rate = streams as f64 / answer.as_secs_f64();
    let load = Load::Rate {
        rate,
        kind: ArrivalKind::Constant,
        max_concurrency: None,
        burstiness: 1.0,
        ramp: None,
    };
    let (specs, mut rng) = paced_specs(requests, TOKENS, first_id);
    let deadline = Duration::from_secs_f64(requests as f64 / rate) + answer + STEP_GRACE;
    let before = truth.read().await?;
    let cpu_before = process_cpu_time();
    let wall = Instant::now();
    let mut progress = Progress::new(requests as u64, "ceiling", false);
    let run = runner::run(client.clone(), specs, load, &mut rng, &mut progress);
    let collected = tokio::time::timeout(deadline, run).await;
    let wall = wall.elapsed();
    let cpu = process_cpu_time()
        .zip(cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    let after = truth.read().await?;
    if after.unrecorded > 0 {
        bail!(
            "the self-check server left {} answers unrecorded (too many token times held): \
             run the ceiling against a server no other client uses",
            after.unrecorded
        );
    }
    let server_cpu = match (in_process, before.server_cpu_s, after.server_cpu_s) {
        (true, Some(b), Some(a)) => Some(a - b),
        (true, _, _) => None,
        (false, _, _) => Some(0.0),
    };
    let Ok(collected) = collected else {
        return Ok(Step {
            streams,
            requests,
            timed_out: true,
            ..Step::default()
        });
    };
    Ok(judge(
        streams,
        &collected,
        &after,
        wall,
        cpu.zip(server_cpu),
    ))
}

/// A step's figures from what the client measured and what the server wrote.
fn judge(
    streams: usize,
    run: &Collected,
    truth: &Truth,
    wall: Duration,
    cpu: Option<(Duration, f64)>,
) -> Step {
    let measured = &run.measured;
    let secs = |d: Duration| d.as_secs_f64();
    let p = |values: Vec<f64>, q: fn(&Summary) -> f64| {
        (!values.is_empty()).then(|| q(&Summary::of(values)))
    };
    let records = || measured.iter().filter_map(|m| m.owned_record());
    let tokens: u64 = records().map(|r| r.items).sum();
    let ttft = p(records().filter_map(|r| r.ttft).map(secs).collect(), |s| {
        s.p50
    });
    let itl = p(
        measured
            .iter()
            .flat_map(|m| run.gaps.of(m.gaps))
            .map(secs)
            .collect(),
        |s| s.p50,
    );
    let lag = p(
        measured
            .iter()
            .filter_map(|m| m.dispatch_lag())
            .map(secs)
            .collect(),
        |s| s.p99,
    );
    Step {
        streams,
        requests: measured.len(),
        failed: measured.iter().filter(|m| !m.succeeded()).count(),
        timed_out: false,
        tokens,
        tokens_per_s: tokens as f64 / wall.as_secs_f64().max(f64::EPSILON),
        ttft_error_s: ttft.zip(truth.ttft_p50_s).map(|(c, t)| c - t),
        itl_error_s: itl.zip(truth.itl_p50_s).map(|(c, t)| c - t),
        dispatch_lag_p99_s: lag,
        client_cpu_s: cpu.map(|(process, server)| (process.as_secs_f64() - server).max(0.0)),
    }
}

/// Reads (and so resets) the server's truth over HTTP.
struct TruthReader {
    http: reqwest::Client,
    url: reqwest::Url,
}

impl TruthReader {
    fn new(origin: &str) -> anyhow::Result<Self> {
        let http = crate::tls::Tls::default()
            .client_builder()
            .no_proxy()
            .timeout(Duration::from_secs(10))
            .build()?;
        let url = reqwest::Url::parse(&format!("{origin}/tokenmeter/truth"))?;
        Ok(Self { http, url })
    }

    async fn read(&self) -> anyhow::Result<Truth> {
        let not_it = || {
            format!(
                "{} did not answer what was written: --self-check-ceiling --url needs a \
                 `tokenmeter bench --self-check-serve ADDR` server",
                self.url
            )
        };
        let response = self
            .http
            .get(self.url.clone())
            .send()
            .await
            .with_context(not_it)?;
        if !response.status().is_success() {
            bail!("{} (it answered {})", not_it(), response.status());
        }
        let body = response.bytes().await.with_context(not_it)?;
        serde_json::from_slice(&body).with_context(not_it)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_first_step_is_measured_against_the_servers_truth() {
        let paced = Paced::start(([127, 0, 0, 1], 0).into(), Instant::now(), Pace::default())
            .expect("the server starts");
        let origin = format!("http://{}", paced.addr);
        let truth = TruthReader::new(&origin).expect("a truth reader");
        truth.read().await.expect("the server answers its truth");
        let chat = reqwest::Url::parse(&format!("{origin}/v1/chat/completions")).expect("url");
        let client = Arc::new(
            Client::new(chat_at(chat), None, BenchClock::start(), Meter::builder())
                .expect("a client"),
        );
        let step = step(&client, &truth, 16, 64, 0, true)
            .await
            .expect("a step");
        paced.stop().expect("the server stops");
        assert_eq!((step.requests, step.failed, step.timed_out), (64, 0, false));
        assert_eq!(step.tokens, 64 * TOKENS);
        // What the server wrote is what the client read, so both sides have figures.
        for figure in [step.ttft_error_s, step.itl_error_s] {
            let error = figure.expect("a figure on both sides");
            assert!(error.abs() < 0.05, "{error}");
        }
        assert!(step.dispatch_lag_p99_s.is_some());
        assert!(step.tokens_per_s > 0.0);

        let not_it = TruthReader::new("http://127.0.0.1:9").expect("a reader");
        let error = format!("{:#}", not_it.read().await.expect_err("nothing listens"));
        assert!(error.contains("--self-check-serve"), "{error}");
    }
}
