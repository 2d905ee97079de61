//! [`ServeArgs`]: the flags of `tokenmeter serve`, and their translation to the simulator's
//! configuration.

use std::net::SocketAddr;
use std::time::Duration;

use tokenmeter_sim::{CostModel, Faults, SimConfig, Speculation};

use super::limits::{self, Limits, parse_size};

/// Default listen address: loopback only.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:8000";
/// Default output length when a request gives no `max_tokens`.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 128;
/// Default socket send buffer of a connection, in bytes (Linux's initial `tcp_wmem`, here
/// fixed rather than grown up to 4 MiB).
pub(crate) const DEFAULT_SEND_BUFFER: u32 = 16 * 1024;
/// Default decode table (batch=step time).
pub(crate) const DEFAULT_DECODE_TABLE: &str = "1=7ms,8=8ms,32=12ms,64=18ms";

/// The naming profile of `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MetricsProfile {
    /// OpenTelemetry GenAI semantic conventions (`gen_ai_*`).
    #[default]
    Semconv,
    /// vLLM's names (`vllm:*`), for existing vLLM dashboards.
    Vllm,
    /// vLLM's names plus the names vLLM used before 0.11 (`vllm:time_per_output_token_seconds`,
    /// `vllm:gpu_cache_usage_perc`, …), for dashboards written before the renames.
    VllmLegacy,
}

