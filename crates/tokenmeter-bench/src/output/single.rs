//! What a single run (not a sweep) leaves behind: the table and the breakdowns (stages, token
//! classes, turns, slices) on the terminal, the counts and error samples, the SLO verdict of
//! `--fail-under` and `--slo-spec`, the `--json` (ours or vLLM's) and the `--html` report —
//! each a function of the finished [`Run`].

use serde_json::json;
use tokenmeter_slo::SloMonitor;
use tokenmeter_slo::batching::BatchAnalysis;

use crate::api::Api;
use crate::counts::{self, Counts};
use crate::exit::{self, Exit};
use crate::finished::Run;
use crate::interrupt;
use crate::intervals::RunIntervals;
use crate::load_check::LoadCheck;
use crate::output::classes::ByClass;
use crate::output::percentiles::{self, Chosen};
use crate::output::slo_classes::ClassAttainment;
use crate::output::stages::StageResult;
use crate::output::turns::TurnResult;
use crate::output::{self, html, table};
use crate::peer;
use crate::phases::Phases;
use crate::samples;
use tokenmeter_slo::RunStatus;

/// What the outputs of a run are made of besides its summary, computed once.
struct Computed {
    load: LoadCheck,
    phases: Phases,
    samples: std::collections::BTreeMap<String, Vec<String>>,
    chosen: Option<Chosen>,
    stages: Option<Vec<StageResult>>,
    classes: ByClass,
    turns: Option<Vec<TurnResult>>,
    counts: Counts,
    /// The `--slo-spec` monitor's status over the run.
    status: Option<RunStatus>,
    /// Every figure's confidence interval.
    intervals: RunIntervals,
    /// Attainment by `--slo-class`, beside the server's counters.
    slo_classes: Vec<ClassAttainment>,
}

