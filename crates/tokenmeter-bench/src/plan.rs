//! [`Plan`]: a bench run described in Rust, built with [`PlanBuilder`], and run with
//! [`Plan::run`] into a [`Run`]: the bench's whole pipeline without the command line, for a
//! load test in a `cargo test` or a CI job. A plan made a sweep ([`PlanBuilder::sweep`]) runs
//! with [`Plan::sweep`] into a [`Sweep`]: each rate's served rate and attainment, and the
//! capacity at the target.
//!
//! The defaults are the command's: a plan with nothing set sends `tokenmeter bench`'s 200
//! requests of 256 input and 128 output tokens, Poisson arrivals at 10 per second, to the
//! built-in simulated server, and judges goodput against TTFT ≤ 1 s and TPOT ≤ 50 ms. No
//! progress bar, no table and no file (but a trace you ask for): the outputs are [`Run`]'s.
//! One line is still written to stderr: with a warm-up, how many of its requests succeeded.

use std::str::FromStr as _;
use std::time::Duration;

use tokenmeter_slo::batching::BatchAnalysis;

use crate::args::BenchArgs;
use crate::embedded;
use crate::finished::Run;
use crate::interrupt::Interrupt;
use crate::pipeline::{Prepared, Target, measure, prepare, repeat, run_args, sweep};
use crate::repeat::Repeated;
use crate::slo::Slo;
use crate::slo_class::SloClassArg;
use crate::swept::{Sweep, SweepRates};
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
///
/// ```
/// # fn main() -> anyhow::Result<()> {
/// use tokenmeter_bench::{Plan, PlanBuilder};
///
/// let builder: PlanBuilder = Plan::builder().requests(10).rate(2.0);
/// let plan = builder.build()?;
/// # let _ = plan;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct PlanBuilder {
    args: Box<BenchArgs>,
    error: Option<String>,
}

