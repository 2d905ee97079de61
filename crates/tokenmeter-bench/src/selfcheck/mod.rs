//! `tokenmeter bench --self-check-client`: is the client fast enough not to be the bottleneck?
//!
//! A server on its own thread streams at known times (64 concurrent streams, first token 20 ms
//! after arrival, then one token every 2 ms: about 450–500 tokens/s per stream) and records when
//! it wrote each token. The bench client — the same code path as `tokenmeter bench` — runs on a
//! single-threaded runtime on another thread, whose CPU time is read from `/proc/thread-self`,
//! so the server's CPU is not counted. Before it, the same load is read from raw sockets (no
//! HTTP, SSE or JSON parsing, no metering): the floor of this machine's kernel and runtime;
//! then by the client's HTTP stack alone (the bodies read to their end, nothing parsed or
//! metered), to show how much of the client's cost is the HTTP stack's.
//!
//! Reported: CPU-seconds per million streamed tokens of all three, and the client's TTFT and ITL
//! percentiles next to the truth: TTFT as sent = the server's write of the first token − the
//! client's send (one clock), ITL as sent = the gaps between the server's writes.
//! Goals: the client's CPU per token at most 1.25 × the raw-socket floor measured in the same
//! run (the median over the rounds of each round's client over the floor measured right
//! before it); TTFT and ITL p50 within 1 ms of the truth.

mod baseline;
mod ceiling;
mod cpu;
mod http_only;
mod paced;
mod report;
mod server;

pub(crate) use ceiling::run as run_ceiling;
pub(crate) use cpu::process_cpu_time;
use cpu::{thread_cpu_split, thread_cpu_time};
pub(crate) use paced::run as serve;
pub(crate) use report::SelfCheck;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use rand::SeedableRng as _;
use tokenmeter::Meter;
use tokenmeter::report::Summary;

use crate::api::Api;
use crate::client::{Client, Target};
use crate::clock::BenchClock;
use crate::collect::Collected;
use crate::progress::Progress;
use crate::runner::{self, Load};
use crate::workload::{LengthDist, RequestSpec, Source, specs};

use paced::Paced;
use report::Cpu;
use server::{Pace, Sent, Shared};

/// The load of the check.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params {
    /// Concurrent streams.
    pub(crate) streams: usize,
    /// Requests per round (each stream runs several back to back).
    pub(crate) requests: usize,
    /// Rounds, each of the raw-socket floor, the HTTP stack alone, then the bench client.
    pub(crate) rounds: usize,
    /// Tokens per response.
    pub(crate) tokens: u64,
    /// The server's schedule.
    pub(crate) pace: Pace,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            streams: 64,
            requests: 128,
            rounds: 5,
            tokens: 900,
            pace: Pace::default(),
        }
    }
}

/// Runs the check with the default parameters and prints the result.
pub(crate) async fn run(json: Option<PathBuf>) -> anyhow::Result<()> {
    let check = tokio::task::spawn_blocking(|| measure(Params::default()))
        .await
        .context("the self-check thread failed")??;
    crate::console::out(&check.render());
    if let Some(path) = json {
        crate::output::write_json(&path, &serde_json::to_value(&check)?)?;
    }
    let misses = check.misses();
    if !misses.is_empty() {
        bail!("the bench client missed its goals: {}", misses.join("; "));
    }
    Ok(())
}

/// Starts the paced server on its own thread, runs the raw-socket floor then the bench
/// client on this one, and compares.
pub(crate) fn measure(params: Params) -> anyhow::Result<SelfCheck> {
    let origin = Instant::now();
    let server = Paced::start(([127, 0, 0, 1], 0).into(), origin, params.pace)?;
    let rounds = run_rounds(params, origin, server.addr, &server.shared);
    server.stop()?;
    let rounds = rounds?;
    Ok(compare(params, &rounds))
}

/// Everything the rounds measured.
struct Rounds {
    runs: Vec<Collected>,
    truth: HashMap<u64, Sent>,
    clients: Vec<Cpu>,
    floors: Vec<Cpu>,
    http: Vec<Cpu>,
    wall: Duration,
    connections: u64,
}

/// Alternates the raw-socket floor, the HTTP stack alone and the bench client,
/// `params.rounds` times each, so that a change in the machine's load hits all three.
fn run_rounds(
    params: Params,
    origin: Instant,
    addr: std::net::SocketAddr,
    shared: &Shared,
) -> anyhow::Result<Rounds> {
    let mut rounds = Rounds {
        runs: Vec::new(),
        truth: HashMap::new(),
        clients: Vec::new(),
        floors: Vec::new(),
        http: Vec::new(),
        wall: Duration::ZERO,
        connections: 0,
    };
    for round in 0..params.rounds {
        rounds.floors.push(raw_side(params, addr)?);
        rounds.http.push(http_side(params, origin, addr, round)?);
        let _ = shared.take();
        let (traces, cpu, wall) = client_side(params, origin, addr, round)?;
        let (truth, connections) = shared.take();
        rounds.runs.push(traces);
        rounds.truth.extend(truth);
        rounds.clients.push(cpu);
        rounds.wall += wall;
        rounds.connections += connections;
    }
    Ok(rounds)
}

