//! [`Plan`]: a bench run described in Rust, built with [`PlanBuilder`], and run with
//! [`Plan::run`] into a [`Run`]: the bench's whole pipeline without the command line, for a
//! load test in a `cargo test` or a CI job.
//!
//! The defaults are the command's: a plan with nothing set sends `tokenmeter bench`'s 200
//! requests of 256 input and 128 output tokens, Poisson arrivals at 10 per second, to the
//! built-in simulated server,
//! and judges goodput against TTFT ≤ 1 s and TPOT ≤ 50 ms. Nothing is printed (no progress
//! bar, no table) and no file is written: the outputs are [`Run`]'s.

use std::str::FromStr as _;

use crate::args::BenchArgs;
use crate::embedded;
use crate::finished::Run;
use crate::interrupt::Interrupt;
use crate::pipeline::{measure, prepare};
use crate::slo::Slo;
use crate::validate::Validated;
use crate::workload::LengthDist;

/// A validated bench run: where to send, what, how fast, and against which objectives.
///
/// ```no_run
/// # async fn example() -> anyhow::Result<()> {
/// use tokenmeter_bench::Plan;
///
/// let plan = Plan::builder()
///     .url("http://127.0.0.1:8000/v1")
///     .requests(100)
///     .rate(20.0)
///     .input_tokens(512)
///     .output_tokens(64)
///     .slo("ttft=500ms,tpot=40ms")
///     .seed(7)
///     .build()?;
/// let run = plan.run().await?;
/// assert!(run.ttft().p95 < 0.5, "TTFT p95 {:.3} s", run.ttft().p95);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Plan {
    args: BenchArgs,
    validated: Validated,
}

/// Builds a [`Plan`]; every setting is optional ([`Plan`] says the defaults). Values are
/// checked by [`PlanBuilder::build`], which names the first that is wrong.
#[derive(Debug, Clone)]
#[must_use]
pub struct PlanBuilder {
    args: Box<BenchArgs>,
    error: Option<String>,
}

impl Plan {
    /// A builder with the command's defaults.
    pub fn builder() -> PlanBuilder {
        let mut args = Box::<BenchArgs>::default();
        // A library run prints nothing.
        args.no_progress = true;
        PlanBuilder { args, error: None }
    }

    /// Runs the plan to its end and returns the finished run. Against the built-in simulated
    /// server when no URL was given (started on 127.0.0.1 on a free port, stopped after).
    ///
    /// # Errors
    /// The server cannot be reached, the model cannot be found, the test request failed
    /// (as `tokenmeter bench` exits 3 for), or the trace could not be written. A run whose
    /// requests failed is not an error: [`Run::errors`] counts them.
    pub async fn run(&self) -> anyhow::Result<Run> {
        let stop = Interrupt::never();
        let key = self.args.api_key()?.map(crate::client::ApiKey::new);
        match self.validated.url.clone() {
            Some(url) => {
                crate::discover::reachable(&url, &self.validated.tls).await?;
                let prepared =
                    prepare(&self.args, &self.validated, &url, key, None, None, &stop).await?;
                let (run, written) =
                    measure(&self.args, &self.validated, prepared, &url, None, &stop).await?;
                written?;
                Ok(run)
            }
            None => {
                let server = embedded::start().await?;
                let url = reqwest::Url::parse(&server.url())?;
                let batching = server.slo().batching.clone();
                let model = server.model().to_owned();
                let measured = async {
                    let prepared = prepare(
                        &self.args,
                        &self.validated,
                        &url,
                        key,
                        Some(&model),
                        Some(&batching),
                        &stop,
                    )
                    .await?;
                    measure(
                        &self.args,
                        &self.validated,
                        prepared,
                        &url,
                        Some(&batching),
                        &stop,
                    )
                    .await
                }
                .await;
                server.shutdown().await?;
                let (run, written) = measured?;
                written?;
                Ok(run)
            }
        }
    }
}

impl PlanBuilder {
    /// Applies one setting.
    fn set(mut self, setting: impl FnOnce(&mut BenchArgs)) -> Self {
        setting(&mut self.args);
        self
    }

    /// Keeps the first error; later settings are still applied.
    fn fail(mut self, error: String) -> Self {
        self.error.get_or_insert(error);
        self
    }

