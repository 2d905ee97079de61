//! The `tokenmeter` command: `serve` a simulated OpenAI-compatible engine, `bench` any
//! OpenAI-compatible endpoint.
#![forbid(unsafe_code)]
// Every write to stdout and stderr goes through `console`, which survives a closed pipe.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod bench;
#[cfg(test)]
mod cli_reference;
mod serve;
mod slo;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The exit codes of `tokenmeter bench`, at the end of its `-h` and `--help`.
macro_rules! bench_exit_codes {
    () => {
        "Exit codes: 0 ok; 1 an objective missed (--fail-under, --slo-spec); \
        2 bad flags or input; 3 could not run (server unreachable, test request refused, model \
        discovery failed, no request succeeded, an output not written); 130 interrupted \
        (Ctrl-C/SIGTERM: no new requests, those in flight finish, a second signal cancels \
        them; what completed is written, marked as interrupted). A stdout closed early \
        (`| head -1`) changes none of these: the run goes on, its files are written."
    };
}

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
    #[command(
        args_conflicts_with_subcommands = true,
        after_help = bench_exit_codes!(),
        // `--help` adds the terms of the table (the guide's glossary defines the same words).
        after_long_help = concat!(bench_exit_codes!(), "\n\n", include_str!("bench_terms.txt"))
    )]
    Bench(Box<bench::BenchFlags>),
    /// Work with SLO specs: generate Prometheus rules.
    #[command(subcommand)]
    Slo(slo::SloCommand),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let bench_run = matches!(cli.command, Command::Bench(_));
    let result = match cli.command {
        Command::Serve(args) => serve::run(*args).await,
        Command::Bench(flags) => bench::run(*flags).await,
        Command::Slo(command) => slo::run(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tokenmeter_bench::console::err(&format!("error: {error:#}\n"));
            if bench_run {
                ExitCode::from(tokenmeter_bench::exit_code(&error))
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