/// Options of `tokenmeter serve`: an OpenAI-compatible server over a simulated
/// continuous-batching engine.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on (loopback by default; use 0.0.0.0:PORT to expose it).
    #[arg(long, default_value = DEFAULT_LISTEN)]
    pub(crate) listen: SocketAddr,

    /// The model: the name the server serves it under unless --served-model-name is given.
    #[arg(long, default_value = tokenmeter_sim::DEFAULT_MODEL)]
    pub(crate) model: String,

    /// Names the model is served under (vLLM's flag): responses and /metrics report the first,
    /// requests may name any of them, GET /v1/models lists them all (default: --model). A
    /// request naming another model is answered 404 `The model `x` does not exist.`
    #[arg(long, value_name = "NAME", num_args = 1.., value_parser = model_name)]
    pub(crate) served_model_name: Vec<String>,

    /// Serve requests that name any model under the first served name, instead of answering
    /// 404 (as serve did before it checked names).
    #[arg(long)]
    pub(crate) accept_any_model: bool,

    /// Seed of every random choice (faults, generated words).
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,

    /// Naming profile of /metrics.
    #[arg(long, value_enum, default_value_t = MetricsProfile::Semconv)]
    pub(crate) profile: MetricsProfile,

    /// Output tokens for requests that give no max_tokens / max_completion_tokens.
    #[arg(long, default_value_t = DEFAULT_MAX_TOKENS, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) default_max_tokens: u32,

    /// Requests that may run at once (the batch).
    #[arg(long, default_value_t = tokenmeter_sim::DEFAULT_MAX_BATCH, value_parser = positive_usize)]
    pub(crate) max_batch: usize,

    /// KV-cache capacity in tokens; a request waits until its prompt and output fit.
    #[arg(long, default_value_t = tokenmeter_sim::DEFAULT_KV_CAPACITY, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) kv_capacity: u64,

    /// Decode step time by batch size, linear in between: BATCH=TIME,... (e.g. 1=7ms,64=18ms).
    #[arg(long, default_value = DEFAULT_DECODE_TABLE, value_parser = parse_decode_table)]
    pub(crate) decode_table: DecodeTable,

    /// Fixed cost of a step that runs a prefill (e.g. 3ms).
    #[arg(long, default_value = "3ms", value_parser = parse_duration)]
    pub(crate) prefill_base: Duration,

    /// Prefill cost per prompt token (e.g. 50us).
    #[arg(long, default_value = "50us", value_parser = parse_duration)]
    pub(crate) prefill_per_token: Duration,

    /// Fraction of requests that fail (before or during their stream), from 0 to 1.
    #[arg(long, default_value_t = 0.0, value_parser = probability)]
    pub(crate) error_rate: f64,

    /// Answer 429 when this many requests already wait in the engine's queue (0 refuses every
    /// request that would wait).
    #[arg(long, default_value_t = limits::DEFAULT_QUEUE_LIMIT)]
    pub(crate) queue_limit: usize,

    /// The model's context length: prompt plus max_tokens beyond it is answered 400 (vLLM's
    /// "maximum context length" error).
    #[arg(long, default_value_t = tokenmeter_sim::DEFAULT_MAX_MODEL_LEN, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_model_len: u64,

    /// Close a connection whose request line and headers are not complete this long after
    /// their first byte (e.g. 10s).
    #[arg(long, default_value = "10s", value_parser = positive_duration)]
    pub(crate) header_timeout: Duration,

    /// Answer 408 when a request body has not arrived whole this long after its headers.
    #[arg(long, default_value = "30s", value_parser = positive_duration)]
    pub(crate) body_timeout: Duration,

    /// Close a connection idle (no request, no byte) this long between requests.
    #[arg(long, default_value = "5s", value_parser = positive_duration)]
    pub(crate) keep_alive_timeout: Duration,

    /// Close a connection whose client reads nothing for this long while the server has bytes
    /// to send it (its requests are recorded as cancelled).
    #[arg(long, default_value = "60s", value_parser = positive_duration)]
    pub(crate) send_timeout: Duration,

    /// Answer 413 to request bodies larger than this (bytes, or KiB, MiB, ...).
    #[arg(long, default_value = "2MiB", value_parser = parse_size)]
    pub(crate) max_body_size: usize,

    /// The memory every request body being read or held may take at once (bytes, or KiB, MiB,
    /// ...); a body that would take the total past it is answered 503 with `retry-after`
    /// before the rest of it is read. At least one --max-body-size, at most --max-connections
    /// of them.
    #[arg(long, default_value = "256MiB", value_parser = parse_size)]
    pub(crate) max_body_memory: usize,
    /// Answer 400 to a non-streaming request whose answer could be larger than this (bytes,
    /// or KiB, MiB, ...): n × max_tokens × the bytes of a token with its top_logprobs (up to
    /// about 1.7 KB with 20). Such an answer is held whole before it is sent; a stream is not.
    #[arg(long, default_value = "256MiB", value_parser = parse_size)]
    pub(crate) max_answer_size: usize,
    /// The memory every non-streaming answer in flight may take at once, each counted at its
    /// worst case (bytes, or KiB, MiB, ...); a request whose answer would take the total past
    /// it is answered 503 with `retry-after` before it runs. At least one --max-answer-size, at
    /// most --max-connections of them.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub(crate) max_answer_memory: usize,

    /// Connections open at once; lowered to leave headroom under the process's open-file
    /// limit. When full, the connection idle the longest on keep-alive is closed to make room
    /// (never one that has not yet sent its first request); when none is, new ones get a quick
    /// 503 with retry-after, but GET /metrics and GET /health are answered.
    #[arg(long, default_value_t = limits::DEFAULT_MAX_CONNECTIONS, value_parser = positive_usize)]
    pub(crate) max_connections: usize,

    /// At Ctrl-C or SIGTERM, how long in-flight responses get to end before they are
    /// cancelled (idle and half-sent connections close at once).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub(crate) shutdown_grace: Duration,

    /// Fraction of streams that pause once mid-stream, from 0 to 1.
    #[arg(long, default_value_t = 0.0, value_parser = probability)]
    pub(crate) stall_rate: f64,

    /// How long an injected stall lasts (e.g. 500ms, 2s).
    #[arg(long, default_value = "500ms", value_parser = parse_duration)]
    pub(crate) stall: Duration,

    /// How long a client may leave its stream unread (its output queue full, its request
    /// skipped in decode steps) before the server cancels the request (e.g. 30s, 2m).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub(crate) stall_limit: Duration,

    /// Socket send buffer of each connection, in bytes (SO_SNDBUF; the kernel doubles it): what
    /// a client that stops reading can leave unread in the server's kernel before its stream
    /// stalls.
    #[arg(long, default_value_t = DEFAULT_SEND_BUFFER, value_parser = clap::value_parser!(u32).range(1024..))]
    pub(crate) send_buffer: u32,

    /// An SLO spec (TOML): publish its verdict counters on /metrics, add its thresholds as
    /// bucket edges, and report attainment, burn rates and alerts on GET /slo.
    #[arg(long, value_name = "FILE")]
    pub(crate) slo_spec: Option<std::path::PathBuf>,

    /// The model's Hugging Face `tokenizer.json`: count prompt tokens with it (for `usage` and
    /// the engine's prefill) instead of estimating a token per 4 characters.
    #[arg(long, value_name = "FILE")]
    pub(crate) tokenizer: Option<std::path::PathBuf>,

    /// Act as a reasoning model: every chat answer starts with this many reasoning tokens,
    /// streamed as `reasoning_content` deltas (and a `reasoning_content` field when whole), as
    /// vLLM's reasoning parsers send them.
    #[arg(long, default_value_t = 0)]
    pub(crate) reasoning_tokens: u32,

    /// Add the server's own timings of each request, as vLLM's flag of this name does: a
    /// `metrics` object (`queue_time_ms`, `time_to_first_token_ms` from scheduling,
    /// `generation_time_ms`, `mean_itl_ms`, `tokens_per_second`) next to `usage` in the final
    /// usage chunk of a stream (a chunk of its own without `include_usage`) and in a whole
    /// answer. `tokenmeter bench` reads it and reports client − server TTFT per request.
    #[arg(long)]
    pub(crate) enable_per_request_metrics: bool,

    /// Turn the prefix cache off (vLLM's `--no-enable-prefix-caching`). On, a prompt that
    /// begins like an earlier one skips the prefill of their shared whole blocks of 16 tokens.
    #[arg(long)]
    pub(crate) no_prefix_caching: bool,

    /// Allocate the KV cache as tokens are generated and preempt the newest request when it
    /// runs out (recomputed when rescheduled), as vLLM does; without it each request reserves
    /// its prompt and whole output when scheduled and is never preempted.
    #[arg(long)]
    pub(crate) preemption: bool,

    /// Speculative decoding: tokens each decode step drafts (vLLM's `num_speculative_tokens`);
    /// 0 turns it off.
    #[arg(long, default_value_t = 0)]
    pub(crate) speculative_tokens: u32,

    /// The probability that each draft token is accepted, given the ones before it were.
    #[arg(long, default_value_t = 0.7, value_parser = probability)]
    pub(crate) speculative_acceptance: f64,
}

