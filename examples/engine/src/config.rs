//! The command line (clap): every flag has a default; a wrong value is refused with a message
//! that names the flag and what it takes (exit code 2).

use std::net::SocketAddr;

use clap::{Parser, ValueEnum};

use crate::model::ModelConfig;

/// The metric names `/metrics` publishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Names {
    /// vLLM's names (`vllm:…`), what vLLM's dashboards and gateways read.
    Vllm,
    /// tokenmeter's own (OpenTelemetry GenAI conventions) names.
    Semconv,
}

impl Names {
    /// The name `tokenmeter_prometheus::Profile` parses.
    pub fn as_str(self) -> &'static str {
        match self {
            Names::Vllm => "vllm",
            Names::Semconv => "semconv",
        }
    }
}

/// tokenmeter-engine: a tiny Llama (random weights) on candle, served OpenAI-style and metered.
#[derive(Clone, Debug, Parser)]
#[command(name = "tokenmeter-engine", version)]
pub struct Args {
    /// Listen address (loopback by default).
    #[arg(long, default_value = "127.0.0.1:8000", value_name = "HOST:PORT")]
    pub addr: SocketAddr,
    /// The served model name (and its label).
    #[arg(long = "model", default_value = "tiny-llama", value_name = "NAME")]
    pub model_name: String,
    /// Metric names on `/metrics`.
    #[arg(long, value_enum, default_value_t = Names::Vllm)]
    pub profile: Names,
    /// Most sequences decoded together.
    #[arg(long, default_value_t = 8, value_parser = at_least::<1>)]
    pub max_batch: usize,
    /// Most positions per sequence, prompt and output together.
    #[arg(long, default_value_t = 4096, value_parser = at_least::<2>)]
    pub max_context: usize,
    /// KV-cache budget in positions, all sequences together.
    #[arg(long, default_value_t = 32_768, value_parser = at_least::<2>)]
    pub kv_tokens: usize,
    /// Most waiting requests; more are refused with 429.
    #[arg(long, default_value_t = 256, value_parser = at_least::<1>)]
    pub queue_limit: usize,
    /// Compute threads (candle's matmuls); 1 leaves the other core of a 2-core machine to the
    /// HTTP side and to a bench.
    #[arg(long, default_value_t = 1, value_parser = at_least::<1>)]
    pub threads: usize,
    /// Vocabulary size.
    #[arg(long, default_value_t = 32_000, value_parser = at_least::<16>)]
    pub vocab: usize,
    /// Model width.
    #[arg(long, default_value_t = 256, value_parser = at_least::<2>)]
    pub hidden: usize,
    /// Transformer blocks.
    #[arg(long, default_value_t = 4, value_parser = at_least::<1>)]
    pub layers: usize,
    /// Attention heads (must divide --hidden into an even head size).
    #[arg(long, default_value_t = 4, value_parser = at_least::<1>)]
    pub heads: usize,
    /// MLP width.
    #[arg(long, default_value_t = 704, value_parser = at_least::<1>)]
    pub ffn: usize,
    /// The weights' seed.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

/// A whole number of at least `MIN`.
fn at_least<const MIN: usize>(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if n >= MIN => Ok(n),
        _ => Err(format!("takes a whole number ≥ {MIN}, not `{value}`")),
    }
}

/// Everything the server is started with, checked as a whole.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The model name served (and labelled).
    pub model_name: String,
    /// The model's shape.
    pub model: ModelConfig,
    /// The weights' seed.
    pub seed: u64,
    /// Most sequences in a batch.
    pub max_batch: usize,
    /// KV-cache budget in positions (all sequences).
    pub kv_tokens: usize,
    /// Most requests waiting; more get 429.
    pub queue_limit: usize,
    /// Compute threads.
    pub threads: usize,
    /// The metric names.
    pub profile: Names,
}

impl TryFrom<Args> for Config {
    type Error = String;

    /// Checks what no single flag can: the model's shape, and a KV budget that holds one
    /// request of the full context.
    fn try_from(args: Args) -> Result<Self, String> {
        let model = ModelConfig {
            vocab: args.vocab,
            hidden: args.hidden,
            layers: args.layers,
            heads: args.heads,
            ffn: args.ffn,
            max_context: args.max_context,
        };
        model.check()?;
        if args.kv_tokens < args.max_context {
            return Err(format!(
                "--kv-tokens {} is below --max-context {}: a request of the full context could never run; raise --kv-tokens",
                args.kv_tokens, args.max_context
            ));
        }
        Ok(Self {
            addr: args.addr,
            model_name: args.model_name,
            model,
            seed: args.seed,
            max_batch: args.max_batch,
            kv_tokens: args.kv_tokens,
            queue_limit: args.queue_limit,
            threads: args.threads,
            profile: args.profile,
        })
    }
}

impl Config {
    /// The defaults, as a start with no flag gives them (the step-time measurement's model).
    #[cfg(test)]
    pub(crate) fn defaults() -> Self {
        Self::try_from(Args::parse_from(["tokenmeter-engine"])).expect("the defaults are valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, String> {
        let args =
            Args::try_parse_from(std::iter::once("tokenmeter-engine").chain(args.iter().copied()))
                .map_err(|e| e.to_string())?;
        Config::try_from(args)
    }

    #[test]
    fn defaults_flags_and_errors_that_name_the_flag() {
        let c = parse(&[]).expect("defaults");
        assert_eq!((c.max_batch, c.threads, c.profile), (8, 1, Names::Vllm));
        assert_eq!(c.addr.to_string(), "127.0.0.1:8000");
        let c = parse(&[
            "--max-batch",
            "4",
            "--addr",
            "127.0.0.1:0",
            "--profile",
            "semconv",
        ])
        .expect("valid");
        assert_eq!((c.max_batch, c.profile), (4, Names::Semconv));
        let refused = |args: &[&str], names: &str| {
            let e = parse(args).unwrap_err();
            assert!(e.contains(names), "{args:?}: {e}");
        };
        refused(&["--max-batch", "0"], "--max-batch");
        refused(&["--max-batch", "0"], "whole number ≥ 1");
        refused(&["--max-batch"], "--max-batch");
        refused(&["--nope", "1"], "--nope");
        refused(&["--addr", "localhost"], "--addr");
        refused(&["--profile", "x"], "--profile");
        refused(&["--kv-tokens", "100"], "--max-context");
        refused(&["--heads", "3"], "--heads");
    }
}
