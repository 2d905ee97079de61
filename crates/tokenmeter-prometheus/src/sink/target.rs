//! Where handles are registered: the global `metrics` recorder or one the caller holds.

use std::fmt;
use std::sync::Arc;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Label, Level, Metadata, Recorder};

static METADATA: Metadata<'static> =
    Metadata::new("tokenmeter_prometheus", Level::INFO, Some(module_path!()));

/// The recorder a sink registers its handles with.
#[derive(Clone)]
pub(crate) enum RecorderTarget {
    /// Whatever `metrics::with_recorder` finds: the global recorder (or a thread-local one set
    /// with `metrics::with_local_recorder` around the registration).
    Global,
    /// A recorder this sink holds.
    Local(Arc<dyn Recorder + Send + Sync>),
}

impl RecorderTarget {
    pub(crate) fn with<T>(&self, f: impl FnOnce(&dyn Recorder) -> T) -> T {
        match self {
            RecorderTarget::Global => metrics::with_recorder(f),
            RecorderTarget::Local(recorder) => f(&**recorder),
        }
    }

    pub(crate) fn histogram(&self, name: impl Into<KeyName>, labels: Vec<Label>) -> Histogram {
        let key = Key::from_parts(name, labels);
        self.with(|r| r.register_histogram(&key, &METADATA))
    }

    pub(crate) fn counter(&self, name: impl Into<KeyName>, labels: Vec<Label>) -> Counter {
        let key = Key::from_parts(name, labels);
        self.with(|r| r.register_counter(&key, &METADATA))
    }

    pub(crate) fn gauge(&self, name: impl Into<KeyName>, labels: Vec<Label>) -> Gauge {
        let key = Key::from_parts(name, labels);
        self.with(|r| r.register_gauge(&key, &METADATA))
    }
}

impl fmt::Debug for RecorderTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecorderTarget::Global => "Global",
            RecorderTarget::Local(_) => "Local",
        })
    }
}
