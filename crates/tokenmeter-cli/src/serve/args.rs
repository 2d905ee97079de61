//! [`ServeArgs`]: the flags of `tokenmeter serve`, and their mapping onto the server library's
//! [`Config`]. The defaults are the library's: the flags' default texts are checked equal to
//! [`Config::default`] by a test below.

use std::net::SocketAddr;
use std::time::Duration;

use tokenmeter_server::{
    Config, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_TOKENS, DEFAULT_QUEUE_LIMIT, DEFAULT_SEND_BUFFER,
    parse_size,
};
use tokenmeter_sim::CostModel;

/// Default listen address: loopback only.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:8000";
/// Default decode table (batch=step time), as `--decode-table` writes it.
pub(crate) const DEFAULT_DECODE_TABLE: &str = "1=7ms,8=8ms,32=12ms,64=18ms";

/// The naming profile of `/metrics` (the library's [`tokenmeter_server::MetricsProfile`]).
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

/// The format of the ORCA load report (`--orca-format`; the library's
/// [`tokenmeter::orca::OrcaFormat`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OrcaFormat {
    /// `TEXT named_metrics.kv_cache_usage_perc=0.4, ...` (Envoy's native form).
    Text,
    /// `JSON {"named_metrics": {...}}`.
    Json,
}

impl From<OrcaFormat> for tokenmeter::orca::OrcaFormat {
    fn from(format: OrcaFormat) -> Self {
        match format {
            OrcaFormat::Text => Self::Text,
            OrcaFormat::Json => Self::Json,
        }
    }
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
    #[arg(long, default_value_t = DEFAULT_QUEUE_LIMIT)]
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
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS, value_parser = positive_usize)]
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

    /// Add an ORCA load report to every completion answer, for load balancers that read it
    /// (Envoy, a gateway's endpoint picker): the `endpoint-load-metrics` header with the
    /// engine's `kv_cache_usage_perc`, `num_requests_waiting` and `num_requests_running`, as
    /// vLLM writes it. Without this flag, a request that sends `endpoint-load-metrics-format:
    /// TEXT` (or `JSON`) still gets it, as from vLLM.
    #[arg(long, value_enum)]
    pub(crate) orca_format: Option<OrcaFormat>,

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

    /// LoRA adapters the engine holds at once (vLLM's flag); with adapters (--lora-modules, or
    /// --served-model-name names after the first), /metrics publishes those running and
    /// waiting (vllm:lora_requests_info). 0: no LoRA, unless --lora-modules is given (then 1,
    /// vLLM's default).
    #[arg(long, default_value_t = 0)]
    pub(crate) max_loras: u32,

    /// LoRA adapters served besides the base model, as vLLM writes them: NAME=PATH (the path is
    /// not read: the simulator has no weights) or NAME. A request naming one runs on it.
    #[arg(long, value_name = "NAME=PATH", num_args = 1.., value_parser = lora_module)]
    pub(crate) lora_modules: Vec<String>,
}

impl From<MetricsProfile> for tokenmeter_server::MetricsProfile {
    fn from(profile: MetricsProfile) -> Self {
        match profile {
            MetricsProfile::Semconv => Self::Semconv,
            MetricsProfile::Vllm => Self::Vllm,
            MetricsProfile::VllmLegacy => Self::VllmLegacy,
        }
    }
}

