//! Engine steps: what a batching server does once per iteration, for the batch-size trade-off.

use std::fmt;
use std::time::Duration;

use super::Sink;
use crate::series::Labels;

/// What an engine step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StepKind {
    /// Prompt processing only.
    Prefill,
    /// One token for each running sequence.
    Decode,
    /// Prefill and decode in one step (chunked prefill).
    Mixed,
}

impl StepKind {
    /// Every kind, in [`index`](StepKind::index) order: exporters keep one prepared handle per
    /// kind in an array of this length and pick it with `index`, with no lookup per step.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::sink::StepKind;
    ///
    /// for (slot, kind) in StepKind::ALL.into_iter().enumerate() {
    ///     assert_eq!(kind.index(), slot);
    /// }
    /// ```
    pub const ALL: [StepKind; 3] = [StepKind::Prefill, StepKind::Decode, StepKind::Mixed];

    /// This kind's position in [`ALL`](StepKind::ALL).
    pub const fn index(self) -> usize {
        match self {
            StepKind::Prefill => 0,
            StepKind::Decode => 1,
            StepKind::Mixed => 2,
        }
    }

    /// `prefill`, `decode` or `mixed`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StepKind::Prefill => "prefill",
            StepKind::Decode => "decode",
            StepKind::Mixed => "mixed",
        }
    }
}

/// One engine step (one scheduler iteration).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::sink::{Step, StepKind};
/// let step = Step::new(StepKind::Decode, 32, 32, Duration::from_millis(12));
/// assert_eq!(step.tokens_per_second(), Some(32.0 / 0.012));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Step {
    /// Prefill, decode or both.
    pub kind: StepKind,
    /// Sequences in the batch.
    pub batch_size: u32,
    /// Tokens processed: prompt tokens for a prefill, one per sequence for a decode.
    pub tokens: u32,
    /// How long the step took.
    pub duration: Duration,
}

impl Step {
    /// A step.
    pub const fn new(kind: StepKind, batch_size: u32, tokens: u32, duration: Duration) -> Self {
        Self {
            kind,
            batch_size,
            tokens,
            duration,
        }
    }

    /// Tokens per second over the step: the engine's (one GPU's) throughput.
    pub fn tokens_per_second(&self) -> Option<f64> {
        let s = self.duration.as_secs_f64();
        (s > 0.0).then(|| f64::from(self.tokens) / s)
    }
}

/// A sink's handle for one engine's steps.
pub trait EngineSink: Send + Sync + 'static {
    /// One step ended.
    fn step(&self, step: &Step);
}

/// Records an engine's steps to every sink that wants them. Build it once per engine with
/// [`Meter::steps`](crate::Meter::steps).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::sink::{Step, StepKind};
/// use tokenmeter::{Labels, Meter};
///
/// let meter = Meter::builder().build();
/// let steps = meter.steps(&Labels::server("").request_model("llama-3-8b"));
/// steps.record(&Step::new(StepKind::Decode, 8, 8, Duration::from_millis(8)));
/// ```
pub struct StepRecorder {
    handles: Box<[Box<dyn EngineSink>]>,
}

impl StepRecorder {
    pub(crate) fn new(sink: &dyn Sink, labels: &Labels<'_>) -> Self {
        Self {
            handles: sink.steps(labels).into_iter().collect(),
        }
    }

    /// Records one step.
    pub fn record(&self, step: &Step) {
        for handle in self.handles.iter() {
            super::guarded(|| handle.step(step));
        }
    }
}

impl fmt::Debug for StepRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepRecorder")
            .field("sinks", &self.handles.len())
            .finish()
    }
}

/// Several engine sinks as one (what [`FanOut`](super::FanOut) hands out).
pub(crate) struct EngineFanOut(pub(crate) Box<[Box<dyn EngineSink>]>);

impl EngineSink for EngineFanOut {
    fn step(&self, step: &Step) {
        for handle in self.0.iter() {
            super::guarded(|| handle.step(step));
        }
    }
}
