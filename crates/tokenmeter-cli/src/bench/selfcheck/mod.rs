//! `tokenmeter bench --self-check-client`: is the client fast enough not to be the bottleneck?
//!
//! A server on its own thread streams at known times (64 concurrent streams, first token 20 ms
//! after arrival, then one token every 2 ms: about 450–500 tokens/s per stream) and records when
//! it wrote each token. The bench client — the same code path as `tokenmeter bench` — runs on a
//! single-threaded runtime on another thread, whose CPU time is read from `/proc/thread-self`,
//! so the server's CPU is not counted. Reported: client CPU-seconds per million streamed
//! tokens, and the client's TTFT and ITL percentiles next to what the server actually sent.
//! Goals: ≤ 4 CPU-s per 1M tokens; TTFT and ITL p50 within 1 ms of the truth.

mod cpu;
mod server;

pub(crate) use cpu::thread_cpu_time;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use rand::SeedableRng as _;
use serde::Serialize;
use tokenmeter::Meter;
use tokenmeter::report::Summary;

use crate::bench::client::{Api, Client, Target};
use crate::bench::clock::BenchClock;
use crate::bench::progress::Progress;
use crate::bench::runner::{self, Load};
use crate::bench::summary::Stat;
use crate::bench::workload::{LengthDist, Source, specs};

use server::{Pace, Truth};

/// The load of the check.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params {
    /// Concurrent streams.
    pub(crate) streams: usize,
    /// Requests in all (each stream runs several back to back).
    pub(crate) requests: usize,
    /// Tokens per response.
    pub(crate) tokens: u64,
    /// The server's schedule.
    pub(crate) pace: Pace,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            streams: 64,
            requests: 256,
            tokens: 900,
            pace: Pace {
                ttft: Duration::from_millis(20),
                gap: Duration::from_millis(2),
            },
        }
    }
}

/// Goals of issue item 3.
const MAX_CPU_PER_MILLION: f64 = 4.0;
const MAX_P50_ERROR_S: f64 = 1e-3;

/// What the check measured.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SelfCheck {
    /// Concurrent streams.
    pub(crate) streams: usize,
    /// Requests completed.
    pub(crate) requests: usize,
    /// Token-bearing events the client received.
    pub(crate) tokens: u64,
    /// Wall time of the load (s).
    pub(crate) wall_s: f64,
    /// Client thread CPU time (s).
    pub(crate) client_cpu_s: f64,
    /// Client CPU-seconds per million streamed tokens.
    pub(crate) cpu_s_per_million_tokens: f64,
    /// Tokens per second per stream, as the server sent them.
    pub(crate) tokens_per_s_per_stream: f64,
    /// TTFT seen by the client (s).
    pub(crate) client_ttft: Stat,
    /// TTFT the server produced: first token written − request read (s).
    pub(crate) true_ttft: Stat,
    /// ITL seen by the client (s).
    pub(crate) client_itl: Stat,
    /// ITL the server produced: gaps between its writes (s).
    pub(crate) true_itl: Stat,
    /// Client parse time − server write time, per token (s).
    pub(crate) delivery_lag: Stat,
    /// Requests that did not succeed.
    pub(crate) failed: usize,
}

impl SelfCheck {
    /// Goals missed, in words; empty when all are met.
    pub(crate) fn misses(&self) -> Vec<String> {
        let mut misses = Vec::new();
        if self.cpu_s_per_million_tokens > MAX_CPU_PER_MILLION {
            misses.push(format!(
                "{:.2} CPU-s per 1M tokens (goal ≤ {MAX_CPU_PER_MILLION})",
                self.cpu_s_per_million_tokens
            ));
        }
        let ttft_error = (self.client_ttft.p50 - self.true_ttft.p50).abs();
        if ttft_error > MAX_P50_ERROR_S {
            misses.push(format!(
                "TTFT p50 off by {:.3} ms (goal ≤ 1 ms)",
                ttft_error * 1e3
            ));
        }
        let itl_error = (self.client_itl.p50 - self.true_itl.p50).abs();
        if itl_error > MAX_P50_ERROR_S {
            misses.push(format!(
                "ITL p50 off by {:.3} ms (goal ≤ 1 ms)",
                itl_error * 1e3
            ));
        }
        if self.failed > 0 {
            misses.push(format!("{} requests failed", self.failed));
        }
        misses
    }