/// Building a plan and running it: with no URL, against the built-in simulated server.
///
/// ```
/// use tokenmeter_bench::Plan;
///
/// # #[tokio::main]
/// # async fn main() -> anyhow::Result<()> {
/// let plan = Plan::builder().requests(3).rate(f64::INFINITY).output_tokens(4).build()?;
/// let run = plan.run().await?;
/// assert_eq!(run.requests(), 3);
/// assert_eq!(run.successful(), 3);
/// # Ok(())
/// # }
/// ```
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
    /// The plan is a sweep (run it with [`Plan::sweep`]), the server cannot be reached, the
    /// model cannot be found, the test request failed (as `tokenmeter bench` exits 3 for), or
    /// the trace could not be written. A run whose requests failed is not an error:
    /// [`Run::errors`] counts them.
    pub async fn run(&self) -> anyhow::Result<Run> {
        if self.validated.sweep.is_some() {
            anyhow::bail!("this plan is a sweep (PlanBuilder::sweep): run it with Plan::sweep");
        }
        let (args, plan) = (&self.args, &self.validated);
        let (run, written) = self
            .against_the_server(args, async |prepared, url, batching| {
                let stop = Interrupt::never();
                measure(args, plan, prepared, url, batching, &stop).await
            })
            .await?;
        written?;
        Ok(run)
    }

    /// Runs the plan's sweep ([`PlanBuilder::sweep`]) to its end: each rate in turn, given or
    /// searched, every step judged against the plan's objectives and the target attainment.
    /// Nothing is printed; the warnings are [`Sweep::warnings`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use tokenmeter_bench::{Plan, SweepRates};
    /// use tokenmeter_server::{Config, Server};
    ///
    /// # #[tokio::main]
    /// # async fn main() -> anyhow::Result<()> {
    /// let server = Server::start(Config::default(), "127.0.0.1:0".parse()?).await?;
    /// let sweep = Plan::builder()
    ///     .url(&server.url())
    ///     .output_tokens(4)
    ///     .sweep(SweepRates::Given(vec![20.0, 40.0]))
    ///     .sweep_target(0.5)
    ///     .requests(10)
    ///     .build()?
    ///     .sweep()
    ///     .await?;
    /// server.shutdown().await?;
    /// assert_eq!(sweep.steps.len(), 2);
    /// for step in &sweep.steps {
    ///     println!("{:.0} req/s offered: attainment {:.2}", step.offered_rate, step.attainment);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The plan is not a sweep (run it with [`Plan::run`]), the server cannot be reached, the
    /// model cannot be found, the test request failed, or the trace could not be written.
    pub async fn sweep(&self) -> anyhow::Result<Sweep> {
        let Some(rates) = &self.validated.sweep else {
            anyhow::bail!(
                "this plan is not a sweep: set PlanBuilder::sweep, or run it with Plan::run"
            );
        };
        let (args, plan) = (&self.args, &self.validated);
        let swept = self
            .against_the_server(args, async |prepared, _url, _batching| {
                let stop = Interrupt::never();
                anyhow::Ok(sweep(args, plan, rates, prepared, &stop, false).await)
            })
            .await?;
        let (_, written) = swept.collector.finish();
        written?;
        Ok(Sweep::of(&swept.result))
    }

    /// Runs the plan [`PlanBuilder::repeat`] times, one after the other against the same
    /// server, [`PlanBuilder::cooldown`] apart: each run the same requests at the same times
    /// (the same seed), so the differences between runs are the server's and the machine's.
    /// Returns every run and each key figure across them ([`Repeated`]). A plan with no
    /// repeat set runs once. A trace is written per run: `trace.jsonl` → `trace.run1.jsonl`,
    /// `trace.run2.jsonl`, …
    ///
    /// ```no_run
    /// # async fn example() -> anyhow::Result<()> {
    /// use std::time::Duration;
    ///
    /// let plan = tokenmeter_bench::Plan::builder()
    ///     .url("http://127.0.0.1:8000/v1")
    ///     .requests(500)
    ///     .repeat(3)
    ///     .cooldown(Duration::from_secs(30))
    ///     .build()?;
    /// let repeated = plan.run_repeated().await?;
    /// let p95 = repeated.figure("ttft_p95").unwrap();
    /// println!("TTFT p95 {:?} s over the runs, mean {:?}", p95.runs, p95.mean);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Plan::run`], for any of the runs.
    pub async fn run_repeated(&self) -> anyhow::Result<Repeated> {
        if self.validated.sweep.is_some() {
            anyhow::bail!("this plan is a sweep (PlanBuilder::sweep): run it with Plan::sweep");
        }
        let (args, plan) = (&self.args, &self.validated);
        let first = run_args(args, 1, None);
        let (runs, written) = self
            .against_the_server(&first, async |prepared, base, server_batching| {
                let stop = Interrupt::never();
                let key = args.api_key()?.map(crate::api_key::ApiKey::new);
                let target = Target {
                    base,
                    key,
                    server_batching,
                };
                repeat(args, plan, prepared, target, &stop, |_, _| ()).await
            })
            .await?;
        written?;
        Ok(Repeated::of(runs, args.cooldown, args.confidence))
    }

    /// Prepares the run of `args` (the plan's, or one repetition's) against the plan's server
    /// (the built-in simulated server when no URL was given: started on 127.0.0.1 on a free
    /// port, and stopped after `work`) and does `work` on it.
    async fn against_the_server<T>(
        &self,
        args: &BenchArgs,
        work: impl AsyncFnOnce(Prepared, &reqwest::Url, Option<&BatchAnalysis>) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let stop = Interrupt::never();
        let key = args.api_key()?.map(crate::api_key::ApiKey::new);
        let plan = &self.validated;
        match plan.url.clone() {
            Some(url) => {
                crate::discover::reachable(&url, &plan.tls).await?;
                let prepared = prepare(args, plan, &url, key, None, None, &stop).await?;
                work(prepared, &url, None).await
            }
            None => {
                let server = embedded::start().await?;
                let url = reqwest::Url::parse(&server.url())?;
                let batching = server.slo().batching.clone();
                let model = server.model().to_owned();
                let done = async {
                    let prepared =
                        prepare(args, plan, &url, key, Some(&model), Some(&batching), &stop)
                            .await?;
                    work(prepared, &url, Some(&batching)).await
                }
                .await;
                server.shutdown().await?;
                done
            }
        }
    }
}

