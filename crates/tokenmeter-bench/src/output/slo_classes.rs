//! Attainment by `--slo-class`: per class, the requests the bench measured and how many met
//! the objectives their headers sent, beside the server's counters of the class of the same
//! name (`tokenmeter_slo_requests_total` and `_good_total`, when `--server-metrics` scraped
//! them). The bench judges with `tokenmeter-slo`'s [`Verdict`]: succeeded, and TTFT and TPOT
//! at or below the request's own targets (inclusive), TTFT timed from the send.

use std::fmt::Write as _;

use serde::Serialize;
use tokenmeter_slo::{LatencyMetric, Objective, SloClass, Verdict};

use crate::reqs::Reqs;
use crate::server_view::slo_counts::SloCounts;
use crate::slo_class::SloClassArg;

/// One class's attainment on both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ClassAttainment {
    /// The class's name.
    pub(crate) name: String,
    /// The objectives its requests sent (`ttft=200ms,tpot=50ms`).
    pub(crate) objectives: String,
    /// Its weight among the classes.
    pub(crate) weight: u32,
    /// Requests of the class the bench measured.
    pub(crate) requests: u64,
    /// Of them, those that succeeded within their objectives.
    pub(crate) good: u64,
    /// `good / requests`; `None` without a request.
    pub(crate) attainment: Option<f64>,
    /// The server's counters of the class over the run, when scraped.
    pub(crate) server: Option<ServerAttainment>,
}

/// The server's counters of one class over the run (their increase, first scrape to last).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct ServerAttainment {
    /// `tokenmeter_slo_requests_total{slo_class}`'s increase.
    pub(crate) requests: f64,
    /// `tokenmeter_slo_requests_good_total{slo_class}`'s increase.
    pub(crate) good: f64,
    /// `good / requests`; `None` without a request.
    pub(crate) attainment: Option<f64>,
}

/// Each class's attainment, in the order declared; empty without `--slo-class`.
pub(crate) fn results<'r>(
    classes: &[SloClassArg],
    measured: impl Into<Reqs<'r>>,
    server: Option<&SloCounts>,
) -> Vec<ClassAttainment> {
    let measured: Reqs<'r> = measured.into();
    classes
        .iter()
        .enumerate()
        .map(|(i, class)| {
            let judge = judge(class);
            let (mut requests, mut good) = (0, 0);
            for record in measured
                .iter()
                .filter(|m| m.slo_class == Some(i as u16))
                .filter_map(|m| m.owned_record())
            {
                requests += 1;
                good += u64::from(Verdict::of(&judge, &record).good);
            }
            let server = server
                .and_then(|s| s.0.get(&class.name))
                .map(|c| ServerAttainment {
                    requests: c.requests,
                    good: c.good,
                    attainment: (c.requests > 0.0).then(|| c.good / c.requests),
                });
            ClassAttainment {
                name: class.name.clone(),
                objectives: class.objectives(),
                weight: class.weight,
                requests,
                good,
                attainment: (requests > 0).then(|| good as f64 / requests as f64),
                server,
            }
        })
        .collect()
}

/// The class as `tokenmeter-slo` judges it: a latency objective per target it sends.
fn judge(class: &SloClassArg) -> SloClass {
    let mut judge = SloClass::new(&class.name).from_headers();
    for (metric, target) in [
        (LatencyMetric::Ttft, class.targets.ttft),
        (LatencyMetric::Tpot, class.targets.tpot),
    ] {
        if let Some(target) = target {
            judge = judge.objective(Objective::latency(metric, 99.0, target));
        }
    }
    judge
}

/// The terminal section: one row per class; nothing without classes.
pub(crate) fn render(rows: &[ClassAttainment]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let percent = |a: Option<f64>| a.map_or("-".to_owned(), |a| format!("{:.1}%", a * 100.0));
    let mut out = format!(
        "\nby SLO class (objectives sent in x-slo-ttft-ms / x-slo-tpot-ms)\n  {:<16} {:<26} {:<24} {}\n",
        "class", "objectives", "client good/requests", "server good/requests"
    );
    for r in rows {
        let client = format!("{}/{} ({})", r.good, r.requests, percent(r.attainment));
        let server = r.server.map_or("not scraped".to_owned(), |s| {
            format!("{}/{} ({})", s.good, s.requests, percent(s.attainment))
        });
        let _ = writeln!(
            out,
            "  {:<16} {:<26} {client:<24} {server}",
            r.name, r.objectives
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_without_requests_has_no_attainment_and_the_table_names_the_server_side() {
        let classes = ["a:ttft=1s".parse::<SloClassArg>().unwrap()];
        let rows = results(&classes, &[], None);
        assert_eq!(rows[0].objectives, "ttft=1s");
        assert_eq!((rows[0].requests, rows[0].attainment), (0, None));
        let table = render(&rows);
        assert!(table.contains("not scraped"), "{table}");
        assert!(render(&[]).is_empty());
    }
}