    /// The server: its base URL as SDKs take it (`https://api.example.com/v1`), its host
    /// alone (`http://127.0.0.1:8000`) or the endpoint's full URL. Default: the built-in
    /// simulated server.
    pub fn url(self, url: &str) -> Self {
        match crate::url::parse_url(url) {
            Ok(url) => self.set(|a| a.url = Some(Box::new(url))),
            Err(error) => self.fail(error),
        }
    }

    /// The model to ask for. Default: the first model the server lists.
    pub fn model(self, model: impl Into<String>) -> Self {
        self.set(|a| a.model = Some(model.into()))
    }

    /// The environment variable that holds the API key, sent as a bearer token and never
    /// shown. Default: `OPENAI_API_KEY`, when it is set.
    pub fn api_key_env(self, name: impl Into<String>) -> Self {
        self.set(|a| a.api_key_env = name.into())
    }

    /// Requests to send. Default: 200.
    pub fn requests(self, n: usize) -> Self {
        self.set(|a| a.requests = Some(n))
    }

    /// Requests released per second, as a Poisson process (`f64::INFINITY`: all at once).
    /// Default: 10, or none when a concurrency is given.
    pub fn rate(self, per_second: f64) -> Self {
        self.set(|a| a.load.rate = Some(per_second))
    }

    /// At most this many requests in flight. Default: no limit.
    pub fn concurrency(self, n: usize) -> Self {
        self.set(|a| a.load.concurrency = vec![n])
    }

    /// Prompt tokens of each synthetic request: a number (`256`), a range (`128:512`) or a
    /// distribution, as `--input-tokens` takes it. Default: 256.
    pub fn input_tokens(self, tokens: impl ToString) -> Self {
        self.lengths(tokens.to_string(), true)
    }

    /// Output tokens asked for (`max_tokens`), in `--output-tokens`' forms. Default: 128.
    pub fn output_tokens(self, tokens: impl ToString) -> Self {
        self.lengths(tokens.to_string(), false)
    }

    fn lengths(self, text: String, input: bool) -> Self {
        match LengthDist::from_str(&text) {
            Ok(dist) if input => self.set(|a| a.workload.input_tokens = dist),
            Ok(dist) => self.set(|a| a.workload.output_tokens = dist),
            Err(error) => self.fail(error.to_string()),
        }
    }

    /// Requests sent first and left out of the run. Default: none.
    pub fn warmup(self, n: usize) -> Self {
        self.set(|a| a.load.warmup = n)
    }

    /// Per-request objectives for goodput and attainment, as `--slo` takes them:
    /// `ttft=500ms,tpot=40ms,e2e=10s`, or `none` (good = succeeded). Default:
    /// `ttft=1s,tpot=50ms`.
    pub fn slo(self, objectives: &str) -> Self {
        match Slo::from_str(objectives) {
            Ok(slo) => self.set(|a| a.slo = slo),
            Err(error) => self.fail(error.to_string()),
        }
    }

    /// The seed of every random choice (prompts, lengths, arrivals). Default: 0.
    pub fn seed(self, seed: u64) -> Self {
        self.set(|a| a.seed = seed)
    }

    /// Skips the test request sent before the run. Default: one test request, whose
    /// failure stops the run before it starts.
    pub fn no_preflight(self) -> Self {
        self.set(|a| a.no_preflight = true)
    }

    /// Writes each request's raw timestamps as JSON lines to `path` as the run goes
    /// (`--trace`).
    pub fn trace(self, path: impl Into<std::path::PathBuf>) -> Self {
        self.set(|a| a.trace = Some(path.into()))
    }

    /// Checks the settings together.
    ///
    /// # Errors
    /// The first setting that is wrong, with what to give instead; a sweep or several
    /// concurrency levels, which [`Plan::run`] does not run (the command does).
    pub fn build(self) -> anyhow::Result<Plan> {
        if let Some(error) = self.error {
            anyhow::bail!(error);
        }
        let args = self.args.resolve_peers()?;
        let validated = args.plan()?;
        if validated.sweep.is_some() {
            anyhow::bail!("a sweep is run by `tokenmeter bench --sweep`, not by Plan::run");
        }
        Ok(Plan { args, validated })
    }
}
