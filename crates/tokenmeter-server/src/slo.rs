//! `--slo-spec`: the SLO monitor and the batch-size analysis behind `GET /slo`.

use crate::api_error::ApiError;
use axum::http::HeaderMap;
use serde_json::{Value, json};
use tokenmeter::Clock;
use tokenmeter::request::{SloTargets, TPOT_HEADER, TTFT_HEADER};
use tokenmeter_prometheus::{Builder, Metric, PrometheusSink};
use tokenmeter_slo::batching::BatchAnalysis;
use tokenmeter_slo::{LatencyMetric, SloMonitor, SloSpec};

/// Adds every latency threshold of `spec` as a bucket edge, so that
/// `rate(x_bucket{le="<threshold>"}) / rate(x_count)` is the exact attainment.
pub(crate) fn add_threshold_edges(
    mut builder: Builder,
    spec: &SloSpec,
) -> Result<Builder, tokenmeter_prometheus::Error> {
    for metric in LatencyMetric::ALL {
        let histogram = Metric::from(metric);
        let edges: Vec<f64> = spec
            .thresholds(metric)
            .iter()
            .map(|d| d.as_secs_f64())
            .collect();
        if !edges.is_empty() {
            builder = builder.add_edges(histogram, &edges)?;
            if metric == LatencyMetric::Tpot {
                // A decode step's time is each user's TPOT: the share of decode steps within
                // the target is exact too.
                builder = builder.add_edges(Metric::StepDuration, &edges)?;
            }
        }
    }
    Ok(builder)
}

/// The request's own objectives from its `x-slo-ttft-ms` and `x-slo-tpot-ms` headers (no other
/// header is read): `None` when it sent neither; a 400 naming the header and the rule (never
/// the value) when one is malformed or repeated.
pub(crate) fn targets(headers: &HeaderMap) -> Result<Option<SloTargets>, ApiError> {
    let values = |name| headers.get_all(name).iter().map(|v| v.as_bytes());
    SloTargets::from_header_values(values(TTFT_HEADER), values(TPOT_HEADER))
        .map(|t| (!t.is_empty()).then_some(t))
        .map_err(|e| ApiError::bad_request(Some(e.header), e.to_string()))
}

/// What the server knows about its SLOs and its batching.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SloState {
    /// The SLO monitor of `Config::slo_spec`, when one was given.
    pub monitor: Option<SloMonitor>,
    /// The analysis of engine steps by batch size.
    pub batching: BatchAnalysis,
}

impl SloState {
    /// The monitor publishes its verdict counters next to the exporter's metrics.
    pub(crate) fn new(spec: Option<SloSpec>, clock: &Clock, prometheus: &PrometheusSink) -> Self {
        let monitor = spec.map(|spec| match prometheus.recorder() {
            Some(recorder) => SloMonitor::publish_to(spec, clock.clone(), recorder),
            None => SloMonitor::publish_global(spec, clock.clone()),
        });
        Self {
            monitor,
            batching: BatchAnalysis::new(),
        }
    }

    /// `GET /slo`: the SLO status (when a spec was given), its summary, and the batch table.
    pub(crate) fn json(&self) -> Value {
        let table = self.batching.table();
        let status = self.monitor.as_ref().map(SloMonitor::status);
        json!({
            "slo": status,
            "summary": status.as_ref().map(|s| s.summary()),
            "batching": table,
            "batching_text": table.to_string(),
        })
    }

    /// The text `tokenmeter serve` prints when it stops: the steps by batch size, and with a
    /// spec the batch that keeps each TPOT threshold.
    pub fn text(&self) -> String {
        let table = self.batching.table();
        let mut out = format!("engine steps by batch size:\n{table}");
        if let Some(monitor) = &self.monitor {
            for threshold in monitor.spec().thresholds(LatencyMetric::Tpot) {
                let batch = table
                    .recommend(threshold)
                    .map_or("none observed".to_owned(), |b| b.to_string());
                out.push_str(&format!(
                    "largest batch whose TPOT p95 meets {threshold:?}: {batch}\n"
                ));
            }
            out.push_str(&format!("\n{}\n", monitor.status()));
        }
        out
    }
}
