//! The capped map from label sets to series.

use std::collections::HashMap;

use super::{Labels, Role, Series};
use crate::Clock;
use crate::sink::Sink;

/// Every series one meter made, keyed by the hash of their labels.
pub(crate) struct Registry {
    by_key: HashMap<u64, Vec<Series>>,
    count: usize,
    max: usize,
    /// Items a request on these series holds before it hands them on, as the meter was given it.
    batch: usize,
    folded: [Option<Series>; 2],
}

/// What a lookup found.
pub(crate) enum Resolved {
    /// The series existed or was created.
    Found(Series),
    /// The cap was reached: the overflow series.
    Folded(Series),
}

impl Registry {
    pub(crate) fn new(max: usize, batch: usize) -> Self {
        Self {
            by_key: HashMap::new(),
            count: 0,
            max,
            batch,
            folded: [None, None],
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Finds the series for already-sanitised `labels`, creating it while under the cap.
    pub(crate) fn resolve(
        &mut self,
        labels: &Labels<'_>,
        clock: &Clock,
        sink: &dyn Sink,
    ) -> Resolved {
        let key = labels.key();
        if let Some(found) = self
            .by_key
            .get(&key)
            .and_then(|bucket| bucket.iter().find(|s| s.labels() == labels))
        {
            return Resolved::Found(found.clone());
        }
        if self.count >= self.max || labels.is_folded() {
            return Resolved::Folded(self.folded(labels.role(), clock, sink));
        }
        let owned = labels.clone().into_owned();
        let handle = sink.series(&owned);
        let series = Series::new(owned, clock.clone(), handle, self.batch);
        self.by_key.entry(key).or_default().push(series.clone());
        self.count += 1;
        Resolved::Found(series)
    }

    fn folded(&mut self, role: Role, clock: &Clock, sink: &dyn Sink) -> Series {
        let batch = self.batch;
        let slot = &mut self.folded[role as usize];
        slot.get_or_insert_with(|| {
            let labels = Labels::folded(role);
            let handle = sink.series(&labels);
            Series::new(labels, clock.clone(), handle, batch)
        })
        .clone()
    }
}
