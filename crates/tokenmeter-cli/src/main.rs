//! The `tokenmeter` command: `serve` a simulated OpenAI-compatible engine, `bench` any
//! OpenAI-compatible endpoint.
#![forbid(unsafe_code)]

mod bench;
mod serve;
mod slo;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Measure what users of an LLM feel.
#[derive(Debug, Parser)]
#[command(name = "tokenmeter", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve a simulated continuous-batching engine over an OpenAI-compatible API.
    Serve(Box<serve::ServeArgs>),
    /// Benchmark an OpenAI-compatible endpoint (the built-in simulator when no --url is given).
    Bench(Box<bench::BenchArgs>),
    /// Work with SLO specs: generate Prometheus rules.
    #[command(subcommand)]
    Slo(slo::SloCommand),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve::run(*args).await,
        Command::Bench(args) => bench::run(*args).await,
        Command::Slo(command) => slo::run(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
