//! Publishing verdicts as `metrics` counters, with handles resolved once per series.

use std::sync::Arc;

use metrics::{Counter, Key, Label, Metadata, Recorder};

use crate::names;
use crate::spec::SloClass;
use crate::verdict::Verdict;

/// Where the counters go.
#[derive(Clone, Default)]
pub(crate) enum Target {
    /// Nowhere.
    #[default]
    None,
    /// The global `metrics` recorder.
    Global,
    /// A given recorder.
    Recorder(Arc<dyn Recorder + Send + Sync>),
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Target::None => "None",
            Target::Global => "Global",
            Target::Recorder(_) => "Recorder",
        })
    }
}

/// One series' counters for its class.
pub(crate) struct Counters {
    requests: Counter,
    good: Counter,
    tokens: Counter,
    good_tokens: Counter,
    events: Vec<Counter>,
    good_events: Vec<Counter>,
}

static METADATA: Metadata<'static> = Metadata::new(module_path!(), metrics::Level::INFO, None);

impl Counters {
    pub(crate) fn new(target: &Target, class: &SloClass) -> Option<Self> {
        let register = |name: &'static str, labels: Vec<Label>| -> Counter {
            let key = Key::from_parts(name, labels);
            match target {
                Target::None => Counter::noop(),
                Target::Global => metrics::with_recorder(|r| r.register_counter(&key, &METADATA)),
                Target::Recorder(r) => r.register_counter(&key, &METADATA),
            }
        };
        if matches!(target, Target::None) {
            return None;
        }
        let class_label = || vec![Label::new(names::SLO_CLASS, class.name.clone())];
        let objective_labels = |o: &str| {
            vec![
                Label::new(names::SLO_CLASS, class.name.clone()),
                Label::new(names::OBJECTIVE, o.to_string()),
            ]
        };
        Some(Self {
            requests: register(names::REQUESTS, class_label()),
            good: register(names::REQUESTS_GOOD, class_label()),
            tokens: register(names::OUTPUT_TOKENS, class_label()),
            good_tokens: register(names::OUTPUT_TOKENS_GOOD, class_label()),
            events: class
                .objectives
                .iter()
                .map(|o| register(names::OBJECTIVE_EVENTS, objective_labels(&o.name)))
                .collect(),
            good_events: class
                .objectives
                .iter()
                .map(|o| register(names::OBJECTIVE_GOOD, objective_labels(&o.name)))
                .collect(),
        })
    }

    pub(crate) fn publish(&self, verdict: &Verdict, output_tokens: u64) {
        self.requests.increment(1);
        self.tokens.increment(output_tokens);
        // Every counter of a series is touched on its first request, so `good` series exist
        // (at 0) as soon as their denominators do and ratios are never "no data".
        self.good.increment(u64::from(verdict.good));
        self.good_tokens
            .increment(if verdict.good { output_tokens } else { 0 });
        for ((events, good), v) in self
            .events
            .iter()
            .zip(&self.good_events)
            .zip(&verdict.objectives)
        {
            if let Some(ok) = v {
                events.increment(1);
                good.increment(u64::from(*ok));
            }
        }
    }
}