/// The round with the median CPU cost per token.
fn median(mut cpus: Vec<Cpu>) -> Cpu {
    cpus.sort_by(|a, b| a.per_million_tokens.total_cmp(&b.per_million_tokens));
    cpus.get(cpus.len() / 2).copied().unwrap_or_default()
}

/// Measures `f`'s CPU time on this thread (total, user, kernel).
fn on_cpu<T>(f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<(T, Cpu)> {
    let before = thread_cpu_time().context("reading this thread's CPU time needs Linux /proc")?;
    let split_before = thread_cpu_split().unwrap_or_default();
    let value = f()?;
    let total = thread_cpu_time().unwrap_or_default().saturating_sub(before);
    let split_after = thread_cpu_split().unwrap_or_default();
    let cpu = Cpu {
        total_s: total.as_secs_f64(),
        user_s: split_after.0.saturating_sub(split_before.0).as_secs_f64(),
        kernel_s: split_after.1.saturating_sub(split_before.1).as_secs_f64(),
        ..Cpu::default()
    };
    Ok((value, cpu))
}

fn per_million(mut cpu: Cpu, tokens: u64) -> Cpu {
    cpu.tokens = tokens;
    cpu.per_million_tokens = if tokens > 0 {
        cpu.total_s / tokens as f64 * 1e6
    } else {
        f64::INFINITY
    };
    cpu
}

fn raw_side(params: Params, addr: std::net::SocketAddr) -> anyhow::Result<Cpu> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (tokens, cpu) = on_cpu(|| {
        Ok(rt.block_on(baseline::run(
            addr,
            params.streams,
            params.requests,
            params.tokens,
        ))?)
    })?;
    Ok(per_million(cpu, tokens))
}

/// The bench client's target: the paced server on `addr`.
fn target(addr: std::net::SocketAddr) -> anyhow::Result<Target> {
    Ok(chat_at(reqwest::Url::parse(&format!(
        "http://{addr}/v1/chat/completions"
    ))?))
}

/// The bench client's target: the paced server's chat completions at `url`.
fn chat_at(url: reqwest::Url) -> Target {
    Target {
        url,
        api: Api::Chat,
        model: "paced".into(),
        ignore_eos: false,
        follow_redirects: false,
        timeout: Duration::from_secs(60),
        max_event_size: tokenmeter_openai::DEFAULT_MAX_EVENT_SIZE,
        tls: crate::tls::Tls::default(),
        shape: crate::request_shape::RequestShape::default(),
        tokenizer: None,
    }
}

/// Round `round`'s requests: the same prompts and lengths every round, with ids of their own.
fn round_specs(params: Params, round: usize) -> (Vec<RequestSpec>, rand::rngs::StdRng) {
    paced_specs(
        params.requests,
        params.tokens,
        (round * params.requests) as u64,
    )
}

/// `requests` requests of 64 prompt tokens and `tokens` answer tokens, with ids from `first`,
/// and the generator that drew them (for the arrivals).
fn paced_specs(requests: usize, tokens: u64, first: u64) -> (Vec<RequestSpec>, rand::rngs::StdRng) {
    let source = Source::Synthetic {
        input: LengthDist::Fixed(64),
        output: LengthDist::Fixed(tokens),
        tokenizer: None,
        shared_prefix: None,
        turns: 1,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let mut specs = specs(&source, requests, &mut rng);
    for spec in &mut specs {
        spec.id += first;
    }
    (specs, rng)
}

/// The client's HTTP stack alone on round `round`'s requests (see [`http_only`]).
fn http_side(
    params: Params,
    origin: Instant,
    addr: std::net::SocketAddr,
    round: usize,
) -> anyhow::Result<Cpu> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (specs, _) = round_specs(params, round);
    let target = target(addr)?;
    let timeout = target.timeout;
    let (tokens, cpu) = on_cpu(|| {
        rt.block_on(async {
            let clock = BenchClock::with_origin(origin);
            let client = Arc::new(Client::new(target, None, clock, Meter::builder())?);
            let streams = params.streams;
            anyhow::Ok(http_only::run(client, specs, streams, timeout).await)
        })
    })?;
    Ok(per_million(cpu, tokens))
}

fn client_side(
    params: Params,
    origin: Instant,
    addr: std::net::SocketAddr,
    round: usize,
) -> anyhow::Result<(Collected, Cpu, Duration)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let clock = BenchClock::with_origin(origin);
    let target = target(addr)?;
    let (specs, mut rng) = round_specs(params, round);
    let mut progress = Progress::new(params.requests as u64, "self-check", false);
    let wall = Instant::now();
    let (traces, cpu) = on_cpu(|| {
        rt.block_on(async {
            let client = Arc::new(Client::new(target, None, clock, Meter::builder())?);
            let load = Load::Concurrency(params.streams);
            anyhow::Ok(runner::run(client, specs, load, &mut rng, &mut progress).await)
        })
    })?;
    let wall = wall.elapsed();
    let tokens = (traces.measured.iter())
        .filter_map(|t| t.owned_record())
        .map(|r| r.items)
        .sum();
    Ok((traces, per_million(cpu, tokens), wall))
}