impl Default for ServeArgs {
    /// The same values as the flags' defaults.
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8000)),
            model: tokenmeter_sim::DEFAULT_MODEL.to_owned(),
            served_model_name: Vec::new(),
            accept_any_model: false,
            seed: 0,
            profile: MetricsProfile::Semconv,
            default_max_tokens: DEFAULT_MAX_TOKENS,
            max_batch: tokenmeter_sim::DEFAULT_MAX_BATCH,
            kv_capacity: tokenmeter_sim::DEFAULT_KV_CAPACITY,
            decode_table: DecodeTable(tokenmeter_sim::H100_8B_DECODE.to_vec()),
            prefill_base: tokenmeter_sim::H100_8B_PREFILL_BASE,
            prefill_per_token: tokenmeter_sim::H100_8B_PREFILL_PER_TOKEN,
            error_rate: 0.0,
            queue_limit: limits::DEFAULT_QUEUE_LIMIT,
            max_model_len: tokenmeter_sim::DEFAULT_MAX_MODEL_LEN,
            header_timeout: limits::DEFAULT_HEADER_TIMEOUT,
            body_timeout: limits::DEFAULT_BODY_TIMEOUT,
            keep_alive_timeout: limits::DEFAULT_KEEP_ALIVE,
            send_timeout: limits::DEFAULT_SEND_TIMEOUT,
            max_body_size: limits::DEFAULT_MAX_BODY,
            max_body_memory: limits::DEFAULT_BODY_MEMORY,
            max_answer_size: super::budget::DEFAULT_MAX_ANSWER,
            max_answer_memory: super::budget::DEFAULT_ANSWER_MEMORY,
            max_connections: limits::DEFAULT_MAX_CONNECTIONS,
            shutdown_grace: limits::DEFAULT_SHUTDOWN_GRACE,
            stall_rate: 0.0,
            stall: tokenmeter_sim::DEFAULT_STALL,
            stall_limit: tokenmeter_sim::DEFAULT_STALL_LIMIT,
            send_buffer: DEFAULT_SEND_BUFFER,
            slo_spec: None,
            tokenizer: None,
            reasoning_tokens: 0,
            enable_per_request_metrics: false,
            no_prefix_caching: false,
            preemption: false,
            speculative_tokens: 0,
            speculative_acceptance: 0.7,
        }
    }
}

impl ServeArgs {
    /// The names the model is served under: `--served-model-name`, else `--model`. Never
    /// empty; the first is the one responses report.
    pub(crate) fn served_names(&self) -> Vec<String> {
        if self.served_model_name.is_empty() {
            vec![self.model.clone()]
        } else {
            self.served_model_name.clone()
        }
    }

