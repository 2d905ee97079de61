//! [`to_json`]: a comparison as `bench compare --json` writes it — every figure with both
//! values, the difference and relative difference with their intervals, and the verdict.

use serde_json::{Value, json};
use tokenmeter::report::Bounds;

use super::comparison::{Comparison, FigureComparison};

/// The comparison as JSON: `settings` (`confidence`, `threshold`, `resamples`, `seed`,
/// `allow_different_shapes`), `base` and `new` (`source`, `runs`), `regressed` (the exit
/// code's verdict), `figures` (one object per figure: `name`, `label`, `higher_is_worse`,
/// `gates`, `level`, `base`, `new`, `difference`, `difference_interval`, `relative`,
/// `relative_interval`, `verdict`; an interval is `[lo, hi]`, or `{"too_few": {"have", "need"}}`
/// when a side's sample is too small, `null` where there is none; latencies in ms, success
/// rate and attainment as fractions, rates per second), `shape_differences` and `notes`.
/// Non-finite numbers are written as `null`.
///
/// # Examples
///
/// ```
/// use tokenmeter_bench::compare::{compare, to_json, CompareSettings, RequestFigures, RunRequests, Side};
///
/// let mut run = RunRequests::default();
/// run.duration_s = 10.0;
/// let mut r = RequestFigures::default();
/// (r.ok, r.good, r.ttft) = (true, true, Some(0.25));
/// run.requests = vec![r; 100];
/// let mut side = Side::default();
/// side.runs.push(run);
/// let json = to_json(&compare(&side, &side, &CompareSettings::default())?);
/// assert_eq!(json["regressed"], false);
/// let ttft = &json["figures"][0];
/// assert_eq!((ttft["name"].as_str(), ttft["base"].as_f64()), (Some("ttft_p50_ms"), Some(250.0)));
/// assert_eq!(ttft["verdict"], "no significant difference");
/// assert_eq!(json["figures"][3]["relative_interval"]["too_few"]["need"], 368);
/// # Ok::<(), anyhow::Error>(())
/// ```
pub fn to_json(comparison: &Comparison) -> Value {
    let c = comparison;
    let s = &c.settings;
    json!({
        "settings": {
            "confidence": s.confidence.level(),
            "threshold": s.threshold,
            "resamples": s.resamples,
            "seed": s.seed,
            "allow_different_shapes": s.allow_different_shapes,
        },
        "base": { "source": c.base.0, "runs": c.base.1 },
        "new": { "source": c.new.0, "runs": c.new.1 },
        "regressed": c.regressed(),
        "figures": c.figures.iter().map(figure).collect::<Vec<_>>(),
        "shape_differences": c.shape_differences,
        "notes": c.notes,
    })
}

fn figure(f: &FigureComparison) -> Value {
    json!({
        "name": f.name,
        "label": f.label,
        "higher_is_worse": f.higher_is_worse,
        "gates": f.gates,
        "level": f.level,
        "base": number(f.base),
        "new": number(f.new),
        "difference": number(f.difference),
        "difference_interval": interval(Some(f.difference_bounds)),
        "relative": f.relative.map(number),
        "relative_interval": interval(f.relative_bounds),
        "verdict": f.verdict.as_str(),
    })
}

fn interval(b: Option<Bounds>) -> Value {
    match b {
        Some(Bounds::Within { lo, hi }) => json!([number(lo), number(hi)]),
        Some(Bounds::TooFew { have, need }) => json!({ "too_few": { "have": have, "need": need } }),
        None => Value::Null,
    }
}

/// A finite number, or `null`.
fn number(v: f64) -> Value {
    if v.is_finite() { json!(v) } else { Value::Null }
}