/// Each round's CPU per token of `sides` over the floor's of the same round.
fn ratios(sides: &[Cpu], floors: &[Cpu]) -> Vec<f64> {
    (sides.iter().zip(floors))
        .map(|(side, floor)| side.per_million_tokens / floor.per_million_tokens)
        .collect()
}

fn secs(values: Vec<f64>) -> Summary {
    Summary::of(values)
}

fn compare(params: Params, rounds: &Rounds) -> SelfCheck {
    let truth = &rounds.truth;
    let traces = rounds
        .runs
        .iter()
        .flat_map(|run| run.measured.iter().map(move |trace| (trace, &run.gaps)));
    let (mut requests, mut failed) = (0, 0);
    let mut client_ttft = Vec::new();
    let mut true_ttft = Vec::new();
    let mut server_ttft = Vec::new();
    let mut client_itl = Vec::new();
    let mut true_itl = Vec::new();
    let mut lag = Vec::new();
    let mut rates = Vec::new();
    for (trace, gaps) in traces {
        requests += 1;
        failed += usize::from(!trace.succeeded());
        let Some(record) = trace.record() else {
            continue;
        };
        // When the client parsed each token-bearing chunk, on the run's clock.
        let received: Vec<Duration> = trace
            .chunk_offsets(gaps)
            .into_iter()
            .map(|offset| record.arrival + offset)
            .collect();
        client_ttft.extend(record.ttft.map(|d| d.as_secs_f64()));
        client_itl.extend(gaps.of(trace.gaps).map(|d| d.as_secs_f64()));
        let Some(sent) = truth.get(&trace.id) else {
            continue;
        };
        if let (Some(first), Some(last)) = (sent.tokens.first(), sent.tokens.last()) {
            true_ttft.push(first.as_secs_f64() - record.arrival.as_secs_f64());
            server_ttft.push(first.saturating_sub(sent.arrival).as_secs_f64());
            let span = last.saturating_sub(sent.arrival).as_secs_f64();
            if span > 0.0 {
                rates.push(sent.tokens.len() as f64 / span);
            }
        }
        true_itl.extend(sent.tokens.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()));
        lag.extend(
            received
                .iter()
                .zip(&sent.tokens)
                .map(|(&got, &put)| got.as_secs_f64() - put.as_secs_f64()),
        );
    }
    SelfCheck {
        streams: params.streams,
        requests,
        failed,
        rounds: params.rounds,
        connections: rounds.connections,
        wall_s: rounds.wall.as_secs_f64(),
        tokens_per_s_per_stream: if rates.is_empty() {
            0.0
        } else {
            rates.iter().sum::<f64>() / rates.len() as f64
        },
        client_cpu: median(rounds.clients.clone()),
        baseline_cpu: median(rounds.floors.clone()),
        http_cpu: median(rounds.http.clone()),
        round_ratios: ratios(&rounds.clients, &rounds.floors),
        http_round_ratios: ratios(&rounds.http, &rounds.floors),
        client_ttft: secs(client_ttft),
        true_ttft: secs(true_ttft),
        server_ttft: secs(server_ttft),
        client_itl: secs(client_itl),
        true_itl: secs(true_itl),
        delivery_lag: secs(lag),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_check_measures_both_clients_against_the_truth() {
        let params = Params {
            streams: 4,
            requests: 8,
            rounds: 1,
            tokens: 40,
            pace: Pace {
                ttft: Duration::from_millis(20),
                gap: Duration::from_millis(2),
            },
        };
        let check = measure(params).expect("the self-check runs");
        assert_eq!((check.requests, check.failed), (8, 0));
        assert_eq!(
            check.connections, 4,
            "the client keeps its connections alive"
        );
        assert_eq!(check.client_cpu.tokens, 8 * 40);
        assert_eq!(check.baseline_cpu.tokens, 8 * 40);
        assert_eq!(check.http_cpu.tokens, 8 * 40, "every token event counted");
        assert!(check.http_cpu.total_s > 0.0);
        assert_eq!(check.http_round_ratios.len(), 1);
        assert!(check.client_cpu.total_s > 0.0 && check.baseline_cpu.total_s > 0.0);
        assert_eq!(check.round_ratios.len(), 1);
        assert_eq!(check.floor_ratio(), Some(check.round_ratios[0]));
        assert_eq!(check.true_itl.count, 8 * 39);
        assert_eq!(check.client_itl.count, 8 * 39);
        // Same clock on both sides: nothing is parsed before it was written.
        assert!(
            check.delivery_lag.count == 8 * 40,
            "{:?}",
            check.delivery_lag
        );
        let lag_min = check.client_ttft.p50 - check.true_ttft.p50;
        assert!(lag_min >= 0.0, "client TTFT below the truth: {lag_min}");
        assert!(
            check.server_ttft.p50 >= 0.020,
            "the server paces its first token"
        );
        assert!(check.render().contains("CPU-s per 1M tokens"));
    }
}