    /// The simulator's configuration.
    pub(crate) fn sim_config(&self) -> anyhow::Result<SimConfig> {
        let cost = CostModel::new(
            self.decode_table.0.iter().copied(),
            self.prefill_base,
            self.prefill_per_token,
        )?;
        let faults = Faults::default()
            .error_rate(self.error_rate)
            .stalls(self.stall_rate, self.stall)
            .queue_limit(self.queue_limit);
        let mut config = SimConfig::default()
            .max_batch(self.max_batch)
            .kv_capacity_tokens(self.kv_capacity)
            .prefix_cache_blocks(if self.no_prefix_caching {
                0
            } else {
                usize::try_from(self.kv_capacity / u64::from(tokenmeter_sim::BLOCK_TOKENS))
                    .unwrap_or(usize::MAX)
            })
            .preemption(self.preemption)
            .max_model_len(self.max_model_len)
            .cost(cost)
            .faults(faults)
            .seed(self.seed)
            .stall_limit(self.stall_limit);
        if self.speculative_tokens > 0 {
            config = config.speculation(Speculation::new(
                self.speculative_tokens,
                self.speculative_acceptance,
            ));
        }
        config.validate()?;
        Ok(config)
    }
}

impl ServeArgs {
    /// The bytes whole answers in flight may take together: `--max-answer-memory` within one
    /// and `connections` of `--max-answer-size` (`budget::answer_memory`).
    pub(crate) fn answer_memory(&self, connections: usize) -> usize {
        super::budget::answer_memory(self.max_answer_memory, self.max_answer_size, connections)
    }

    /// The connection and request limits, the connection limit lowered under the process's
    /// open-file limit.
    pub(crate) fn limits(&self) -> Limits {
        let max_connections =
            limits::connection_limit(self.max_connections, limits::open_file_limit());
        Limits {
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            keep_alive: self.keep_alive_timeout,
            send_timeout: self.send_timeout,
            max_body: self.max_body_size,
            body_memory: limits::body_budget(
                self.max_body_memory,
                self.max_body_size,
                max_connections,
            ),
            max_connections,
            shutdown_grace: self.shutdown_grace,
        }
    }
}

/// A decode table: (batch, step time) points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodeTable(pub(crate) Vec<(u32, Duration)>);

/// Parses `1=7ms,8=8ms,...`.
pub(crate) fn parse_decode_table(s: &str) -> Result<DecodeTable, String> {
    let points = s
        .split(',')
        .map(|point| {
            let (batch, time) = point.split_once('=').ok_or_else(|| {
                format!("`{point}` is not BATCH=TIME: write points like 1=7ms,64=18ms")
            })?;
            let batch: u32 = batch
                .trim()
                .parse()
                .map_err(|_| format!("`{batch}` is not a batch size: write a whole number"))?;
            Ok((batch, parse_duration(time)?))
        })
        .collect::<Result<Vec<_>, String>>()?;
    CostModel::new(points.iter().copied(), Duration::ZERO, Duration::ZERO)
        .map_err(|e| e.to_string())?;
    Ok(DecodeTable(points))
}

/// Parses a duration: a number and a unit (`ns`, `us`, `ms`, `s`, `m`, `h`, …; e.g. `7ms`,
/// `1.5s`), the same syntax as SLO specs.
pub(crate) use tokenmeter_slo::spec::parse_duration;

/// A served model name: not empty, not blank.
fn model_name(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("a model name cannot be empty".to_owned());
    }
    Ok(s.to_owned())
}

fn probability(s: &str) -> Result<f64, String> {
    let value: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number: give a fraction from 0 to 1"))?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{value} is not between 0 and 1"))
    }
}

fn positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        Duration::ZERO => Err("give a time greater than 0 (e.g. 10s)".to_owned()),
        d => Ok(d),
    }
}