impl ServeArgs {
    /// The server's configuration, all but the SLO spec (a file, read by the caller). The
    /// server keeps no records of its own (`tokenmeter serve` publishes them on `/metrics`).
    pub(crate) fn config(&self) -> Config {
        let mut served = self.served_model_name.clone();
        let mut max_loras = self.max_loras;
        if !self.lora_modules.is_empty() {
            if served.is_empty() {
                served.push(self.model.clone());
            }
            served.extend(self.lora_modules.iter().cloned());
            max_loras = max_loras.max(1);
        }
        let mut config = Config::default()
            .model(self.model.clone())
            .served_model_name(served)
            .accept_any_model(self.accept_any_model)
            .seed(self.seed)
            .profile(self.profile.into())
            .default_max_tokens(self.default_max_tokens)
            .max_batch(self.max_batch)
            .kv_capacity(self.kv_capacity)
            .decode_table(self.decode_table.0.clone())
            .prefill_base(self.prefill_base)
            .prefill_per_token(self.prefill_per_token)
            .error_rate(self.error_rate)
            .queue_limit(self.queue_limit)
            .max_model_len(self.max_model_len)
            .header_timeout(self.header_timeout)
            .body_timeout(self.body_timeout)
            .keep_alive_timeout(self.keep_alive_timeout)
            .send_timeout(self.send_timeout)
            .max_body_size(self.max_body_size)
            .max_body_memory(self.max_body_memory)
            .max_answer_size(self.max_answer_size)
            .max_answer_memory(self.max_answer_memory)
            .max_connections(self.max_connections)
            .shutdown_grace(self.shutdown_grace)
            .stall_rate(self.stall_rate)
            .stall(self.stall)
            .stall_limit(self.stall_limit)
            .send_buffer(self.send_buffer)
            .reasoning_tokens(self.reasoning_tokens)
            .enable_per_request_metrics(self.enable_per_request_metrics)
            .orca_format(self.orca_format.map(Into::into))
            .no_prefix_caching(self.no_prefix_caching)
            .preemption(self.preemption)
            .speculative_tokens(self.speculative_tokens)
            .speculative_acceptance(self.speculative_acceptance)
            .max_loras(max_loras)
            .keep_records(false);
        if let Some(path) = &self.tokenizer {
            config = config.tokenizer(path.clone());
        }
        config
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

/// A LoRA module, `NAME=PATH` or `NAME`: its name.
fn lora_module(s: &str) -> Result<String, String> {
    let name = s.split_once('=').map_or(s, |(name, _)| name);
    model_name(name).map_err(|_| {
        format!("`{s}` names no adapter: write NAME=PATH (e.g. sql-lora=/adapters/sql)")
    })
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

    /// The defaults live in the library: the flags' default texts must parse to them.
    #[test]
    fn default_flags_are_the_librarys_default_config() {
        let parsed = Cli::try_parse_from(["serve"]).expect("defaults parse").args;
        let default = Config::default();
        assert_eq!(parsed.config(), default);
        assert_eq!(parsed.listen, DEFAULT_LISTEN.parse().expect("an address"));
        assert!(parsed.listen.ip().is_loopback());
        assert_eq!(parsed.slo_spec, None);
    }

    #[test]
    fn every_flag_reaches_the_config() {
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
            "--model",
            "org/llama",
            "--served-model-name",
            "a",
            "b",
            "--accept-any-model",
            "--max-answer-size",
            "1MiB",
            "--max-answer-memory",
            "3MiB",
            "--speculative-tokens",
            "3",
            "--tokenizer",
            "tok.json",
            "--max-loras",
            "2",
            "--lora-modules",
            "sql-lora=/adapters/sql",
            "chat-lora",
            "--orca-format",
            "json",
        ])
        .expect("valid flags")
        .args;
        let config = args.config();
        assert_eq!(
            config.decode_table,
            [
                (1, Duration::from_millis(2)),
                (16, Duration::from_millis(4))
            ]
        );
        assert_eq!(config.error_rate, 0.25);
        assert_eq!(config.queue_limit, 3);
        assert_eq!(config.stall_rate, 0.5);
        assert_eq!(config.stall, Duration::from_millis(1_500));
        assert_eq!(config.profile, tokenmeter_server::MetricsProfile::Vllm);
        assert_eq!(config.model, "org/llama");
        assert_eq!(config.served_names(), ["a", "b", "sql-lora", "chat-lora"]);
        assert_eq!(config.max_loras, 2);
        assert!(config.accept_any_model);
        assert_eq!(config.max_answer_size, 1 << 20);
        assert_eq!(config.max_answer_memory, 3 << 20);
        assert_eq!(config.speculative_tokens, 3);
        assert_eq!(config.tokenizer, Some("tok.json".into()));
        assert_eq!(config.orca_format, Some(tokenmeter::orca::OrcaFormat::Json));
        assert!(config.validate().is_ok());
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
            ("--lora-modules", "=/adapters/sql", "NAME=PATH"),
            ("--max-loras", "-1", "-1"),
        ] {
            let error = Cli::try_parse_from(["serve", flag, value])
                .err()
                .unwrap_or_else(|| panic!("{flag} {value} accepted"));
            let text = error.to_string();
            assert!(text.contains(hint), "{flag} {value}: {text}");
        }
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
