//! `tokenmeter serve`: an OpenAI-compatible server over the simulated continuous-batching
//! engine of `tokenmeter-sim`, measured on the server side with tokenmeter.
//!
//! | Route | What |
//! |---|---|
//! | `POST /v1/chat/completions` | chat; SSE when `"stream": true` (role frame, one chunk per token, finish chunk, `usage` chunk with `stream_options.include_usage`, `[DONE]`), else one JSON body with `usage` |
//! | `POST /v1/completions` | the same for text completions |
//! | `GET /v1/models` | the served names (`--served-model-name`, default `--model`) |
//! | `GET /v1/models/{id}` | one served name's model object |
//! | `GET /metrics` | Prometheus text, `--profile semconv` (default) or `vllm`, with the KV-cache usage and every HTTP answer by route, method and status class |
//! | `GET /health` | `{"status":"ok"}` |
//! | `GET /slo` | the SLO monitor's report (with `--slo-spec`) |
//! | any other path / method | 404 / 405 with OpenAI's error body |
//!
//! Errors use OpenAI's body `{"error":{"message","type","param","code"}}`; a request refused
//! for its body or its model has vLLM's values (`type` `BadRequestError` or `NotFoundError`,
//! `param` the field, `code` the status; `api_error.rs`):
//!
//! | Status | When |
//! |---|---|
//! | 400 | a body that is not JSON, or a field of the wrong type or out of range (`param` names it); prompt + `max_tokens` beyond `--max-model-len` (default 8,192), with vLLM's message `This model's maximum context length is …` (code `context_length_exceeded`); a non-streaming answer whose worst case is over `--max-answer-size` (default 256 MiB; `budget.rs`) |
//! | 404 | a `model` not served: ``The model `x` does not exist.`` (also `GET /v1/models/x`) |
//! | 404, 405 | an unknown path, or a method the route does not answer (with `Allow`) |
//! | 408 | a body not whole within `--body-timeout` (default 30 s) of its headers |
//! | 413 | a body over `--max-body-size` (default 2 MiB), refused from its `content-length` before it is read |
//! | 429 | the queue holds `--queue-limit` requests (default 256), with `retry-after` |
//! | 500 | an injected failure before the first token (mid-stream: an SSE `data: {"error":{...}}` then `data: [DONE]`) |
//! | 503 | no connection at `--max-connections` is idle (a quick answer with `retry-after: 1`, then the connection closes; `GET /metrics` and `GET /health` are answered as usual instead); or the bodies being received already take `--max-body-memory` (with `retry-after: 1`); or a non-streaming answer's worst case does not fit what the answers in flight leave of `--max-answer-memory` (with `retry-after: 1`) |
//!
//! A request naming a model that is not served is answered 404 (below) unless
//! `--accept-any-model`; responses report the first served name. The request options clients
//! notice behave as in vLLM: `stop` (`stop.rs`), `n` (`choices.rs`), `logprobs` (simulated,
//! `logprobs.rs`), and every sampling value is checked (`sampling.rs`).
//!
//! A client that disconnects mid-stream cancels its request (recorded as cancelled).
//!
//! # Connections
//!
//! | Limit | Default | What happens |
//! |---|---|---|
//! | `--header-timeout` | 10 s | a request line and headers not complete this long after their first byte: the connection is closed |
//! | `--keep-alive-timeout` | 5 s | a connection with no request and no byte this long: closed |
//! | `--body-timeout` | 30 s | 408 |
//! | `--max-body-size` | 2 MiB | 413 |
//! | `--max-body-memory` | 256 MiB (at most `--max-connections` bodies of `--max-body-size`, at least one) | the bytes of every body being received or held at once; a body that would take the total past it: 503 before the rest of it is read (`body.rs`) |
//! | `--max-answer-size` | 256 MiB | a non-streaming request whose answer could be larger (`n` × `max_tokens` × up to 1,719 bytes a token with `top_logprobs` 20) is a 400 before the engine; an answer is written as JSON while its tokens come and held once (`answer.rs`), a stream keeps only what it has not sent |
//! | `--max-answer-memory` | 1 GiB (four answers of the default `--max-answer-size`; at most `--max-connections` of `--max-answer-size`, at least one) | the worst cases of every non-streaming answer in flight at once: a request's is held from before the engine until its last byte is handed to hyper (or it ends otherwise); one that does not fit is a 503 with `retry-after: 1` (code `overloaded`, recorded `overloaded`, counted as `tokenmeter_http_requests_refused_total{reason="answer_budget"}`; `budget.rs`). Streams are not counted |
//! | `--max-connections` | 1024, lowered to leave an eighth (at least 32) of `RLIMIT_NOFILE` free | at the limit the longest-idle connection (one whose response ended and that waits on keep-alive; never one that has not yet sent its first request) is closed to make room; if none is idle, the new one gets a 503, or its `GET /metrics` / `GET /health` is answered (at most 64 such connections at once, past them a 503 at once; `overflow.rs`) |
//! | `--shutdown-grace` | 1 s | at Ctrl-C / SIGTERM / [`ServeHandle::shutdown`]: idle and half-sent connections close at once; in-flight responses get the grace, then are dropped and their requests recorded `cancelled`; exit 0 |
//!
//! Every answer is counted on `/metrics` (`tokenmeter_http_responses_total` or vLLM's
//! `http_requests_total`), and every connection the server closes on its own by reason
//! (`tokenmeter_http_connections_closed_total`); see `http_counts.rs`.
//!
//! Embedded use (the bench, tests): bind a listener, [`spawn`] on it, then read
//! [`ServeHandle::addr`] / [`ServeHandle::url`], the server-side [`ServeHandle::records`] (or
//! one request's record with [`ServeHandle::record_for`], keyed by the response `id`),
//! [`ServeHandle::metrics_text`], and stop with [`ServeHandle::shutdown`].

