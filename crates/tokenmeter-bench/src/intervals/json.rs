//! The intervals in `--json`: added beside the figures of the `summary` object, every key
//! and value already there left as it was.
//!
//! - Each per-request statistic object (`ttft`, `tpot`, `itl`, …) gains
//!   `"ci": {"level": 0.95, "method": …, "p50": [lo, hi], "p90": …, "p95": …, "p99": …,
//!   "mean": …}` (a statistic with too few samples is `null`) and, when any is `null`,
//!   `"too_few": {"p99": {"have": 200, "need": 368}}`. The ITL's `ci` also holds
//!   `"resamples"`; it is `null` beyond 2,000,000 gaps.
//! - `summary` gains `"ci": {"level": 0.95, "success_rate": [lo, hi], "attainment": …,
//!   "request_throughput": …, "output_throughput": …, "total_token_throughput": …,
//!   "goodput": …, "goodput_output_tokens": …, "throughput_slices": k}`, and `"too_few"`
//!   for the rates when there were fewer than 3 slices.

use serde_json::{Map, Value, json};
use tokenmeter::report::{Bounds, SummaryBounds};

use super::RunIntervals;

fn ends(b: Bounds) -> Value {
    match b.interval() {
        Some((lo, hi)) => json!([lo, hi]),
        None => Value::Null,
    }
}

fn too_few(b: Bounds) -> Option<Value> {
    match b {
        Bounds::TooFew { have, need } => Some(json!({"have": have, "need": need})),
        Bounds::Within { .. } => None,
    }
}

/// `ci` and `too_few` of one statistic object.
fn stat_ci(level: f64, method: &str, bounds: &SummaryBounds) -> (Value, Map<String, Value>) {
    let mut ci = Map::new();
    ci.insert("level".into(), json!(level));
    ci.insert("method".into(), json!(method));
    let mut few = Map::new();
    for (name, b) in bounds.named() {
        ci.insert(name.into(), ends(b));
        if let Some(f) = too_few(b) {
            few.insert(name.into(), f);
        }
    }
    (Value::Object(ci), few)
}

/// Adds the intervals of `intervals` to `summary` (the `summary` object of `--json`).
pub(crate) fn annotate(summary: &mut Value, intervals: &RunIntervals) {
    let level = intervals.level.level();
    for (key, bounds) in intervals.rows() {
        let method = if key == "itl" {
            "resampled requests"
        } else {
            "order statistics"
        };
        let (mut ci, few) = stat_ci(level, method, &bounds);
        if key == "itl" {
            ci["resamples"] = json!(intervals.itl_resamples);
        }
        if let Some(object) = summary.get_mut(key).and_then(Value::as_object_mut) {
            object.insert("ci".into(), ci);
            if !few.is_empty() {
                object.insert("too_few".into(), Value::Object(few));
            }
        }
    }
    let itl = summary.get_mut("itl").and_then(Value::as_object_mut);
    if let (None, Some(object)) = (intervals.itl, itl) {
        object.insert("ci".into(), Value::Null);
    }
    let mut ci = Map::new();
    ci.insert("level".into(), json!(level));
    let mut few = Map::new();
    for (key, b) in intervals.rates() {
        ci.insert(key.into(), ends(b));
        if let Some(f) = too_few(b) {
            few.insert(key.into(), f);
        }
    }
    ci.insert(
        "throughput_slices".into(),
        json!(intervals.throughput_slices),
    );
    if !few.is_empty() {
        ci.insert("too_few".into(), Value::Object(few));
    }
    if let Some(object) = summary.as_object_mut() {
        object.insert("ci".into(), Value::Object(ci));
    }
}
