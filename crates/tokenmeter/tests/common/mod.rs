//! A scripted stream driven by a manual clock, shared by the core's integration tests.
#![allow(dead_code, unreachable_pub)]

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use tokenmeter::sink::InMemorySink;
use tokenmeter::{Labels, ManualClock, Meter, Series};

/// Yields each item after advancing the manual clock by its delay, then ends after `end_after`.
pub struct Scripted<T> {
    clock: ManualClock,
    steps: VecDeque<(Duration, T)>,
    end_after: Duration,
    ended: bool,
}

impl<T> Scripted<T> {
    pub fn new(clock: &ManualClock, steps: Vec<(u64, T)>, end_after_ns: u64) -> Self {
        Self {
            clock: clock.clone(),
            steps: steps
                .into_iter()
                .map(|(ns, item)| (Duration::from_nanos(ns), item))
                .collect(),
            end_after: Duration::from_nanos(end_after_ns),
            ended: false,
        }
    }
}

impl<T: Unpin> Stream for Scripted<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<T>> {
        match self.steps.pop_front() {
            Some((delay, item)) => {
                self.clock.advance(delay);
                Poll::Ready(Some(item))
            }
            None => {
                if !self.ended {
                    self.ended = true;
                    self.clock.advance(self.end_after);
                }
                Poll::Ready(None)
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.steps.len(), Some(self.steps.len()))
    }
}

/// A manual clock, an in-memory sink, and one server series on them.
pub struct Rig {
    pub time: ManualClock,
    pub memory: InMemorySink,
    pub meter: Meter,
    pub series: Series,
}

impl Rig {
    pub fn new(labels: Labels<'_>) -> Self {
        let time = ManualClock::new();
        let (meter, memory) = Meter::manual(&time);
        let series = meter.series(&labels);
        Self {
            time,
            memory,
            meter,
            series,
        }
    }

    pub fn server() -> Self {
        Self::new(Labels::server("chat").request_model("m"))
    }

    pub fn advance_ns(&self, ns: u64) {
        self.time.advance(Duration::from_nanos(ns));
    }

    pub fn only_record(&self) -> tokenmeter::RequestRecord {
        let records = self.memory.records();
        assert_eq!(
            records.len(),
            1,
            "expected exactly one record, got {records:?}"
        );
        records.into_iter().next().expect("one record")
    }
}

pub fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}