    /// The report as text.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "client self-check: {} streams, {} requests, {} tokens in {:.2} s ({:.0} tok/s per stream)",
            self.streams, self.requests, self.tokens, self.wall_s, self.tokens_per_s_per_stream
        );
        let _ = writeln!(
            out,
            "  client CPU      {:.3} s = {:.2} CPU-s per 1M tokens (goal ≤ {MAX_CPU_PER_MILLION})",
            self.client_cpu_s, self.cpu_s_per_million_tokens
        );
        let row = |out: &mut String, name: &str, client: &Stat, truth: &Stat| {
            let _ = writeln!(
                out,
                "  {name:<14}  client p50 {:>8.3} ms  p99 {:>8.3} ms   truth p50 {:>8.3} ms  p99 {:>8.3} ms   p50 error {:+.3} ms",
                client.p50 * 1e3,
                client.p99 * 1e3,
                truth.p50 * 1e3,
                truth.p99 * 1e3,
                (client.p50 - truth.p50) * 1e3
            );
        };
        row(&mut out, "TTFT", &self.client_ttft, &self.true_ttft);
        row(&mut out, "ITL", &self.client_itl, &self.true_itl);
        let _ = writeln!(
            out,
            "  delivery lag    p50 {:.3} ms  p99 {:.3} ms (client parse − server write)",
            self.delivery_lag.p50 * 1e3,
            self.delivery_lag.p99 * 1e3
        );
        let misses = self.misses();
        if misses.is_empty() {
            let _ = writeln!(
                out,
                "  goals met: ≤ 4 CPU-s per 1M tokens, TTFT and ITL p50 within 1 ms"
            );
        } else {
            let _ = writeln!(out, "  goals missed: {}", misses.join("; "));
        }
        out
    }
}

/// Runs the check with the default parameters and prints the result.
pub(crate) async fn run(json: Option<PathBuf>) -> anyhow::Result<()> {
    let check = tokio::task::spawn_blocking(|| measure(Params::default()))
        .await
        .context("the self-check thread failed")??;
    print!("{}", check.render());
    if let Some(path) = json {
        crate::bench::output::write_json(&path, &serde_json::to_value(&check)?)?;
    }
    let misses = check.misses();
    if !misses.is_empty() {
        bail!("the bench client missed its goals: {}", misses.join("; "));
    }
    Ok(())
}

/// Starts the paced server on its own thread, runs the client on this one, and compares.
pub(crate) fn measure(params: Params) -> anyhow::Result<SelfCheck> {
    let origin = Instant::now();
    let truth = Truth::default();
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).context("binding 127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server_truth = truth.clone();
    let server = std::thread::Builder::new()
        .name("self-check-server".into())
        .spawn(move || -> anyhow::Result<()> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                tokio::select! {
                    () = server::serve(listener, origin, params.pace, server_truth) => {}
                    _ = stopped => {}
                }
                anyhow::Ok(())
            })
        })?;
    let result = client_side(params, origin, addr);
    let _ = stop.send(());
    server
        .join()
        .map_err(|_| anyhow::anyhow!("the self-check server thread panicked"))??;
    let (traces, cpu, wall) = result?;
    let truth = std::mem::take(&mut *truth.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(compare(params, &traces, &truth, cpu, wall))
}

type ClientRun = (Vec<crate::bench::trace::Trace>, Duration, Duration);