/// Every setting, and what [`PlanBuilder::build`] says of a wrong one.
///
/// ```
/// use tokenmeter_bench::Plan;
///
/// # fn main() -> anyhow::Result<()> {
/// let plan = Plan::builder()
///     .url("http://127.0.0.1:8000/v1")
///     .model("my-model")
///     .api_key_env("MY_PROVIDER_KEY")
///     .requests(50)
///     .rate(5.0)
///     .concurrency(8)
///     .input_tokens("128..512")
///     .output_tokens(64)
///     .warmup(2)
///     .slo("ttft=500ms,tpot=40ms")
///     .seed(7)
///     .no_preflight()
///     .trace("trace.jsonl")
///     .build()?;
/// # let _ = plan;
///
/// let wrong = Plan::builder().output_tokens("many").build().unwrap_err();
/// assert!(wrong.to_string().contains("many"), "{wrong}");
/// # Ok(())
/// # }
/// ```
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

    /// Prompt tokens of each synthetic request: a number (`256`), a range (`128..512`) or a
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

    /// Adds a workload class whose requests send their own objectives in the `x-slo-ttft-ms`
    /// and `x-slo-tpot-ms` headers, as `--slo-class` takes it:
    /// `NAME:ttft=200ms,tpot=50ms[:WEIGHT]`. Requests take the classes in turn by weight; the
    /// JSON's `slo_classes` gives each class's attainment. Default: none.
    ///
    /// ```
    /// let plan = tokenmeter_bench::Plan::builder()
    ///     .slo_class("interactive:ttft=200ms,tpot=50ms:3")
    ///     .slo_class("batch:ttft=10s")
    ///     .build();
    /// assert!(plan.is_ok());
    /// let wrong = tokenmeter_bench::Plan::builder().slo_class("x:e2e=1s").build().unwrap_err();
    /// assert!(wrong.to_string().contains("use ttft or tpot"), "{wrong}");
    /// ```
    pub fn slo_class(self, class: &str) -> Self {
        match SloClassArg::from_str(class) {
            Ok(class) => self.set(|a| a.workload.slo_classes.push(class)),
            Err(error) => self.fail(error),
        }
    }

    /// The seed of every random choice (prompts, lengths, arrivals). Default: 0.
    pub fn seed(self, seed: u64) -> Self {
        self.set(|a| a.seed = seed)
    }

    /// The level of every figure's confidence interval ([`Run::intervals`](crate::Run::intervals)),
    /// in percent as `--confidence` takes it: `95`, `99.5`, `95%`. Default: 95.
    pub fn confidence(self, percent: &str) -> Self {
        match crate::parse::parse_confidence(percent) {
            Ok(level) => self.set(|a| a.confidence = level),
            Err(error) => self.fail(error),
        }
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

    /// Makes the plan a sweep, run with [`Plan::sweep`]: the given rates, or a search for the
    /// highest rate whose attainment reaches the target ([`PlanBuilder::sweep_target`]). Each
    /// step sends [`PlanBuilder::requests`] requests when set, else its rate times
    /// [`PlanBuilder::sweep_step_duration`] (at least 30). Default: no sweep.
    pub fn sweep(self, rates: SweepRates) -> Self {
        match rates {
            SweepRates::Given(rates) if rates.is_empty() => self.fail(
                "a sweep of given rates needs at least one; use SweepRates::Auto to search".into(),
            ),
            SweepRates::Given(rates) => match rates.iter().find(|r| !(r.is_finite() && **r > 0.0)) {
                Some(bad) => self.fail(format!(
                    "sweep rate {bad} is not a rate; give requests per second, finite and above 0"
                )),
                None => self.set(|a| {
                    a.sweep = true;
                    a.sweep_rates = rates;
                }),
            },
            _ => self.set(|a| {
                a.sweep = true;
                a.sweep_rates.clear();
            }),
        }
    }

    /// The attainment a sweep's rate must reach, in (0, 1]. Default: 0.9.
    pub fn sweep_target(self, attainment: f64) -> Self {
        match attainment > 0.0 && attainment <= 1.0 {
            true => self.set(|a| a.sweep_target = attainment),
            false => self.fail(format!(
                "sweep target {attainment} is not an attainment in (0, 1]; give e.g. 0.9"
            )),
        }
    }

    /// How long each sweep step's arrivals last when [`PlanBuilder::requests`] is not set
    /// (above 0). Default: 10 s.
    pub fn sweep_step_duration(self, duration: Duration) -> Self {
        match duration.is_zero() {
            true => self.fail("the sweep step duration must be above 0, e.g. 10s".into()),
            false => self.set(|a| a.sweep_step_duration = duration),
        }
    }

    /// The automatic sweep's resolution: it stops when the failing rate is within this
    /// fraction above the passing one, in (0, 1]. Default: 0.1.
    pub fn sweep_resolution(self, fraction: f64) -> Self {
        match fraction > 0.0 && fraction <= 1.0 {
            true => self.set(|a| a.sweep_resolution = fraction),
            false => self.fail(format!(
                "sweep resolution {fraction} is not a fraction in (0, 1]; give e.g. 0.1"
            )),
        }
    }

    /// Runs the plan this many times with [`Plan::run_repeated`] (at least 1). Default: 1.
    pub fn repeat(self, runs: usize) -> Self {
        match runs {
            0 => self.fail("repeat must be at least 1 (1 runs the plan once)".into()),
            _ => self.set(|a| a.repeat = runs),
        }
    }

    /// The pause between repeated runs ([`PlanBuilder::repeat`]). Default: none.
    pub fn cooldown(self, pause: Duration) -> Self {
        self.set(|a| a.cooldown = pause)
    }

    /// Checks the settings together.
    ///
    /// # Errors
    /// The first setting that is wrong, with what to give instead.
    pub fn build(self) -> anyhow::Result<Plan> {
        if let Some(error) = self.error {
            anyhow::bail!(error);
        }
        let args = self.args.resolve_peers()?;
        let validated = args.plan()?;
        Ok(Plan { args, validated })
    }
}
