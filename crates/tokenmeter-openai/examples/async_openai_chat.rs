//! Streams one chat completion through async-openai and prints what tokenmeter measured: TTFT,
//! TPOT, tokens and the outcome.
//!
//! ```text
//! cargo run -p tokenmeter-cli -- serve &      # or any OpenAI-compatible server
//! cargo run -p tokenmeter-openai --features async-openai --example async_openai_chat -- \
//!     [BASE_URL] [PROMPT]
//! ```
//!
//! - `BASE_URL`: the API base (default `http://127.0.0.1:8000/v1`, or `TOKENMETER_BASE_URL`).
//!   Plain `http://` only: this example's async-openai has no TLS.
//! - `OPENAI_API_KEY`: sent by async-openai as a bearer token when set; never printed.
//! - `TOKENMETER_MODEL`: the model to ask for (default `sim-llama-3-8b`).

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionRequestUserMessage, ChatCompletionStreamOptions, CreateChatCompletionRequestArgs,
};
use futures_util::StreamExt as _;
use tokenmeter::sink::InMemorySink;
use tokenmeter::{Labels, Meter};

const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8000/v1";

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let base_url = args
        .next()
        .or_else(|| std::env::var("TOKENMETER_BASE_URL").ok())
        .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
    let prompt = args
        .next()
        .unwrap_or_else(|| "Tell me a short story.".to_owned());
    let model = std::env::var("TOKENMETER_MODEL").unwrap_or_else(|_| "sim-llama-3-8b".to_owned());
    if !base_url.starts_with("http://") {
        eprintln!(
            "`{base_url}`: give an http:// base URL like {DEFAULT_BASE_URL} (this example is \
             built without TLS; turn on async-openai's `rustls` feature for https://)"
        );
        return ExitCode::FAILURE;
    }

    let memory = InMemorySink::new();
    let meter = Meter::builder().sink(memory.clone()).build();
    let series = meter.series(&Labels::client("chat").request_model(model.clone()));

    // The key, if any, comes from OPENAI_API_KEY (read by async-openai).
    let client = async_openai::Client::with_config(OpenAIConfig::new().with_api_base(base_url));
    let ask = CreateChatCompletionRequestArgs::default()
        .model(model)
        .messages([ChatCompletionRequestUserMessage::from(prompt).into()])
        .max_completion_tokens(64u32)
        .stream_options(ChatCompletionStreamOptions {
            include_usage: Some(true),
            include_obfuscation: None,
        })
        .build();
    let ask = match ask {
        Ok(ask) => ask,
        Err(error) => {
            eprintln!("error: building the request: {error}");
            return ExitCode::FAILURE;
        }
    };

    // The one line: the request starts here, before the call, which `send` awaits.
    let chat = client.chat();
    let mut failed = None;
    match tokenmeter_openai::async_openai::send(chat.create_stream(ask), series.start()).await {
        Err(error) => failed = Some(error),
        Ok(mut chunks) => {
            while let Some(item) = chunks.next().await {
                match item {
                    Ok(chunk) => {
                        for choice in chunk.choices {
                            print!("{}", choice.delta.content.unwrap_or_default());
                        }
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
    let ms = |d: Option<Duration>| {
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
    if record.outcome.is_success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
