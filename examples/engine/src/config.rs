//! The command line: `--flag value` pairs, each with a default; a wrong one is an error that
//! names the flag and what it takes.

use std::net::SocketAddr;

use crate::model::ModelConfig;

/// Everything the server is started with.
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
    /// Compute threads (candle's matmuls); 1 leaves the other core to a bench on a 2-core machine.
    pub threads: usize,
    /// `vllm` or `semconv` metric names.
    pub profile: String,
}

/// The usage text.
pub const USAGE: &str = "\
tokenmeter-engine: a tiny Llama (random weights) on candle, served OpenAI-style and metered.

Flags (all optional):
  --addr ADDR          listen address [127.0.0.1:8000]
  --model NAME         the served model name [tiny-llama]
  --profile P          metric names: vllm or semconv [vllm]
  --max-batch N        most sequences decoded together [8]
  --max-context N      most positions per sequence, prompt + output [4096]
  --kv-tokens N        KV-cache budget in positions, all sequences [32768]
  --queue-limit N      most waiting requests; more are refused with 429 [256]
  --threads N          compute threads [1]
  --vocab N            vocabulary size [32000]
  --hidden N           model width [256]
  --layers N           transformer blocks [4]
  --heads N            attention heads [4]
  --ffn N              MLP width [704]
  --seed N             weights' seed [7]
";

impl Config {
    /// Reads `args` (without the program name).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut config = Self {
            addr: "127.0.0.1:8000".parse().expect("valid"),
            model_name: "tiny-llama".into(),
            model: ModelConfig {
                vocab: 32_000,
                hidden: 256,
                layers: 4,
                heads: 4,
                ffn: 704,
                max_context: 4096,
            },
            seed: 7,
            max_batch: 8,
            kv_tokens: 32_768,
            queue_limit: 256,
            threads: 1,
            profile: "vllm".into(),
        };
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            if flag == "--help" || flag == "-h" {
                return Err(USAGE.into());
            }
            let value = args
                .next()
                .ok_or_else(|| format!("{flag} needs a value\n\n{USAGE}"))?;
            let number = |min: usize| -> Result<usize, String> {
                match value.parse::<usize>() {
                    Ok(n) if n >= min => Ok(n),
                    _ => Err(format!(
                        "{flag} takes a whole number ≥ {min}, not `{value}`"
                    )),
                }
            };
            match flag.as_str() {
                "--addr" => {
                    config.addr = value.parse().map_err(|_| {
                        format!("--addr takes HOST:PORT (e.g. 127.0.0.1:8000), not `{value}`")
                    })?
                }
                "--model" => config.model_name = value,
                "--profile" => match value.as_str() {
                    "vllm" | "semconv" => config.profile = value,
                    _ => return Err(format!("--profile takes vllm or semconv, not `{value}`")),
                },
                "--max-batch" => config.max_batch = number(1)?,
                "--max-context" => config.model.max_context = number(2)?,
                "--kv-tokens" => config.kv_tokens = number(2)?,
                "--queue-limit" => config.queue_limit = number(1)?,
                "--threads" => config.threads = number(1)?,
                "--vocab" => config.model.vocab = number(16)?,
                "--hidden" => config.model.hidden = number(2)?,
                "--layers" => config.model.layers = number(1)?,
                "--heads" => config.model.heads = number(1)?,
                "--ffn" => config.model.ffn = number(1)?,
                "--seed" => config.seed = number(0)? as u64,
                _ => return Err(format!("unknown flag `{flag}`\n\n{USAGE}")),
            }
        }
        config.model.check()?;
        if config.kv_tokens < config.model.max_context {
            return Err(format!(
                "--kv-tokens {} is below --max-context {}: a request of the full context could never run; raise --kv-tokens",
                config.kv_tokens, config.model.max_context
            ));
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, String> {
        Config::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn defaults_flags_and_errors_that_name_the_flag() {
        let c = parse(&[]).expect("defaults");
        assert_eq!((c.max_batch, c.threads), (8, 1));
        let c = parse(&["--max-batch", "4", "--addr", "127.0.0.1:0"]).expect("valid");
        assert_eq!(c.max_batch, 4);
        assert!(
            parse(&["--max-batch", "0"])
                .unwrap_err()
                .contains("--max-batch")
        );
        assert!(
            parse(&["--max-batch"])
                .unwrap_err()
                .contains("needs a value")
        );
        assert!(
            parse(&["--nope", "1"])
                .unwrap_err()
                .contains("unknown flag `--nope`")
        );
        assert!(
            parse(&["--kv-tokens", "100"])
                .unwrap_err()
                .contains("--max-context")
        );
        assert!(parse(&["--heads", "3"]).unwrap_err().contains("--heads"));
    }
}
