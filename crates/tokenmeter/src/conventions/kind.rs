//! [`InstrumentKind`]: what kind of instrument an [`Instrument`](super::Instrument) is, and the
//! Prometheus `# TYPE` it is published as.

/// The kind of an [`Instrument`](super::Instrument).
///
/// Exhaustive on purpose: every exporter maps each kind to one of its own, and a new kind must
/// fail their build rather than fall into a default.
///
/// # Examples
///
/// ```
/// use tokenmeter::conventions::{InstrumentKind, names};
///
/// assert_eq!(names::REQUESTS.kind, InstrumentKind::Counter);
/// assert_eq!(names::REQUESTS.kind.prometheus_type(), "counter");
/// // Up-down counters and gauges are both Prometheus gauges.
/// assert_eq!(names::REQUESTS_WAITING.kind, InstrumentKind::UpDownCounter);
/// assert_eq!(names::REQUESTS_WAITING.kind.prometheus_type(), "gauge");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InstrumentKind {
    /// A histogram (`f64` seconds, or `u64` counts such as tokens).
    Histogram,
    /// A monotonic counter (Prometheus: a counter ending in `_total`).
    Counter,
    /// A value that goes up and down by deltas (Prometheus: a gauge).
    UpDownCounter,
    /// A value that is set (Prometheus: a gauge).
    Gauge,
}

impl InstrumentKind {
    /// The Prometheus `# TYPE` of an instrument of this kind: `histogram`, `counter`, or
    /// `gauge` for both up-down counters and gauges (Prometheus has no up-down counter).
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::conventions::InstrumentKind;
    ///
    /// assert_eq!(InstrumentKind::Histogram.prometheus_type(), "histogram");
    /// assert_eq!(InstrumentKind::Counter.prometheus_type(), "counter");
    /// assert_eq!(InstrumentKind::UpDownCounter.prometheus_type(), "gauge");
    /// assert_eq!(InstrumentKind::Gauge.prometheus_type(), "gauge");
    /// ```
    pub const fn prometheus_type(self) -> &'static str {
        match self {
            InstrumentKind::Histogram => "histogram",
            InstrumentKind::Counter => "counter",
            InstrumentKind::UpDownCounter | InstrumentKind::Gauge => "gauge",
        }
    }
}
