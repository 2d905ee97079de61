//! The settings checked together into a [`Validated`] plan: `--goodput` and the other peer
//! flags resolved ([`BenchArgs::resolve_peers`]), then every option checked and the dataset
//! loaded ([`BenchArgs::plan`]). Below the settings: it reads [`BenchArgs`], which knows
//! nothing of it.

use std::sync::Arc;

use anyhow::bail;

use crate::args::BenchArgs;
use crate::peer::{ResultFormat, parse_goodput};
use crate::runner::Load;
use crate::schedule::Stage;
use crate::tls::Tls;
use crate::workload::{PromptTokenizer, Source};

/// The validated plan of a bench run.
#[derive(Debug, Clone)]
pub(crate) struct Validated {
    /// The endpoint's full URL, or `None` for the embedded simulator.
    pub(crate) url: Option<reqwest::Url>,
    /// The endpoint path to use when the URL is a base URL.
    pub(crate) endpoint: String,
    /// The load of a single run (its first stage's).
    pub(crate) load: Load,
    /// The stages of a single run.
    pub(crate) stages: Vec<Stage>,
    /// The sweep's rates: empty for no sweep, `None` inside for auto doubling.
    pub(crate) sweep: Option<Vec<f64>>,
    /// Where prompts come from.
    pub(crate) source: Source,
    /// How HTTPS servers are verified (`--ca-cert`, `--insecure`).
    pub(crate) tls: Tls,
    /// `--tokenizer`, loaded.
    pub(crate) tokenizer: Option<Arc<PromptTokenizer>>,
}

impl BenchArgs {
    /// Checks the options together and loads the dataset.
    pub(crate) fn plan(&self) -> anyhow::Result<Validated> {
        crate::checked::values(self)?;
        if self.requests == Some(0) {
            bail!("--requests must be at least 1");
        }
        if self.load.concurrency.contains(&0) {
            bail!("--concurrency must be at least 1");
        }
        if !(self.sweep_target > 0.0 && self.sweep_target <= 1.0) {
            bail!("--sweep-target must be in (0, 1], e.g. 0.9");
        }
        self.shape.shape()?;
        let name = self.api_key_env.as_str();
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            bail!("--api-key-env must name an environment variable, e.g. OPENAI_API_KEY");
        }
        if !self.endpoint.starts_with('/') || !self.endpoint.ends_with("completions") {
            bail!(
                "--endpoint `{}` is not supported; use /v1/chat/completions or /v1/completions",
                self.endpoint
            );
        }
        self.check_repeat()?;
        let stages = self.load.stages(self.requests)?;
        let sweeping = self.sweep || !self.sweep_rates.is_empty();
        if sweeping && (!self.load.stages.is_empty() || self.load.duration.is_some()) {
            bail!("--sweep runs its own steps; it cannot be used with --stage or --duration");
        }
        if sweeping && self.load.rate.is_none() && !self.load.concurrency.is_empty() {
            bail!(
                "--sweep varies the request rate; it cannot be used with --concurrency alone (add --rate, or drop --concurrency)"
            );
        }
        let sweep = sweeping.then(|| {
            let mut rates = self.sweep_rates.clone();
            rates.sort_by(f64::total_cmp);
            rates.dedup();
            rates
        });
        let tokenizer = self.workload.tokenizer()?;
        let source = self.workload.source(tokenizer.clone(), self.seed)?;
        let replay = match &source {
            Source::Dataset { entries, .. } if entries.iter().any(|e| e.at.is_some()) => {
                Some(entries.len())
            }
            _ => None,
        };
        let stages = match replay {
            Some(n)
                if self.load.rate.is_none()
                    && self.load.concurrency.is_empty()
                    && self.load.stages.is_empty()
                    && self.load.ramp_up_strategy.is_none() =>
            {
                vec![Stage {
                    load: Load::Replay {
                        speed: self.workload.replay_speed,
                    },
                    requests: self
                        .requests
                        .or((self.load.duration.is_none()).then_some(n)),
                    duration: self.load.duration,
                }]
            }
            _ => stages,
        };
        let load = stages[0].load;
        Ok(Validated {
            url: self.url.as_deref().cloned(),
            endpoint: self.endpoint.clone(),
            load,
            stages,
            sweep,
            source,
            tls: Tls::new(self.ca_cert.as_deref(), self.insecure)?,
            tokenizer,
        })
    }
}

impl BenchArgs {
    /// These options with `--goodput`, when given, as the objectives (`--slo`'s place), and
    /// the peer flags checked against the rest.
    pub(crate) fn resolve_peers(mut self) -> anyhow::Result<Self> {
        if !self.peer.goodput.is_empty() {
            self.slo = parse_goodput(&self.peer.goodput)?;
        }
        self.slo.judged_from = self.slo_from;
        let sweeping = self.sweep || !self.sweep_rates.is_empty();
        if self.peer.result_format == ResultFormat::Vllm && sweeping {
            anyhow::bail!(
                "--result-format vllm describes one run; drop it for --sweep (or run each rate alone)"
            );
        }
        if self.peer.save_detailed && self.peer.result_format != ResultFormat::Vllm {
            anyhow::bail!(
                "--save-detailed adds vLLM's per-request lists: add --result-format vllm"
            );
        }
        Ok(self)
    }
}

impl BenchArgs {
    /// `--repeat` and `--cooldown` against the rest: repeated runs are single runs of one
    /// plan, each reported as one, so what describes several runs already, or one alone, is
    /// refused with what to do instead.
    fn check_repeat(&self) -> anyhow::Result<()> {
        if self.repeat == 0 {
            bail!("--repeat must be at least 1 (1 runs the plan once)");
        }
        if self.repeat == 1 {
            if !self.cooldown.is_zero() {
                bail!("--cooldown is the pause between repeated runs; add --repeat N (N >= 2)");
            }
            return Ok(());
        }
        let sweeping = self.sweep || !self.sweep_rates.is_empty();
        let refused = [
            (
                sweeping,
                "--sweep runs its own steps; repeat the sweep by running the command again",
            ),
            (
                self.shard.shard.is_some()
                    || self.shard.shards.is_some()
                    || self.shard.start_at.is_some(),
                "--shard and --start-at split one run over processes; run each repetition as its own sharded run",
            ),
            (
                self.self_check_client || self.self_check_ceiling,
                "--self-check-client and --self-check-ceiling measure the client, not a plan",
            ),
            (
                self.self_check_serve.is_some(),
                "--self-check-serve serves; it runs no plan",
            ),
            (
                self.peer.result_format == ResultFormat::Vllm,
                "--result-format vllm describes one run; drop it (--json with --repeat holds each run's figures)",
            ),
            (
                self.trace.as_deref().is_some_and(|p| p.as_os_str() == "-"),
                "--trace - would mix the runs' traces on stdout; give a file name (one file per run: trace.run1.jsonl, …)",
            ),
            (
                self.slo_spec.is_some(),
                "--slo-spec judges one run's windows and budgets; drop it (--slo and --fail-under judge the pooled runs)",
            ),
        ];
        match refused.into_iter().find(|(refuse, _)| *refuse) {
            Some((_, why)) => bail!("--repeat {} cannot be used here: {why}", self.repeat),
            None => Ok(()),
        }
    }
}
