//! `--percentile-metrics` and `--metric-percentiles` in our own outputs: when either is given,
//! the chosen percentiles of the chosen metrics (over the successful requests, numpy's linear
//! interpolation, as in the vLLM result format) are added to the terminal summary, `--json`
//! (`summary_percentiles`, seconds) and the `--html` report.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::gaps::Gaps;
use crate::output::vllm_json::{p_word, values};
use crate::peer::{PeerArgs, PercentileMetric};
use crate::reqs::Reqs;

/// The chosen percentiles of the chosen metrics, in seconds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Chosen {
    /// The percentiles, in the order given.
    pub(crate) percentiles: Vec<f64>,
    /// Each metric with its value at each percentile (`None`: no sample).
    pub(crate) rows: Vec<(PercentileMetric, Vec<Option<f64>>)>,
}

impl Chosen {
    /// The chosen percentiles of `measured`; `None` when neither flag was given.
    pub(crate) fn of<'r>(
        peer: &PeerArgs,
        measured: impl Into<Reqs<'r>>,
        gaps: &Gaps,
    ) -> Option<Self> {
        let measured: Reqs<'r> = measured.into();
        if !peer.percentiles_chosen() {
            return None;
        }
        let percentiles = peer.percentiles().to_vec();
        let rows = peer
            .metrics()
            .iter()
            .map(|&metric| (metric, values(metric, measured, gaps).at(&percentiles)))
            .collect();
        Some(Self { percentiles, rows })
    }

    /// The terminal's lines, in milliseconds.
    pub(crate) fn render(&self) -> String {
        let mut out = String::from("\n  chosen (ms)   ");
        for &p in &self.percentiles {
            let _ = write!(out, "{:>10}", format!("p{}", p_word(p)));
        }
        out.push('\n');
        for (metric, values) in &self.rows {
            let _ = write!(out, "  {:<14}", metric.name().to_ascii_uppercase());
            for value in values {
                match value {
                    Some(v) => write!(out, "{:>10.2}", v * 1e3),
                    None => write!(out, "{:>10}", "-"),
                }
                .unwrap_or_default();
            }
            out.push('\n');
        }
        out
    }

    /// A table for the HTML report; `esc` escapes text.
    pub(crate) fn html(&self, esc: fn(&str) -> String) -> String {
        let mut out = String::from(
            "<h2>Chosen percentiles (--metric-percentiles)</h2>\n<table><tr><th>ms</th>",
        );
        for &p in &self.percentiles {
            let _ = write!(out, "<th>p{}</th>", esc(&p_word(p)));
        }
        out.push_str("</tr>\n");
        for (metric, values) in &self.rows {
            let _ = write!(out, "<tr><td>{}</td>", metric.name().to_ascii_uppercase());
            for value in values {
                match value {
                    Some(v) => write!(out, "<td>{:.2}</td>", v * 1e3),
                    None => write!(out, "<td>-</td>"),
                }
                .unwrap_or_default();
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
        out
    }
}

/// `{"ttft": {"p50": 0.012, "p99.9": 0.031}, ...}` in seconds (`null`: no sample).
impl Serialize for Chosen {
    fn serialize<S: serde::Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        let mut map = Map::new();
        for (metric, values) in &self.rows {
            let at: Map<String, Value> = self
                .percentiles
                .iter()
                .zip(values)
                .map(|(&p, v)| (format!("p{}", p_word(p)), (*v).into()))
                .collect();
            map.insert(metric.name().to_owned(), Value::Object(at));
        }
        map.serialize(out)
    }
}
