//! What a single run (not a sweep) leaves behind: the table and the breakdowns (stages, token
//! classes, turns, slices) on the terminal, the counts and error samples, the SLO verdict of
//! `--fail-under` and `--slo-spec`, the `--json` (ours or vLLM's) and the `--html` report —
//! each a function of the finished [`Run`].

use serde_json::json;
use tokenmeter_slo::SloMonitor;
use tokenmeter_slo::batching::BatchAnalysis;

use crate::client::Api;
use crate::counts::{self, Counts};
use crate::exit::{self, Exit};
use crate::finished::Run;
use crate::interrupt;
use crate::load_check::LoadCheck;
use crate::output::{self, html, table};
use crate::peer;
use crate::percentiles;
use crate::samples;

impl Run {
    /// Shows and writes everything; `Ok(Err(_))` is the verdict (an objective missed), `Err`
    /// an output that could not be written.
    pub(crate) fn report(&self) -> anyhow::Result<anyhow::Result<()>> {
        let Self {
            args,
            stages: plan_stages,
            info,
            api,
            collected,
            slices,
            monitor,
            server_batching,
            interrupted,
            planned,
            client_cpu,
            stopped_early,
            summary,
        } = self;
        let (traces, gaps) = (&collected.measured[..], &collected.gaps);
        let (interrupted, planned, client_cpu) = (*interrupted, *planned, *client_cpu);
        let monitor = monitor.as_ref();
        let server_batching = server_batching.as_ref();
        let stopped_early = stopped_early.as_ref();
        let quiet = args.stdout_taken();
        let mut verdict;
        let load = LoadCheck::of(plan_stages, traces, summary, client_cpu);
        let phases = crate::phases::of(traces);
        let samples = samples::error_samples(traces);
        let chosen = percentiles::Chosen::of(&args.peer, traces, gaps);
        if summary.successful > 0 {
            output::show(quiet, &table::render(info, summary));
            output::show(quiet, &load.render());
            if let Some(diagnosis) = &phases.diagnosis {
                output::show(quiet, &format!("  diagnosis: {diagnosis}\n"));
            }
            if let Some(chosen) = &chosen {
                output::show(quiet, &chosen.render());
            }
        } else {
            output::show(
                quiet,
                &format!(
                    "tokenmeter bench · {} · model {}\nno request succeeded: {}\n",
                    info.url,
                    info.model,
                    table::outcomes_line(&summary.outcomes)
                ),
            );
        }
        let stages = (plan_stages.len() > 1)
            .then(|| output::stages::results(plan_stages, traces, gaps, &args.slo));
        if let Some(stages) = &stages {
            output::show(quiet, &output::stages::render(stages));
        }
        let classes = output::classes::breakdown(
            traces,
            args.input_classes.as_ref(),
            args.output_classes.as_ref(),
        );
        if summary.successful > 0 {
            output::show(quiet, &output::classes::render(&classes));
        }
        let turns = output::turns::results(traces, gaps, &args.slo);
        if let Some(turns) = &turns {
            output::show(quiet, &output::turns::render(turns));
        }
        output::slices::show(quiet, args.slices.slice.is_some(), slices);
        let counts = Counts::of(traces, &args.slo);
        output::show(quiet, &counts.render());
        output::show(quiet, &samples::render(&samples));
        if let Some(stopped) = stopped_early {
            output::show(
                quiet,
                &format!(
                    "\nstopped early after {} requests ({}): {}\n",
                    stopped.after_requests, stopped.reason, stopped.verdict
                ),
            );
        }
        if let Some((sent, planned)) = interrupted {
            output::show(
                quiet,
                &format!("\ninterrupted: {sent} of {planned} planned requests were sent\n"),
            );
        }
        verdict = exit::fail_under(summary.attainment, args.fail_under);
        // Over the run only: no window, budget or alert longer than the run.
        let status = monitor.map(SloMonitor::run_status);
        let missed = status
            .as_ref()
            .map(exit::missed_objectives)
            .unwrap_or_default();
        if verdict.is_ok() && !missed.is_empty() {
            verdict = Err(Exit::ObjectiveMissed.error(format!(
                "objectives of --slo-spec missed: {}",
                missed.join("; ")
            )));
        }
        if let Some(status) = &status {
            let spec = args.slo_spec.as_deref().map(|p| p.display().to_string());
            output::show(
                quiet,
                &format!(
                    "\nclient side, against {} {status}\n(goodput under the spec's objectives counts \
                     good requests over the whole span observed; the summary's goodput above counts \
                     those meeting --slo over first send to last end)\n",
                    spec.unwrap_or_default()
                ),
            );
            if let Some(diagnosis) = &phases.diagnosis {
                // The phase behind a breach, from the run's own data (see phases).
                output::show(quiet, &format!("phase that grew: {diagnosis}\n"));
            }
        }
        if let Some(path) = &args.json {
            let result = match args.peer.result_format {
                peer::ResultFormat::Vllm => {
                    let run = output::vllm_json::VllmRun {
                        info,
                        backend: match api {
                            Api::Chat => "openai-chat",
                            Api::Completions => "openai",
                        },
                        arrival: args.load.arrival,
                        peer: &args.peer,
                    };
                    output::vllm_json::result(&run, summary, traces, gaps)
                }
                peer::ResultFormat::Tokenmeter => json!({
                    "run": info,
                    "summary": summary,
                    "load": load,
                    "phases": phases,
                    "stages": stages,
                    "turns": turns,
                    "by_class": classes,
                    "summary_percentiles": chosen,
                    "slices": slices,
                    "slo": status,
                    "error_samples": samples,
                    "counts": counts,
                    "interrupted": interrupted.is_some(),
                    "stopped_early": stopped_early,
                    "planned_requests": planned,
                    "server_batching": server_batching.map(BatchAnalysis::table),
                }),
            };
            output::write_json(path, &result)?;
        }
        if let Some(path) = &args.html {
            let report = html::render(info, summary, traces, gaps)
                .map(|h| counts::insert_html(h, &samples::html(&samples, html::esc)))
                .map(|h| match &chosen {
                    Some(chosen) => counts::insert_html(h, &chosen.html(html::esc)),
                    None => h,
                })
                .map(|h| counts::insert_html(h, &counts.html(html::esc)))
                .and_then(|h| {
                    let section = output::classes::html(&classes, traces, html::esc)?;
                    Ok(output::classes::insert_html(h, &section))
                })
                .and_then(|h| output::slices::append_html(h, slices));
            let report = match interrupted {
                Some((sent, planned)) => report.map(|h| interrupt::mark_html(h, sent, planned)),
                None => report,
            };
            output::write_html(path, report)?;
        }
        Ok(verdict)
    }
}