fn positive_usize(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("give at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a whole number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ServeArgs,
    }

    #[test]
    fn default_matches_the_flags() {
        let parsed = Cli::try_parse_from(["serve"]).expect("defaults parse").args;
        let default = ServeArgs::default();
        assert_eq!(parsed.listen, default.listen);
        assert_eq!(parsed.model, default.model);
        assert_eq!(parsed.decode_table, default.decode_table);
        assert_eq!(parsed.prefill_base, default.prefill_base);
        assert_eq!(parsed.prefill_per_token, default.prefill_per_token);
        assert_eq!(parsed.stall, default.stall);
        assert_eq!(parsed.stall_limit, default.stall_limit);
        assert_eq!(parsed.send_buffer, default.send_buffer);
        assert_eq!(parsed.max_batch, default.max_batch);
        assert_eq!(parsed.kv_capacity, default.kv_capacity);
        assert_eq!(parsed.default_max_tokens, default.default_max_tokens);
        assert_eq!(parsed.profile, default.profile);
        assert_eq!(parsed.queue_limit, default.queue_limit);
        assert_eq!(parsed.max_model_len, default.max_model_len);
        assert_eq!(parsed.header_timeout, default.header_timeout);
        assert_eq!(parsed.body_timeout, default.body_timeout);
        assert_eq!(parsed.keep_alive_timeout, default.keep_alive_timeout);
        assert_eq!(parsed.send_timeout, default.send_timeout);
        assert_eq!(parsed.max_body_size, default.max_body_size);
        assert_eq!(parsed.max_body_memory, default.max_body_memory);
        assert_eq!(parsed.max_answer_memory, default.max_answer_memory);
        assert_eq!(parsed.max_answer_size, default.max_answer_size);
        assert_eq!(parsed.max_connections, default.max_connections);
        assert_eq!(parsed.shutdown_grace, default.shutdown_grace);
        assert_eq!(default.limits(), Limits::default());
        assert!(default.listen.ip().is_loopback());
        assert_eq!(
            default.sim_config().expect("valid"),
            SimConfig::default()
                .seed(0)
                .faults(Faults::default().queue_limit(limits::DEFAULT_QUEUE_LIMIT))
        );
    }

    #[test]
    fn flags_parse_into_the_simulator_config() {
        let args = Cli::try_parse_from([
            "serve",
            "--decode-table",
            "1=2ms,16=4ms",
            "--error-rate",
            "0.25",
            "--queue-limit",
            "3",
            "--stall-rate",
            "0.5",
            "--stall",
            "1.5s",
            "--profile",
            "vllm",
        ])
        .expect("valid flags")
        .args;
        let config = args.sim_config().expect("valid");
        assert_eq!(config.cost.decode_step(16), Duration::from_millis(4));
        assert_eq!(config.faults.queue_limit, Some(3));
        assert_eq!(config.faults.stall, Duration::from_millis(1_500));
        assert_eq!(args.profile, MetricsProfile::Vllm);
    }

    #[test]
    fn bad_flags_say_how_to_fix_them() {
        for (flag, value, hint) in [
            ("--error-rate", "2", "between 0 and 1"),
            ("--decode-table", "8=8ms,1=7ms", "increasing"),
            ("--decode-table", "8", "BATCH=TIME"),
            ("--stall", "5", "no unit"),
            ("--stall", "5y", "unknown unit"),
            ("--max-batch", "0", "at least 1"),
            ("--listen", "localhost", "invalid"),
            ("--header-timeout", "0s", "greater than 0"),
            ("--max-body-size", "2 parsecs", "size unit"),
            ("--max-answer-size", "0", "at least 1 byte"),
            ("--max-answer-memory", "0", "at least 1 byte"),
            ("--max-connections", "0", "at least 1"),
            ("--max-model-len", "0", "0"),
            ("--served-model-name", " ", "cannot be empty"),
        ] {
            let error = Cli::try_parse_from(["serve", flag, value])
                .err()
                .unwrap_or_else(|| panic!("{flag} {value} accepted"));
            let text = error.to_string();
            assert!(text.contains(hint), "{flag} {value}: {text}");
        }
    }

    #[test]
    fn served_names_default_to_the_model() {
        let args = Cli::try_parse_from(["serve", "--model", "org/llama"])
            .expect("valid")
            .args;
        assert_eq!(args.served_names(), ["org/llama"]);
        let args = Cli::try_parse_from([
            "serve",
            "--served-model-name",
            "a",
            "b",
            "--accept-any-model",
        ])
        .expect("valid")
        .args;
        assert_eq!(args.served_names(), ["a", "b"]);
        assert!(args.accept_any_model);
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("7ms"), Ok(Duration::from_millis(7)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1_500)));
        assert_eq!(parse_duration(" 2m "), Ok(Duration::from_secs(120)));
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("1e999s").is_err());
    }
}