mod answer;
mod api_error;
mod args;
mod body;
mod budget;
mod choices;
mod chunks;
mod connections;
mod fields;
mod http_counts;
mod limits;
mod listener;
mod logprobs;
mod metrics;
mod openai;
mod overflow;
mod request_metrics;
mod routes;
mod sampling;
mod slo;
mod socket;
mod sse;
mod stop;
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

use crate::console;

use listener::Stopped;
use metrics::Metrics;
use routes::AppState;

/// How long [`ServeHandle::shutdown`] waits, past the grace, for the server to stop: dropping
/// the connections left and the engine recording their cancellation take milliseconds.
const STOP_MARGIN: Duration = Duration::from_secs(5);
/// How long a stopping server waits for the engine to record the requests it cancelled.
const ENGINE_SETTLE: Duration = Duration::from_secs(2);

/// A running server started by [`spawn`]. Dropping it stops the server (gracefully, in the
/// background).
#[derive(Debug)]
pub(crate) struct ServeHandle {
    addr: SocketAddr,
    state: AppState,
    #[allow(dead_code)] // read by embedders (the bench, tests)
    records: Option<InMemorySink>,
    grace: Duration,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<Stopped>,
}

#[allow(dead_code)] // the embedding API: the bench and tests use parts of it
impl ServeHandle {
    /// The bound address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The model name responses report (the first served name): what clients ask for.
    pub(crate) fn model(&self) -> &str {
        self.state.model()
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

    /// The sink that keeps the server-side records (with [`spawn`]): still readable after
    /// [`ServeHandle::shutdown`].
    pub(crate) fn record_sink(&self) -> Option<InMemorySink> {
        self.records.clone()
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
        self.state.metrics.render()
    }

    /// The server's SLO monitor (with `--slo-spec`) and batch-size analysis.
    pub(crate) fn slo(&self) -> &SloState {
        &self.state.slo
    }

    /// The simulated engine (queue depth, batch, KV-cache usage).
    pub(crate) fn engine(&self) -> &Engine {
        &self.state.engine
    }

    /// Stops accepting, closes idle and half-sent connections at once, lets in-flight
    /// responses end within `--shutdown-grace`, cancels the rest (recorded once each), and
    /// waits for the server to stop.
    pub(crate) async fn shutdown(mut self) -> anyhow::Result<Stopped> {
        if let Some(signal) = self.shutdown.take() {
            let _ = signal.send(());
        }
        let limit = self.grace + ENGINE_SETTLE + STOP_MARGIN;
        match tokio::time::timeout(limit, &mut self.task).await {
            Ok(joined) => joined.context("the server task failed"),
            Err(_) => {
                self.task.abort();
                anyhow::bail!(
                    "the server did not stop within {limit:?} of the shutdown; it was aborted"
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
    let model = args.served_names().join(", ");
    let limits = args.limits();
    if limits.max_connections < args.max_connections {
        console::err(&format!(
            "tokenmeter serve: at most {} connections (not {}): the open-file limit is {}; raise it with `ulimit -n`\n",
            limits.max_connections,
            args.max_connections,
            limits::open_file_limit().map_or_else(|| "unknown".to_owned(), |n| n.to_string()),
        ));
    }
    if limits.body_memory > args.max_body_memory {
        console::err(&format!(
            "tokenmeter serve: request bodies may take {} bytes at once (not {}): one body of --max-body-size must fit\n",
            limits.body_memory, args.max_body_memory,
        ));
    }
    if args.answer_memory(limits.max_connections) > args.max_answer_memory {
        console::err(&format!(
            "tokenmeter serve: whole answers may take {} bytes at once (not {}): one answer of --max-answer-size must fit\n",
            args.answer_memory(limits.max_connections),
            args.max_answer_memory,
        ));
    }
    let mut handle = start(args, listener, false)?;
    console::err(&format!(
        "tokenmeter serve: model {model} on {url}  (POST /v1/chat/completions, /v1/completions; GET /metrics [{profile:?}], /health). Ctrl-C to stop.\n",
        url = handle.url(),
    ));
    tokio::select! {
        signal = stop_signal() => {
            let name = signal?;
            console::err(&format!("{}\n", handle.state.slo.text()));
            console::err(&format!("tokenmeter serve: {name}: stopping (in-flight responses get {:?})\n", handle.grace));
            let stopped = handle.shutdown().await?;
            console::err(&format!(
                "tokenmeter serve: stopped: {} connections closed at once, {} ended within the grace, {} cancelled\n",
                stopped.closed, stopped.drained, stopped.cancelled
            ));
            Ok(())
        }
        ended = &mut handle.task => {
            let _ = ended.context("the server task failed")?;
            anyhow::bail!("the server stopped on its own")
        }
    }
}

/// Waits for Ctrl-C (SIGINT) or, on Unix, SIGTERM; returns its name.
async fn stop_signal() -> anyhow::Result<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
        tokio::select! {
            ctrl_c = tokio::signal::ctrl_c() => ctrl_c.context("cannot listen for Ctrl-C").map(|()| "interrupted"),
            _ = term.recv() => Ok("terminated"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c()
            .await
            .context("cannot listen for Ctrl-C")
            .map(|()| "interrupted")
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
    let limits = args.limits();
    let spec = args.slo_spec.as_deref().map(slo::read_spec).transpose()?;
    let (prometheus, metrics) = Metrics::new(args.profile, spec.as_ref())?;
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
    let models: Arc<[String]> = args.served_names().into();
    let engine = Engine::builder()
        .meter(meter.build())
        .model(models[0].clone())
        .config(config)
        .build()?;
    let state = AppState {
        engine,
        models,
        accept_any_model: args.accept_any_model,
        root: Arc::from(args.model.as_str()),
        max_model_len: args.max_model_len,
        default_max_tokens: args.default_max_tokens,
        counter: match &args.tokenizer {
            Some(path) => {
                openai::Counter::Tokenizer(Arc::new(crate::tokenizer::PromptTokenizer::load(path)?))
            }
            None => openai::Counter::Estimate,
        },
        max_body: limits.max_body,
        body_budget: body::BodyBudget::new(limits.body_memory),
        max_answer: args.max_answer_size,
        answer_budget: budget::AnswerBudget::new(args.answer_memory(limits.max_connections)),
        body_timeout: limits.body_timeout,
        metrics: Arc::new(metrics),
        slo: Arc::new(slo),
        reasoning_tokens: args.reasoning_tokens,
        per_request_metrics: args.enable_per_request_metrics,
    };
    let (signal, stop) = oneshot::channel::<()>();
    let app = routes::router(state.clone());
    let counts = state.metrics.http.clone();
    let engine = state.engine.clone();
    let task = tokio::spawn(async move {
        let stopped = listener::serve(listener, app, limits, counts, stop).await;
        settle(&engine).await;
        stopped
    });
    Ok(ServeHandle {
        addr,
        state,
        records,
        grace: limits.shutdown_grace,
        shutdown: Some(signal),
        task,
    })
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