/// A finished run's reports: the command's table, its two JSON formats and its HTML page,
/// the same a Rust caller writes wherever it likes.
///
/// ```
/// use tokenmeter_bench::Plan;
///
/// # #[tokio::main]
/// # async fn main() -> anyhow::Result<()> {
/// let run = Plan::builder().requests(2).rate(f64::INFINITY).output_tokens(3).build()?;
/// let run = run.run().await?;
/// assert!(run.table().contains("TTFT"));
/// assert_eq!(run.to_json()["summary"]["successful"], 2);
/// assert_eq!(run.to_vllm_json()["completed"], 2);
/// assert!(run.html()?.starts_with("<!DOCTYPE html>"));
/// # Ok(())
/// # }
/// ```
impl Run {
    /// The run's requests and their gaps.
    fn traces(&self) -> crate::reqs::Reqs<'_> {
        (&self.collected.measured).into()
    }

    fn computed(&self) -> Computed {
        let (traces, gaps, args) = (self.traces(), &self.collected.gaps, &self.args);
        Computed {
            load: LoadCheck::of(&self.stages, traces, &self.summary, self.client_cpu),
            phases: crate::phases::of(traces),
            samples: samples::error_samples(traces),
            chosen: percentiles::Chosen::of(&args.peer, traces, gaps),
            stages: (self.stages.len() > 1)
                .then(|| output::stages::results(&self.stages, traces, gaps, &args.slo)),
            classes: output::classes::breakdown(
                traces,
                args.input_classes.as_ref(),
                args.output_classes.as_ref(),
            ),
            turns: output::turns::results(traces, gaps, &args.slo),
            counts: Counts::of(traces, &args.slo),
            // Over the run only: no window, budget or alert longer than the run.
            status: self.monitor.as_ref().map(SloMonitor::run_status),
            intervals: self.intervals(),
            slo_classes: output::slo_classes::results(
                &args.workload.slo_classes,
                traces,
                self.slices.server_slo.as_ref(),
            ),
        }
    }

    /// The report `tokenmeter bench` prints: the summary table (TTFT, TPOT, ITL, E2E, …, with
    /// what each is measured from), the load check, the breakdowns by stage, token class,
    /// turn and slice, the outcomes and error samples.
    ///
    /// ```no_run
    /// # async fn example() -> anyhow::Result<()> {
    /// let run = tokenmeter_bench::Plan::builder().requests(20).build()?.run().await?;
    /// print!("{}", run.table());
    /// # Ok(())
    /// # }
    /// ```
    pub fn table(&self) -> String {
        self.text(&self.computed()).concat()
    }

    /// The run in `tokenmeter bench --json`'s format: `run`, `summary`, `load`, `phases`,
    /// `by_class`, `slices`, `counts`, … (the guide's JSON reference lists every key).
    pub fn to_json(&self) -> serde_json::Value {
        self.json(&self.computed())
    }

    /// The run in the keys `vllm bench serve --save-result` writes (`--result-format vllm`),
    /// for tools that read vLLM's result files.
    pub fn to_vllm_json(&self) -> serde_json::Value {
        self.vllm_json()
    }

    /// The self-contained HTML report of `--html`: the summary, its charts (CDFs, histograms,
    /// requests in flight, goodput over time) and the breakdowns.
    ///
    /// # Errors
    /// A chart could not be drawn.
    pub fn html(&self) -> anyhow::Result<String> {
        self.html_of(&self.computed())
            .map_err(|e| anyhow::anyhow!("building the HTML report failed: {e}"))
    }

    /// The report's text in two parts: up to the slices, and from the counts on (the
    /// command warns about failed scrapes between them).
    fn text(&self, c: &Computed) -> [String; 2] {
        let (summary, info, args) = (&self.summary, &self.info, &self.args);
        let mut text = String::new();
        if summary.successful > 0 {
            text += &table::render(info, summary, &c.intervals);
            text += &c.load.render();
            if let Some(diagnosis) = &c.phases.diagnosis {
                text += &format!("  diagnosis: {diagnosis}\n");
            }
            if let Some(chosen) = &c.chosen {
                text += &chosen.render();
            }
        } else {
            text += &format!(
                "tokenmeter bench · {} · model {}\nno request succeeded: {}\n",
                info.url,
                info.model,
                table::outcomes_line(&summary.outcomes)
            );
        }
        if let Some(stages) = &c.stages {
            text += &output::stages::render(stages);
        }
        if summary.successful > 0 {
            text += &output::classes::render(&c.classes);
        }
        if let Some(turns) = &c.turns {
            text += &output::turns::render(turns);
        }
        if args.slices.slice.is_some() {
            text += &output::slices::render(&self.slices);
        }
        text += &output::slo_classes::render(&c.slo_classes);
        let head = std::mem::take(&mut text);
        text += &c.counts.render();
        text += &samples::render(&c.samples);
        if let Some(stopped) = &self.stopped_early {
            text += &format!(
                "\nstopped early after {} requests ({}): {}\n",
                stopped.after_requests, stopped.reason, stopped.verdict
            );
        }
        if let Some((sent, planned)) = self.interrupted {
            text += &format!("\ninterrupted: {sent} of {planned} planned requests were sent\n");
        }
        if let Some(status) = &c.status {
            let spec = args.slo_spec.as_deref().map(|p| p.display().to_string());
            text += &format!(
                "\nclient side, against {} {status}\n(goodput under the spec's objectives counts \
                 good requests over the whole span observed; the summary's goodput above counts \
                 those meeting --slo over first send to last end)\n",
                spec.unwrap_or_default()
            );
            if let Some(diagnosis) = &c.phases.diagnosis {
                // The phase behind a breach, from the run's own data (see phases).
                text += &format!("phase that grew: {diagnosis}\n");
            }
        }
        [head, text]
    }

    fn json(&self, c: &Computed) -> serde_json::Value {
        let mut json = self.json_head(c);
        json["samples"] = output::samples_json::of(self.traces(), &self.summary.slo);
        json
    }

    /// The `--json` document without its `samples` (written apart, see
    /// [`samples_json::Document`](output::samples_json::Document)).
    fn json_head(&self, c: &Computed) -> serde_json::Value {
        let mut summary = json!(self.summary);
        crate::intervals::json::annotate(&mut summary, &c.intervals);
        json!({
            "run": self.info,
            "summary": summary,
            "load": c.load,
            "phases": c.phases,
            "stages": c.stages,
            "turns": c.turns,
            "by_class": c.classes,
            "summary_percentiles": c.chosen,
            "slices": self.slices,
            "slo": c.status,
            "slo_classes": c.slo_classes,
            "error_samples": c.samples,
            "counts": c.counts,
            "interrupted": self.interrupted.is_some(),
            "stopped_early": self.stopped_early,
            "planned_requests": self.planned,
            "server_batching": self.server_batching.as_ref().map(BatchAnalysis::table),
        })
    }

    fn vllm_json(&self) -> serde_json::Value {
        let run = output::vllm_json::VllmRun {
            info: &self.info,
            backend: match self.api {
                Api::Chat => "openai-chat",
                Api::Completions => "openai",
                Api::Responses => "openai-responses",
            },
            arrival: self.args.load.arrival,
            peer: &self.args.peer,
        };
        output::vllm_json::result(&run, &self.summary, self.traces(), &self.collected.gaps)
    }

    fn html_of(&self, c: &Computed) -> Result<String, String> {
        let (traces, gaps) = (self.traces(), &self.collected.gaps);
        let report = html::render(&self.info, &self.summary, traces, gaps, &c.intervals)
            .map(|h| counts::insert_html(h, &samples::html(&c.samples, html::esc)))
            .map(|h| match &c.chosen {
                Some(chosen) => counts::insert_html(h, &chosen.html(html::esc)),
                None => h,
            })
            .map(|h| counts::insert_html(h, &c.counts.html(html::esc)))
            .and_then(|h| {
                let section = output::classes::html(&c.classes, traces, html::esc)?;
                Ok(output::classes::insert_html(h, &section))
            })
            .and_then(|h| output::slices::append_html(h, &self.slices));
        match self.interrupted {
            Some((sent, planned)) => report.map(|h| interrupt::mark_html(h, sent, planned)),
            None => report,
        }
    }

    /// Shows and writes everything; `Ok(Err(_))` is the verdict (an objective missed), `Err`
    /// an output that could not be written.
    pub(crate) fn report(&self) -> anyhow::Result<anyhow::Result<()>> {
        let args = &self.args;
        let c = self.computed();
        let [head, tail] = self.text(&c);
        output::show(args.stdout_taken(), &head);
        for warning in self.slices.warnings() {
            crate::console::warn(warning);
        }
        output::show(args.stdout_taken(), &tail);
        let mut verdict = exit::fail_under(self.summary.attainment, args.fail_under);
        let missed = c
            .status
            .as_ref()
            .map(exit::missed_objectives)
            .unwrap_or_default();
        if verdict.is_ok() && !missed.is_empty() {
            verdict = Err(Exit::ObjectiveMissed.error(format!(
                "objectives of --slo-spec missed: {}",
                missed.join("; ")
            )));
        }
        if let Some(path) = &args.json {
            match args.peer.result_format {
                peer::ResultFormat::Vllm => output::write_json(path, &self.vllm_json())?,
                peer::ResultFormat::Tokenmeter => {
                    let head = self.json_head(&c);
                    let (traces, slo) = (self.traces(), &self.summary.slo);
                    let document = output::samples_json::Document::new(&head, traces, slo);
                    output::write_json(path, &document)?;
                }
            }
        }
        if let Some(path) = &args.html {
            output::write_html(path, self.html_of(&c))?;
        }
        Ok(verdict)
    }
}
