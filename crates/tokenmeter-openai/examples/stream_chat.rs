//! Streams one chat completion from an OpenAI-compatible endpoint and prints what tokenmeter
//! measured: TTFT, tokens and the outcome.
//!
//! ```text
//! cargo run -p tokenmeter-cli -- serve &      # or any OpenAI-compatible server
//! cargo run -p tokenmeter-openai --features reqwest --example stream_chat -- \
//!     [URL] [PROMPT]
//! ```
//!
//! - `URL`: the endpoint (default `http://127.0.0.1:8000/v1/chat/completions`, or
//!   `TOKENMETER_URL`). Plain `http://` only: this example's `reqwest` has no TLS.
//! - `OPENAI_API_KEY`: sent as a bearer token when set; never printed.
//! - `TOKENMETER_MODEL`: the model to ask for (default `sim-llama-3-8b`).

use std::io::Write as _;
use std::process::ExitCode;

use futures_util::StreamExt as _;
use tokenmeter::sink::InMemorySink;
use tokenmeter::{Labels, Meter};

const DEFAULT_URL: &str = "http://127.0.0.1:8000/v1/chat/completions";

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .or_else(|| std::env::var("TOKENMETER_URL").ok())
        .unwrap_or_else(|| DEFAULT_URL.to_owned());
    let prompt = args
        .next()
        .unwrap_or_else(|| "Tell me a short story.".to_owned());
    let model = std::env::var("TOKENMETER_MODEL").unwrap_or_else(|_| "sim-llama-3-8b".to_owned());
    let Ok(parsed) = reqwest::Url::parse(&url) else {
        eprintln!("`{url}` is not a URL; give one like {DEFAULT_URL}");
        return ExitCode::FAILURE;
    };
    if parsed.scheme() != "http" {
        eprintln!(
            "`{url}`: this example is built without TLS; use an http:// URL (or add a TLS \
             feature of reqwest)"
        );
        return ExitCode::FAILURE;
    }

    let memory = InMemorySink::new();
    let meter = Meter::builder().sink(memory.clone()).build();
    let mut labels = Labels::client("chat").request_model(model.clone());
    if let Some(host) = parsed.host_str() {
        labels = labels.server_address(host.to_owned());
    }
    if let Some(port) = parsed.port_or_known_default() {
        labels = labels.server_port(port);
    }
    let series = meter.series(&labels);

    let body = serde_json::json!({
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 64,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let mut post = reqwest::Client::new()
        .post(parsed)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Ok(key) = std::env::var("OPENAI_API_KEY") {
        post = post.bearer_auth(key); // reqwest marks the header sensitive
    }

    let mut failed = None;
    match tokenmeter_openai::send(post, series.start()).await {
        Err(error) => failed = Some(error),
        Ok(mut chunks) => {
            while let Some(item) = chunks.next().await {
                match item {
                    Ok(chunk) => {
                        print!("{}", chunk.text());
                        let _ = std::io::stdout().flush();
                    }
                    Err(error) => failed = Some(error),
                }
            }
            println!();
        }
    }
    if let Some(error) = &failed {
        eprintln!("error: {error}");
    }

    let Some(record) = memory.records().pop() else {
        eprintln!("no request was recorded");
        return ExitCode::FAILURE;
    };
    let ms = |d: Option<std::time::Duration>| {
        d.map_or_else(
            || "-".to_owned(),
            |d| format!("{:.1} ms", d.as_secs_f64() * 1e3),
        )
    };
    println!("outcome        {}", record.outcome);
    println!("TTFT           {}", ms(record.ttft));
    println!("TPOT           {}", ms(record.tpot()));
    println!("E2E            {}", ms(Some(record.e2e)));
    let input = record
        .input_tokens
        .map_or("-".to_owned(), |n| n.to_string());
    println!("input tokens   {input}");
    println!("output tokens  {}", record.output_tokens);
    if let Some(reason) = record.finish_reason {
        println!("finish reason  {}", reason.as_str());
    }
    println!("\n{}", memory.report());
    if record.outcome.is_success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
