//! [`Server`]: a running server, its address, its records, and its graceful shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokenmeter::sink::InMemorySink;
use tokenmeter::{Clock, Meter, RequestRecord};
use tokenmeter_sim::Engine;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::error::Error;
use crate::listener::{self, Stopped};
use crate::metrics::Metrics;
use crate::routes::{self, AppState};
use crate::slo::SloState;
use crate::{body, openai, responses, socket};

/// How long [`Server::shutdown`] waits, past the grace, for the server to stop: dropping
/// the connections left and the engine recording their cancellation take milliseconds.
const STOP_MARGIN: Duration = Duration::from_secs(5);
/// How long a stopping server waits for the engine to record the requests it cancelled.
const ENGINE_SETTLE: Duration = Duration::from_secs(2);

/// A running server, started by [`Server::start`] (or [`start`]) or
/// [`Server::from_listener`].
///
/// Dropping it starts the same graceful shutdown as [`Server::shutdown`], in the background,
/// without waiting for it: the listener stops accepting, in-flight responses get their grace
/// and the rest are cancelled while the runtime keeps running. Call [`Server::shutdown`] to
/// know when the server has stopped and how.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    pub(crate) state: AppState,
    records: Option<InMemorySink>,
    grace: Duration,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<Stopped>,
}

/// Binds `addr` (port 0 for any free port) with [`Config::send_buffer`] and starts the
/// server on it: the same as [`Server::start`].
pub async fn start(config: Config, addr: SocketAddr) -> Result<Server, Error> {
    Server::start(config, addr).await
}

/// Listens on `addr` (port 0 for any free one); each accepted connection gets a send buffer of
/// `send_buffer` bytes. For [`Server::from_listener`], when the caller wants the socket
/// before the server starts (to print its address, or to report a busy port first).
pub fn bind(addr: SocketAddr, send_buffer: u32) -> Result<TcpListener, Error> {
    socket::bind(addr, send_buffer).map_err(|source| Error::Bind { addr, source })
}

impl Server {
    /// Binds `addr` (port 0 for any free port) with [`Config::send_buffer`] and starts the
    /// server on it. Needs a Tokio runtime (with its timer and I/O drivers).
    pub async fn start(config: Config, addr: SocketAddr) -> Result<Self, Error> {
        let listener = bind(addr, config.send_buffer)?;
        Self::from_listener(config, listener)
    }

    /// Starts the server on a bound listener (its sockets keep the listener's send buffer).
    /// Needs a Tokio runtime (with its timer and I/O drivers).
    pub fn from_listener(config: Config, listener: TcpListener) -> Result<Self, Error> {
        let addr = listener.local_addr().map_err(Error::LocalAddr)?;
        let sim = config.sim_config()?;
        let limits = config.limits();
        let (prometheus, metrics) = Metrics::new(config.profile, config.slo_spec.as_ref())?;
        let clock = Clock::monotonic();
        let slo = SloState::new(config.slo_spec.clone(), &clock, &prometheus);
        let records = config.keep_records.then(InMemorySink::new);
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
        let models: Arc<[String]> = config.served_names().into();
        let engine = Engine::builder()
            .meter(meter.build())
            .model(models[0].clone())
            .config(sim)
            .build()?;
        let counter = match &config.tokenizer {
            Some(path) => {
                openai::Counter::Tokenizer(Arc::new(crate::tokenizer::PromptTokenizer::load(path)?))
            }
            None => openai::Counter::Estimate,
        };
        let state = AppState {
            engine,
            models,
            accept_any_model: config.accept_any_model,
            root: Arc::from(config.model.as_str()),
            max_model_len: config.max_model_len,
            default_max_tokens: config.default_max_tokens,
            counter,
            max_body: limits.max_body,
            body_budget: body::BodyBudget::new(limits.body_memory),
            max_answer: config.max_answer_size,
            answer_budget: crate::budget::AnswerBudget::new(config.answer_memory_limit()),
            body_timeout: limits.body_timeout,
            metrics: Arc::new(metrics),
            slo: Arc::new(slo),
            reasoning_tokens: config.reasoning_tokens,
            per_request_metrics: config.enable_per_request_metrics,
            orca: config.orca_format,
        };
        let (signal, stop) = oneshot::channel::<()>();
        let app = routes::router(state.clone(), responses::route());
        let counts = state.metrics.http.clone();
        let engine = state.engine.clone();
        let task = tokio::spawn(async move {
            let stopped = listener::serve(listener, app, limits, counts, stop).await;
            settle(&engine).await;
            stopped
        });
        Ok(Self {
            addr,
            state,
            records,
            grace: limits.shutdown_grace,
            shutdown: Some(signal),
            task,
        })
    }

