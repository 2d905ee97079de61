//! The server's SLO verdict counters by class: `tokenmeter_slo_requests_total` and
//! `tokenmeter_slo_requests_good_total`, each summed by its `slo_class` label (what
//! `tokenmeter serve --slo-spec`, or any server publishing `tokenmeter-slo`'s counters,
//! exposes), and their increase between two scrapes.

use std::collections::BTreeMap;

use serde::Serialize;

use super::exposition::Sample;

/// Requests evaluated, per class.
pub(crate) const REQUESTS: &str = "tokenmeter_slo_requests_total";
/// Good requests, per class.
pub(crate) const GOOD: &str = "tokenmeter_slo_requests_good_total";
/// The most classes kept from one scrape: the server's label values are not trusted to be few.
const MAX_CLASSES: usize = 64;

/// One class's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct SloCount {
    /// Requests evaluated against the class.
    pub(crate) requests: f64,
    /// Requests that met every objective.
    pub(crate) good: f64,
}

/// The counters by class name.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SloCounts(pub(crate) BTreeMap<String, SloCount>);

impl SloCounts {
    /// The counters in one scrape (server-side series only, at most 64 classes).
    pub(crate) fn of(samples: &[Sample]) -> Self {
        let mut out = BTreeMap::new();
        for s in samples {
            let good = match s.name.as_str() {
                REQUESTS => false,
                GOOD => true,
                _ => continue,
            };
            let Some(class) = s.label("slo_class") else {
                continue;
            };
            if !s.value.is_finite() || (out.len() >= MAX_CLASSES && !out.contains_key(class)) {
                continue;
            }
            let count: &mut SloCount = out.entry(class.to_owned()).or_default();
            if good {
                count.good += s.value;
            } else {
                count.requests += s.value;
            }
        }
        Self(out)
    }

    /// The increase since `earlier`, per class (a counter that fell is a restart: its value).
    pub(crate) fn since(&self, earlier: &SloCounts) -> SloCounts {
        let increase = |now: f64, then: f64| if now < then { now } else { now - then };
        Self(
            self.0
                .iter()
                .map(|(name, now)| {
                    let then = earlier.0.get(name).copied().unwrap_or_default();
                    let count = SloCount {
                        requests: increase(now.requests, then.requests),
                        good: increase(now.good, then.good),
                    };
                    (name.clone(), count)
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::exposition::parse;
    use super::*;

    #[test]
    fn counters_are_summed_by_class_and_differenced() {
        let read =
            |text: &str| SloCounts::of(&parse(text, |n| n == REQUESTS || n == GOOD).unwrap());
        let before = read(
            "tokenmeter_slo_requests_total{slo_class=\"a\"} 2\ntokenmeter_slo_requests_good_total{slo_class=\"a\"} 1\n",
        );
        let after = read(
            "tokenmeter_slo_requests_total{slo_class=\"a\",instance=\"x\"} 5\n\
             tokenmeter_slo_requests_total{slo_class=\"a\",instance=\"y\"} 3\n\
             tokenmeter_slo_requests_good_total{slo_class=\"a\"} 4\n\
             tokenmeter_slo_requests_total{slo_class=\"b\"} 1\n",
        );
        let delta = after.since(&before);
        assert_eq!(
            delta.0["a"],
            SloCount {
                requests: 6.0,
                good: 3.0
            }
        );
        assert_eq!(
            delta.0["b"],
            SloCount {
                requests: 1.0,
                good: 0.0
            }
        );
    }
}
