//! The [`Shape`] of a run read from its `--json`: what it asked for, the facets that make two
//! runs measure different things.
//!
//! | Facet | From | Why it matters |
//! |---|---|---|
//! | `model` | `run.model` | another model is another workload |
//! | `workload` | `run.workload` | the input and output lengths (or the dataset) set TTFT and E2E |
//! | `load` | `run.load`, without its request count | the rate, arrival and concurrency set the queueing |
//! | `slo` | `summary.slo` | goodput and attainment are judged by it |
//!
//! Not facets: the URL (comparing two servers is the point), the seed, the request count (a
//! percentile of 500 requests estimates the one of 2,000; the intervals say how well), the
//! start time, the version and the labels. A `bench merge` JSON and a trace do not say their
//! model, lengths or load: their shape is empty and not checked ([`unchecked_note`]).

use serde_json::Value;

use super::side::Shape;

/// The shape of a single run's `--json` object (`run` and `summary` blocks); empty for a
/// merge's JSON, whose `run` block does not describe the runs.
pub(crate) fn of_json(run_json: &Value) -> Shape {
    if run_json.get("merged").is_some() {
        return Shape::default();
    }
    let run = &run_json["run"];
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    };
    let mut facets = Vec::new();
    let mut add = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            facets.push((name.to_owned(), value));
        }
    };
    add("model", text(&run["model"]));
    add("workload", text(&run["workload"]));
    add("load", run["load"].as_str().map(without_count));
    add("slo", text(&run_json["summary"]["slo"]));
    Shape { facets }
}

/// A stage's words without the request count: `rate 40/s, 24 requests` → `rate 40/s`
/// (`…, 24 requests or 30s, whichever first` keeps its time limit: `…, 30s, whichever first`).
fn without_count(load: &str) -> String {
    for (at, _) in load.match_indices(", ") {
        let tail = &load[at + 2..];
        let digits = tail.chars().take_while(char::is_ascii_digit).count();
        if let Some(rest) = tail[digits..].strip_prefix(" requests")
            && digits > 0
        {
            return match rest.strip_prefix(" or ") {
                Some(time) => format!("{}, {time}", &load[..at]),
                None => format!("{}{rest}", &load[..at]),
            };
        }
    }
    load.to_owned()
}

/// The note a comparison carries when a side's shape is unknown (`source`: the side's file).
pub(crate) fn unchecked_note(source: &str) -> String {
    format!(
        "{source} does not say its model, lengths or load (a --trace or a bench merge JSON): \
         the runs' shapes could not be checked; make sure they ran the same workload"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_request_count_is_not_part_of_the_load() {
        assert_eq!(
            without_count("rate 40/s poisson, 24 requests"),
            "rate 40/s poisson"
        );
        assert_eq!(
            without_count("concurrency 8, 100 requests or 30s, whichever first"),
            "concurrency 8, 30s, whichever first"
        );
        assert_eq!(
            without_count("concurrency 8, for 30s"),
            "concurrency 8, for 30s"
        );
        assert_eq!(
            without_count("3 stages (see by stage)"),
            "3 stages (see by stage)"
        );
    }

    #[test]
    fn facets_come_from_the_run_and_summary_blocks() {
        let run = json!({
            "run": {"model": "m", "workload": "input 8 tok", "load": "rate 5/s, 9 requests",
                    "url": "http://a", "seed": 3},
            "summary": {"slo": {"ttft_s": 1.0}},
        });
        let shape = of_json(&run);
        let names: Vec<&str> = shape.facets.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["model", "workload", "load", "slo"]);
        assert_eq!(shape.facets[2].1, "rate 5/s");
        assert!(
            of_json(&json!({"run": {"model": "m"}, "merged": {}}))
                .facets
                .is_empty()
        );
    }
}