    /// The bound address (with the port the system picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`, the base URL clients use (`/v1/chat/completions` goes after it).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The model name responses report (the first served name): what clients ask for.
    pub fn model(&self) -> &str {
        self.state.model()
    }

    /// Every server-side record so far, in the order the requests ended (refusals included);
    /// empty unless [`Config::keep_records`].
    pub fn records(&self) -> Vec<RequestRecord> {
        self.records
            .as_ref()
            .map(InMemorySink::records)
            .unwrap_or_default()
    }

    /// The sink that keeps the server-side records (with [`Config::keep_records`]): still
    /// readable after [`Server::shutdown`].
    pub fn record_sink(&self) -> Option<InMemorySink> {
        self.records.clone()
    }

    /// The server-side record of the request whose response carried `id` (the `id` field of
    /// the JSON body and of every SSE chunk; also the `x-request-id` response header), once it
    /// has ended (with [`Config::keep_records`]).
    pub fn record_for(&self, id: &str) -> Option<RequestRecord> {
        let number: u64 = id.rsplit('-').next()?.parse().ok()?;
        self.records().into_iter().find(|r| r.id == number)
    }

    /// The `/metrics` text, as a scrape would see it now.
    pub fn metrics_text(&self) -> String {
        self.state.metrics.render()
    }

    /// The server's SLO monitor (with [`Config::slo_spec`]) and batch-size analysis.
    pub fn slo(&self) -> &SloState {
        &self.state.slo
    }

    /// The simulated engine (queue depth, batch, KV-cache usage).
    pub fn engine(&self) -> &Engine {
        &self.state.engine
    }

    /// The grace in-flight responses get at a shutdown ([`Config::shutdown_grace`]).
    pub fn shutdown_grace(&self) -> Duration {
        self.grace
    }

    /// Waits until the server stops on its own (it only does if its task fails): for a
    /// caller that waits for a signal and the server at once.
    pub async fn stopped(&mut self) -> Result<Stopped, Error> {
        (&mut self.task).await.map_err(Error::Task)
    }

    /// Stops accepting, closes idle and half-sent connections at once, lets in-flight
    /// responses end within [`Config::shutdown_grace`], cancels the rest (recorded once each),
    /// and waits for the server to stop (at most the grace and a few seconds; past that the
    /// server is aborted and [`Error::StopTimeout`] returned).
    pub async fn shutdown(mut self) -> Result<Stopped, Error> {
        if let Some(signal) = self.shutdown.take() {
            let _ = signal.send(());
        }
        let limit = self.grace + ENGINE_SETTLE + STOP_MARGIN;
        match tokio::time::timeout(limit, &mut self.task).await {
            Ok(joined) => joined.map_err(Error::Task),
            Err(_) => {
                self.task.abort();
                Err(Error::StopTimeout { limit })
            }
        }
    }
}

/// Waits (up to [`ENGINE_SETTLE`]) until the engine has neither a running nor a waiting
/// request: the requests of the connections a shutdown dropped are recorded as cancelled at
/// its next step.
async fn settle(engine: &Engine) {
    let deadline = tokio::time::Instant::now() + ENGINE_SETTLE;
    while engine.batch_size() + engine.queue_depth() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