fn client_side(
    params: Params,
    origin: Instant,
    addr: std::net::SocketAddr,
) -> anyhow::Result<ClientRun> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let clock = BenchClock::with_origin(origin);
    let meter = Meter::builder()
        .clock(clock.meter_clock())
        .sink(tokenmeter::sink::InMemorySink::new())
        .build();
    let target = Target {
        url: reqwest::Url::parse(&format!("http://{addr}/v1/chat/completions"))?,
        api: Api::Chat,
        model: "paced".into(),
        ignore_eos: false,
        timeout: Duration::from_secs(60),
    };
    let source = Source::Synthetic {
        input: LengthDist::Fixed(64),
        output: LengthDist::Fixed(params.tokens),
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let specs = specs(&source, params.requests, &mut rng);
    let mut progress = Progress::new(params.requests as u64, "self-check", false);
    let cpu_before =
        thread_cpu_time().context("reading this thread's CPU time needs Linux /proc")?;
    let wall = Instant::now();
    let traces = rt.block_on(async {
        let client = Arc::new(Client::new(target, None, clock, &meter)?);
        let load = Load::Concurrency(params.streams);
        anyhow::Ok(runner::run(client, specs, load, &mut rng, &mut progress).await)
    })?;
    let wall = wall.elapsed();
    let cpu = thread_cpu_time()
        .unwrap_or_default()
        .saturating_sub(cpu_before);
    Ok((traces, cpu, wall))
}

fn secs(values: Vec<f64>) -> Stat {
    Summary::of(values).into()
}

fn compare(
    params: Params,
    traces: &[crate::bench::trace::Trace],
    truth: &std::collections::HashMap<u64, server::Sent>,
    cpu: Duration,
    wall: Duration,
) -> SelfCheck {
    let mut client_ttft = Vec::new();
    let mut true_ttft = Vec::new();
    let mut client_itl = Vec::new();
    let mut true_itl = Vec::new();
    let mut lag = Vec::new();
    let mut tokens = 0u64;
    let mut rates = Vec::new();
    for trace in traces {
        let received: Vec<u64> = trace
            .chunks
            .iter()
            .filter(|c| c.1 > 0)
            .map(|c| c.0)
            .collect();
        tokens += received.len() as u64;
        client_ttft.extend(trace.ttft().map(|d| d.as_secs_f64()));
        client_itl.extend(trace.itls().map(|d| d.as_secs_f64()));
        let Some(sent) = truth.get(&trace.id) else {
            continue;
        };
        if let Some(first) = sent.tokens.first() {
            true_ttft.push(first.saturating_sub(sent.arrival).as_secs_f64());
        }
        true_itl.extend(sent.tokens.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()));
        if let (Some(first), Some(last)) = (sent.tokens.first(), sent.tokens.last()) {
            let span = (*last - sent.arrival).as_secs_f64();
            if span > 0.0 && first < last {
                rates.push(sent.tokens.len() as f64 / span);
            }
        }
        lag.extend(
            received
                .iter()
                .zip(&sent.tokens)
                .map(|(&got, &put)| (got as f64 * 1e-9) - put.as_secs_f64()),
        );
    }
    let cpu_s = cpu.as_secs_f64();
    SelfCheck {
        streams: params.streams,
        requests: traces.len(),
        tokens,
        wall_s: wall.as_secs_f64(),
        client_cpu_s: cpu_s,
        cpu_s_per_million_tokens: if tokens > 0 {
            cpu_s / tokens as f64 * 1e6
        } else {
            f64::INFINITY
        },
        tokens_per_s_per_stream: if rates.is_empty() {
            0.0
        } else {
            rates.iter().sum::<f64>() / rates.len() as f64
        },
        client_ttft: secs(client_ttft),
        true_ttft: secs(true_ttft),
        client_itl: secs(client_itl),
        true_itl: secs(true_itl),
        delivery_lag: secs(lag),
        failed: traces.iter().filter(|t| !t.succeeded()).count(),
    }
}
