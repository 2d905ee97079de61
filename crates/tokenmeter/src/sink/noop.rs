//! A sink that ignores everything.

use super::{SeriesSink, Sink};
use crate::series::Labels;

/// Ignores every event: the cost of tokenmeter itself, and the default when no sink is given.
///
/// # Examples
///
/// ```
/// use tokenmeter::{Labels, Meter, sink::NoopSink};
/// let meter = Meter::builder().sink(NoopSink).build();
/// meter.series(&Labels::server("chat")).start().succeed();
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopSink;

struct NoopSeries;

impl Sink for NoopSink {
    fn series(&self, _labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(NoopSeries)
    }
}

impl SeriesSink for NoopSeries {
    fn items(&self, _items: super::Items<'_>) {}
}
