//! `tokenmeter-engine`: a real inference engine, metered the way the guide tells users.
//!
//! A tiny Llama (random weights made at start-up) runs on candle in one blocking engine thread
//! (continuous batching: each step prefills newly admitted sequences, then decodes every
//! running one in one batched pass); axum serves OpenAI-compatible streams on a tokio runtime
//! beside it; tokenmeter measures each request's life (arrival in the handler, `scheduled`,
//! tokens and the outcome on the engine thread) and each engine pass (`Meter::engine`), and
//! tokenmeter-prometheus publishes both on `/metrics`.

mod config;
mod engine;
mod job;
mod kv_cache;
mod model;
mod openai;
mod scheduler;
mod server;
#[cfg(test)]
mod tests;
mod tokenizer;
mod weights;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::time::Instant;

use axum::serve::ListenerExt;
use tokenmeter::sink::CacheConfig;
use tokenmeter::{Labels, Meter};
use tokenmeter_prometheus::{Builder, Profile};

use clap::Parser as _;

use crate::config::{Args, Config};
use crate::engine::Engine;
use crate::model::Model;
use crate::scheduler::Scheduler;
use crate::server::App;
use crate::tokenizer::Tokenizer;

fn main() -> ExitCode {
    // clap prints --help and --version itself, and refuses a wrong flag naming it (exit 2).
    let config = match Config::try_from(Args::parse()) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    // candle's matmuls (gemm) and its other parallel loops (rayon) read this once, at their
    // first use: set it before any thread exists. One thread leaves the other core of a 2-core
    // machine to the HTTP side and to the bench.
    // SAFETY: no other thread runs yet, so nothing reads the environment concurrently.
    unsafe { std::env::set_var("RAYON_NUM_THREADS", config.threads.to_string()) };
    match run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(config: Config) -> Result<(), String> {
    let started = Instant::now();
    let model = Model::random(config.model, config.seed).map_err(|e| e.to_string())?;
    warm_up(&model)?;
    eprintln!(
        "model: {} parameters ({:?}), random weights from seed {}, made in {:.2} s; {} compute thread(s)",
        config.model.parameters(),
        config.model,
        config.seed,
        started.elapsed().as_secs_f64(),
        candle_core::utils::get_num_threads(),
    );

    // Metering: one meter with the Prometheus sink; a series per API and one engine recorder,
    // resolved once at start-up and kept.
    let profile: Profile = config
        .profile
        .as_str()
        .parse()
        .map_err(|e| format!("{e}"))?;
    let (sink, metrics) = Builder::new(profile)
        .build_recorder()
        .map_err(|e| e.to_string())?;
    let meter = Meter::builder().sink(sink).build();
    let labels = |operation| {
        Labels::server(operation)
            .provider("candle")
            .request_model(&config.model_name)
    };
    let recorder = Arc::new(meter.engine(&labels("")));
    // One "block" is one KV position here: the budget is --kv-tokens positions.
    recorder.set_cache_config(CacheConfig::new(1, config.kv_tokens as u64));

    let queued = Arc::new(AtomicUsize::new(0));
    let (jobs, inbox) = std::sync::mpsc::channel();
    let scheduler = Scheduler::new(config.max_batch, config.kv_tokens, queued.clone());
    let engine = Engine::new(model, scheduler, recorder.clone(), config.kv_tokens);
    let engine_thread = std::thread::Builder::new()
        .name("engine".into())
        .spawn(move || engine.run(inbox))
        .map_err(|e| format!("cannot start the engine thread: {e}"))?;

    let app = Arc::new(App {
        model: config.model_name.clone(),
        completions: meter.series(&labels("text_completion")),
        chat: meter.series(&labels("chat")),
        recorder,
        jobs,
        queued,
        queue_limit: config.queue_limit,
        max_context: config.model.max_context,
        tokenizer: Tokenizer::new(config.model.vocab as u32),
        metrics,
        next_id: AtomicU64::new(0),
    });
    // The HTTP side needs little: one runtime thread, so the engine keeps its core.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(config.addr)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", config.addr))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        eprintln!("listening on http://{addr} (model {})", config.model_name);
        // TCP_NODELAY: without it the first token's small write waits (Nagle) for the client's
        // delayed ACK of the response headers, up to 40 ms, whenever the first token comes
        // sooner than that: measured here as client − server TTFT of about 30 ms at 100-token
        // prompts and of nothing at 500 (uvicorn, and so vLLM, sets it too).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, server::router(app))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .map_err(|e| e.to_string())
    });
    drop(runtime); // drops the router and so the jobs' sender: the engine thread ends
    let _ = engine_thread.join();
    served
}

/// One short prefill and decode, so the first request does not pay for lazy set-up.
fn warm_up(model: &Model) -> Result<(), String> {
    let mut cache = model.new_cache(8);
    let first = model
        .prefill(&[1, 2, 3], &mut cache)
        .map_err(|e| e.to_string())?;
    model
        .decode(&[first], &mut [&mut cache])
        .map_err(|e| e.to_string())?;
    Ok(())
}
