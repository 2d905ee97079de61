//! The `samples` columns of a `--json` back into each request's figures (the inverse of
//! [`crate::output::samples_json`]): every column as long as `ok`, each value of its type.

use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::compare::side::{RequestFigures, RunRequests};

/// A column of `section` by `name`, each element read by `each` (`None`: wrong type).
fn column<T>(
    section: &Value,
    name: &str,
    n: Option<usize>,
    each: impl Fn(&Value) -> Option<T>,
) -> anyhow::Result<Vec<T>> {
    let values = section
        .get(name)
        .and_then(Value::as_array)
        .with_context(|| format!("`{name}` is missing or not an array"))?;
    if let Some(n) = n
        && values.len() != n
    {
        bail!("`{name}` has {} values but `ok` has {n}", values.len());
    }
    values
        .iter()
        .enumerate()
        .map(|(i, v)| each(v).with_context(|| format!("`{name}[{i}]` is {v}, not what it holds")))
        .collect()
}

/// A latency in milliseconds (or `null`) as seconds.
fn latency(v: &Value) -> Option<Option<f64>> {
    match v {
        Value::Null => Some(None),
        v => v
            .as_f64()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .map(|ms| Some(ms / 1e3)),
    }
}

/// Reads a `samples` section.
pub(in crate::compare) fn parse(section: &Value) -> anyhow::Result<RunRequests> {
    let ok = column(section, "ok", None, Value::as_bool)?;
    let n = Some(ok.len());
    let good = column(section, "good", n, Value::as_bool)?;
    let ttft = column(section, "ttft_ms", n, latency)?;
    let tpot = column(section, "tpot_ms", n, latency)?;
    let e2e = column(section, "e2e_ms", n, latency)?;
    let tokens = column(section, "output_tokens", n, Value::as_u64)?;
    let duration_s = section
        .get("duration_s")
        .and_then(Value::as_f64)
        .filter(|d| d.is_finite() && *d >= 0.0)
        .context("`duration_s` is missing or not a non-negative number")?;
    let requests = (0..ok.len())
        .map(|i| RequestFigures {
            ok: ok[i],
            good: good[i],
            ttft: ttft[i],
            tpot: tpot[i],
            e2e: e2e[i],
            output_tokens: tokens[i],
            itl: Vec::new(),
        })
        .collect();
    Ok(RunRequests {
        requests,
        duration_s,
    })
}
