//! [`Records`]: the sink that hands each request's core record back to the client that sent it.
//!
//! It asks the core for the time of every token-bearing item
//! ([`SeriesSink::keeps_item_times`]): the bench's ITL, its vLLM latency and its trace are read
//! from those. The client takes its record by the request's id as soon as the request has ended,
//! so the map holds only the requests that are ending.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokenmeter::RequestRecord;
use tokenmeter::sink::{SeriesSink, Sink};
use tokenmeter::{Labels, Request};

/// Records of ended requests not yet taken, by request id.
#[derive(Clone, Debug, Default)]
pub(crate) struct Records {
    ended: Arc<Mutex<HashMap<u64, RequestRecord>>>,
}

impl Records {
    /// The record of the request with this id ([`Request::id`]), once it has ended.
    pub(crate) fn take(&self, id: u64) -> Option<RequestRecord> {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id)
    }

    /// Ends `request` if it has not ended (as cancelled, like a drop) and takes its record.
    pub(crate) fn end(&self, request: Request) -> Option<RequestRecord> {
        let id = request.id();
        drop(request);
        self.take(id)
    }
}

impl Sink for Records {
    fn series(&self, _labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(self.clone())
    }
}

impl SeriesSink for Records {
    fn end(&self, record: &RequestRecord) {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(record.id, record.clone());
    }

    fn keeps_item_times(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenmeter::{Clock, ManualClock, Meter};

    #[test]
    fn a_record_is_taken_once_with_its_item_times() {
        let time = ManualClock::new();
        let records = Records::default();
        let meter = Meter::builder()
            .clock(Clock::manual(&time))
            .sink(records.clone())
            .build();
        let mut request = meter.series(&Labels::client("chat")).start();
        let id = request.id();
        time.advance(std::time::Duration::from_millis(5));
        request.record_tokens(2);
        assert!(records.take(id).is_none(), "not ended yet");
        let record = records.end(request).expect("ended by the drop");
        assert_eq!(record.outcome, tokenmeter::Outcome::Cancelled);
        assert_eq!(record.item_times.map(|t| t.len()), Some(1));
        assert!(records.take(id).is_none(), "taken once");
    }
}
