//! `tokenmeter serve`: an OpenAI-compatible server over the simulated continuous-batching
//! engine of `tokenmeter-sim`, measured on the server side with tokenmeter.
//!
//! | Route | What |
//! |---|---|
//! | `POST /v1/chat/completions` | chat; SSE when `"stream": true` (role frame, one chunk per token, finish chunk, `usage` chunk with `stream_options.include_usage`, `[DONE]`), else one JSON body with `usage` |
//! | `POST /v1/completions` | the same for text completions |
//! | `GET /v1/models` | the served model |
//! | `GET /metrics` | Prometheus text, `--profile semconv` (default) or `vllm`, with the KV-cache usage |
//! | `GET /health` | `{"status":"ok"}` |
//!
//! Errors use OpenAI's body `{"error":{"message","type","param","code"}}`: 400 for a request it
//! cannot serve, 429 (with `retry-after`) when the queue is at `--queue-limit`, 500 for an
//! injected failure before the first token, and in the middle of a stream an SSE event
//! `data: {"error":{...}}` followed by `data: [DONE]`. A client that disconnects mid-stream
//! cancels its request (recorded as cancelled).
//!
//! Embedded use (the bench, tests): bind a listener, [`spawn`] on it, then read
//! [`ServeHandle::addr`] / [`ServeHandle::url`], the server-side [`ServeHandle::records`] (or
//! one request's record with [`ServeHandle::record_for`], keyed by the response `id`),
//! [`ServeHandle::metrics_text`], and stop with [`ServeHandle::shutdown`].

mod args;
mod chunks;
mod metrics;
mod openai;
mod routes;
mod slo;
mod socket;
mod sse;
#[cfg(test)]
mod tests;

#[allow(unused_imports)] // for embedders that pick the profile in code
pub(crate) use args::MetricsProfile;
pub(crate) use args::ServeArgs;
pub(crate) use slo::{SloState, read_spec};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokenmeter::sink::InMemorySink;
use tokenmeter::{Clock, Meter, RequestRecord};
use tokenmeter_sim::Engine;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use metrics::Metrics;
use routes::AppState;

/// How long [`ServeHandle::shutdown`] waits for in-flight responses.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// A running server started by [`spawn`]. Dropping it stops the server (gracefully, in the
/// background).
#[derive(Debug)]
pub(crate) struct ServeHandle {
    addr: SocketAddr,
    state: AppState,
    #[allow(dead_code)] // read by embedders (the bench, tests)
    records: Option<InMemorySink>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

#[allow(dead_code)] // the embedding API: the bench and tests use parts of it
impl ServeHandle {
    /// The bound address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`, the base URL clients use (`/v1/chat/completions` goes after it).
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every server-side record so far, in the order the requests ended (refusals included).
    pub(crate) fn records(&self) -> Vec<RequestRecord> {
        self.records
            .as_ref()
            .map(InMemorySink::records)
            .unwrap_or_default()
    }

    /// The server-side record of the request whose response carried `id` (the `id` field of
    /// the JSON body and of every SSE chunk; also the `x-request-id` response header), once it
    /// has ended.
    pub(crate) fn record_for(&self, id: &str) -> Option<RequestRecord> {
        let number: u64 = id.rsplit('-').next()?.parse().ok()?;
        self.records().into_iter().find(|r| r.id == number)
    }

    /// The `/metrics` text, as a scrape would see it now.
    pub(crate) fn metrics_text(&self) -> String {
        self.state.metrics.render(&self.state.engine)
    }

    /// The server's SLO monitor (with `--slo-spec`) and batch-size analysis.
    pub(crate) fn slo(&self) -> &SloState {
        &self.state.slo
    }

    /// The simulated engine (queue depth, batch, KV-cache usage).
    pub(crate) fn engine(&self) -> &Engine {
        &self.state.engine
    }

    /// Stops accepting, lets in-flight responses end (up to 10 s), and waits for the server to
    /// stop.
    pub(crate) async fn shutdown(mut self) -> anyhow::Result<()> {
        if let Some(signal) = self.shutdown.take() {
            let _ = signal.send(());
        }
        match tokio::time::timeout(SHUTDOWN_GRACE, &mut self.task).await {
            Ok(joined) => joined
                .context("the server task failed")?
                .context("the server stopped with an error"),
            Err(_) => {
                self.task.abort();
                anyhow::bail!(
                    "in-flight responses did not end within {SHUTDOWN_GRACE:?}; the server was stopped"
                )
            }
        }
    }
}

/// Starts the server on `listener`, keeping every server-side record in memory (for tests and
/// the embedded bench; memory grows with every request).
pub(crate) async fn spawn(args: ServeArgs, listener: TcpListener) -> anyhow::Result<ServeHandle> {
    start(args, listener, true)
}

/// Runs the server until Ctrl-C.
pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let listener = socket::bind(args.listen, args.send_buffer).with_context(|| {
        format!(
            "cannot listen on {}: is another server using the port? Pick another with --listen",
            args.listen
        )
    })?;
    let profile = args.profile;
    let model = args.model.clone();
    let mut handle = start(args, listener, false)?;
    eprintln!(
        "tokenmeter serve: model {model} on {url}  (POST /v1/chat/completions, /v1/completions; GET /metrics [{profile:?}], /health). Ctrl-C to stop.",
        url = handle.url(),
    );
    tokio::select! {
        signal = tokio::signal::ctrl_c() => {
            signal.context("cannot listen for Ctrl-C")?;
            eprintln!("{}", handle.state.slo.text());
            handle.shutdown().await
        }
        ended = &mut handle.task => {
            ended.context("the server task failed")?.context("the server stopped with an error")
        }
    }
}

fn start(
    args: ServeArgs,
    listener: TcpListener,
    keep_records: bool,
) -> anyhow::Result<ServeHandle> {
    let addr = listener
        .local_addr()
        .context("the listener has no local address")?;
    let config = args.sim_config()?;
    let spec = args.slo_spec.as_deref().map(slo::read_spec).transpose()?;
    let (prometheus, metrics) = Metrics::new(args.profile, &args.model, spec.as_ref())?;
    let clock = Clock::monotonic();
    let slo = slo::SloState::new(spec, &clock, &prometheus);
    let records = keep_records.then(InMemorySink::new);
    let mut meter = Meter::builder()
        .clock(clock)
        .sink(prometheus)
        .sink(slo.batching.clone());
    if let Some(monitor) = &slo.monitor {
        meter = meter.sink(monitor.clone());
    }
    if let Some(memory) = &records {
        meter = meter.sink(memory.clone());
    }
    let engine = Engine::builder()
        .meter(meter.build())
        .model(args.model.clone())
        .config(config)
        .build()?;
    let state = AppState {
        engine,
        model: Arc::from(args.model.as_str()),
        default_max_tokens: args.default_max_tokens,
        metrics: Arc::new(metrics),
        slo: Arc::new(slo),
    };
    let (signal, stop) = oneshot::channel::<()>();
    let app = routes::router(state.clone());
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stop.await;
            })
            .await
    });
    Ok(ServeHandle {
        addr,
        state,
        records,
        shutdown: Some(signal),
        task,
    })
}
