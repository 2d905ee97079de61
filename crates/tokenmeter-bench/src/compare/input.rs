//! A [`Side`] read from a file, its kind told by its content (not its name):
//!
//! | The file | Becomes |
//! |---|---|
//! | a run's `--json` (or `bench merge`'s): an object with `samples` | one run, no ITL |
//! | a `--repeat` run's `--json`: an object with `runs: [ … ]` | one run per element |
//! | a `--trace` (JSON lines, one request each) | one run with its ITL, `good` judged by the given objectives |
//!
//! A trace is replayed as `bench merge` replays it ([`crate::merge`]), then turned into the
//! same `samples` columns a run's JSON holds ([`crate::output::samples_json`]), so both give
//! the same figures for the same run. A JSON written before the `samples` section existed is
//! refused, with how to fix it.

pub(super) mod samples;

use std::path::Path;

use anyhow::Context as _;
use serde_json::Value;

use super::shape;
use super::side::{RunRequests, Shape, Side};
use crate::merge;
use crate::output::samples_json;
use crate::slo::Slo;

/// Reads `path` into a side; a trace's requests are judged good by `slo`.
pub(crate) fn read(path: &Path, slo: &Slo) -> anyhow::Result<Side> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read {}; give a run's --json or --trace file",
            path.display()
        )
    })?;
    let source = path.display().to_string();
    match serde_json::from_str::<Value>(&text) {
        Ok(value) if !is_trace_line(&value) => from_json(&source, &value),
        // One JSON object a line (a one-request trace parses as one object too).
        _ if first_line_is_trace(&text) => from_trace(path, slo),
        Ok(_) => anyhow::bail!(
            "{source} is JSON but not a tokenmeter bench --json (no `samples`, `runs` or \
             `summary`); give a run's --json or --trace file"
        ),
        Err(e) => anyhow::bail!(
            "{source} is neither a tokenmeter bench --json nor a --trace file ({e}); give a \
             run's --json or --trace file"
        ),
    }
}

/// A line of a trace: an object with a request `id` and its `send_ns`.
fn is_trace_line(value: &Value) -> bool {
    value.get("id").is_some() && value.get("send_ns").is_some()
}

fn first_line_is_trace(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .is_some_and(|v| is_trace_line(&v))
}

/// A single run's or a repeated run's `--json`.
fn from_json(source: &str, value: &Value) -> anyhow::Result<Side> {
    let (runs, shape) = match value.get("runs").and_then(Value::as_array) {
        Some(runs) => {
            if runs.is_empty() {
                anyhow::bail!("{source}: its `runs` array is empty; give a file that holds runs");
            }
            let read = runs
                .iter()
                .enumerate()
                .map(|(i, run)| one_run(&format!("{source}: runs[{i}]"), run))
                .collect::<anyhow::Result<Vec<_>>>()?;
            (read, shape::of_json(&runs[0]))
        }
        None => (vec![one_run(source, value)?], shape::of_json(value)),
    };
    Ok(Side {
        source: source.to_owned(),
        shape,
        runs,
        itl_known: false,
    })
}

/// One run object of a `--json`: its `samples`.
fn one_run(what: &str, run: &Value) -> anyhow::Result<RunRequests> {
    match run.get("samples") {
        Some(section) => samples::parse(section).with_context(|| format!("{what}: `samples`")),
        None if run.get("summary").is_some() => anyhow::bail!(
            "{what} has no per-request `samples` (written by a tokenmeter before they were \
             added, or with --result-format vllm); re-run with this version's --json, or give \
             its --trace"
        ),
        None => anyhow::bail!(
            "{what} is not a tokenmeter bench --json object (no `samples`, `runs` or \
             `summary`); give a run's --json or --trace file"
        ),
    }
}

/// A `--trace` file, replayed as `bench merge` does, with each request's gaps.
fn from_trace(path: &Path, slo: &Slo) -> anyhow::Result<Side> {
    let merged = merge::load(&[path.to_owned()])?;
    let columns = samples_json::of(&merged.measured, slo);
    let mut run = samples::parse(&columns).with_context(|| path.display().to_string())?;
    for (figures, m) in run.requests.iter_mut().zip(merged.measured.iter()) {
        if figures.ok {
            figures.itl = merged.gaps.of(m.gaps).map(|g| g.as_secs_f64()).collect();
        }
    }
    Ok(Side {
        source: path.display().to_string(),
        shape: Shape::default(),
        runs: vec![run],
        itl_known: true,
    })
}

#[cfg(test)]
mod tests;
