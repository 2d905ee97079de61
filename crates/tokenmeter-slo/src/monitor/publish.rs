//! Publishing verdicts as `metrics` counters, with handles resolved once per series.

use std::sync::Arc;

use metrics::{Counter, Key, Label, Metadata, Recorder};

use crate::names;
use crate::spec::{SloClass, Unclassified};
use crate::verdict::Verdict;

/// Where the counters go.
#[derive(Clone, Default)]
pub(crate) enum PublishTarget {
    /// Nowhere.
    #[default]
    None,
    /// The global `metrics` recorder.
    Global,
    /// A given recorder.
    Recorder(Arc<dyn Recorder + Send + Sync>),
    /// An OpenTelemetry meter.
    #[cfg(feature = "otel")]
    Otel(opentelemetry::metrics::Meter),
}

impl std::fmt::Debug for PublishTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PublishTarget::None => "None",
            PublishTarget::Global => "Global",
            PublishTarget::Recorder(_) => "Recorder",
            #[cfg(feature = "otel")]
            PublishTarget::Otel(_) => "Otel",
        })
    }
}

/// One counter handle, whichever backend holds it.
pub(crate) trait Add: Send + Sync {
    fn add(&self, n: u64);
}

impl Add for Counter {
    fn add(&self, n: u64) {
        self.increment(n);
    }
}

#[cfg(feature = "otel")]
struct OtelCounter(
    opentelemetry::metrics::Counter<u64>,
    Vec<opentelemetry::KeyValue>,
);

#[cfg(feature = "otel")]
impl Add for OtelCounter {
    fn add(&self, n: u64) {
        self.0.add(n, &self.1);
    }
}

type Handle = Box<dyn Add>;

/// One series' counters for its class.
pub(crate) struct Counters {
    requests: Handle,
    good: Handle,
    tokens: Handle,
    good_tokens: Handle,
    events: Vec<Handle>,
    good_events: Vec<Handle>,
}

static METADATA: Metadata<'static> = Metadata::new(module_path!(), metrics::Level::INFO, None);

/// A series' counters of requests counted under no class, one per reason
/// ([`Unclassified::ALL`]'s order).
pub(crate) struct UnclassifiedCounters([Handle; 2]);

impl UnclassifiedCounters {
    pub(crate) fn new(target: &PublishTarget) -> Option<Self> {
        let handles = Unclassified::ALL.map(|reason| {
            register(
                target,
                names::REQUESTS_UNCLASSIFIED,
                vec![Label::new(names::REASON, reason.as_str())],
            )
        });
        (!matches!(target, PublishTarget::None)).then_some(Self(handles))
    }

    pub(crate) fn publish(&self, reason: Unclassified) {
        let index = Unclassified::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or_default();
        self.0[index].add(1);
    }
}

fn register(target: &PublishTarget, name: &'static str, labels: Vec<Label>) -> Handle {
    let key = Key::from_parts(name, labels);
    match target {
        PublishTarget::None => Box::new(Counter::noop()),
        PublishTarget::Global => Box::new(metrics::with_recorder(|r| {
            r.register_counter(&key, &METADATA)
        })),
        PublishTarget::Recorder(r) => Box::new(r.register_counter(&key, &METADATA)),
        #[cfg(feature = "otel")]
        PublishTarget::Otel(meter) => {
            let instrument = names::counter(name).map(|c| c.instrument);
            let (otel_name, unit) = names::otel(name);
            let description = instrument.map_or("", |i| i.description);
            let counter = meter
                .u64_counter(otel_name)
                .with_unit(unit)
                .with_description(description)
                .build();
            let attributes = key
                .labels()
                .map(|l| opentelemetry::KeyValue::new(l.key().to_owned(), l.value().to_owned()))
                .collect();
            Box::new(OtelCounter(counter, attributes))
        }
    }
}

impl Counters {
    pub(crate) fn new(target: &PublishTarget, class: &SloClass) -> Option<Self> {
        let register = |name: &'static str, labels: Vec<Label>| register(target, name, labels);
        if matches!(target, PublishTarget::None) {
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
        self.requests.add(1);
        self.tokens.add(output_tokens);
        // Every counter of a series is touched on its first request, so `good` series exist
        // (at 0) as soon as their denominators do and ratios are never "no data".
        self.good.add(u64::from(verdict.good));
        self.good_tokens
            .add(if verdict.good { output_tokens } else { 0 });
        for ((events, good), v) in self
            .events
            .iter()
            .zip(&self.good_events)
            .zip(&verdict.objectives)
        {
            if let Some(ok) = v {
                events.add(1);
                good.add(u64::from(*ok));
            }
        }
    }
}
