//! One engine's handles (steps, KV-cache usage, preemptions, the info gauges), registered once
//! when the engine asks the meter for its [`EngineRecorder`](tokenmeter::sink::EngineRecorder),
//! then only indexed: the core's [`EngineRows`] loop over this exporter's [`EngineSlot`]s.
//!
//! An info row (the cache configuration, the LoRA adapters) registers a gauge per attribute
//! set it is given; when the set changes, the gauge of the previous one is set to 0, so one
//! series per info row carries the current value. The core bounds the sets
//! ([`MAX_LORA_COMBINATIONS`](tokenmeter::sink::MAX_LORA_COMBINATIONS)).

use std::sync::{Mutex, PoisonError};

use metrics::{Gauge, Label};
use tokenmeter::conventions::{EngineSignal, Feed, Value};
use tokenmeter::sink::{EngineRows, RecordValue};
use tokenmeter::{Labels, Role};

use super::handle::Slot;
use super::labels;
use super::target::RecorderTarget;
use crate::names::label;
use crate::profile::Profile;
use crate::rows::PromRow;

/// An engine row's handles, and for an info row what it needs to register a gauge per
/// attribute set.
pub(crate) struct EngineSlot {
    slot: Slot<()>,
    info: Option<Info>,
}

struct Info {
    target: RecorderTarget,
    name: String,
    base: Vec<Label>,
    /// The gauge of the attribute set last recorded.
    current: Mutex<Option<Gauge>>,
}

impl RecordValue for EngineSlot {
    fn record(&self, variant: usize, value: Value) {
        self.slot.record(variant, value);
    }

    fn record_info(&self, attrs: &[(&'static str, &str)], value: Value) {
        let Some(info) = &self.info else {
            return;
        };
        let mut labels = info.base.clone();
        labels.extend(
            attrs
                .iter()
                .map(|(key, value)| Label::new(*key, (*value).to_owned())),
        );
        let gauge = info.target.gauge(info.name.clone(), labels);
        gauge.set(value.as_f64());
        let mut current = info.current.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(previous) = current.replace(gauge.clone()) {
            // the same handle when the set did not change: set again below
            previous.set(0.0);
            gauge.set(value.as_f64());
        }
    }
}

/// The labels an info row carries besides its own: in the vLLM profile, vLLM's exact label
/// sets (`vllm:lora_requests_info` has only its three adapter labels; `vllm:cache_config_info`
/// has `engine` besides the configuration, no `model_name`), so a reader written for vLLM's
/// exposition reads ours; in the semconv profile, the engine's attributes.
fn info_base(profile: Profile, signal: EngineSignal, base: Vec<Label>) -> Vec<Label> {
    if profile == Profile::Semconv {
        return base;
    }
    match signal {
        EngineSignal::CacheConfigInfo => base
            .into_iter()
            .filter(|l| l.key() == label::ENGINE.prometheus)
            .collect(),
        _ => Vec::new(),
    }
}

/// Registers the handles of every engine row, labelled by `engine`'s provider and models
/// (semconv, without the operation) or by `model_name` (vLLM).
pub(crate) fn engine_rows(
    profile: Profile,
    target: &RecorderTarget,
    rows: &[PromRow],
    engine: &Labels<'_>,
) -> EngineRows<EngineSlot> {
    EngineRows::new(
        rows.iter()
            .filter(|row| row.row.feed.is_engine())
            .map(|row| {
                let attrs = row.row.attrs;
                let labels = |variant| labels::of(profile, attrs, engine, Role::Server, variant);
                let info = match row.row.feed {
                    Feed::Engine(signal) if signal.is_info() => Some(Info {
                        target: target.clone(),
                        name: row.name.clone().into_owned(),
                        base: info_base(profile, signal, labels(0)),
                        current: Mutex::new(None),
                    }),
                    _ => None,
                };
                // an info row has no series until it is given its attributes
                let slot = match info {
                    Some(_) => Slot::empty(attrs),
                    None => Slot::new(target, row, (), labels),
                };
                (&row.row, EngineSlot { slot, info })
            }),
    )
}
