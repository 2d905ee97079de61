//! The spans of requests in flight, by request id: touched at a request's start, first token
//! and end, never per token.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tracing::Span;

const SHARDS: usize = 16;

/// Spans of requests that have started and not ended, sharded by id so concurrent requests
/// rarely share a lock.
#[derive(Debug, Default)]
pub(crate) struct Spans {
    shards: [Mutex<HashMap<u64, Span>>; SHARDS],
}

impl Spans {
    fn shard(&self, id: u64) -> MutexGuard<'_, HashMap<u64, Span>> {
        // A panic while holding a shard leaves only a span map behind: carry on with it.
        self.shards[(id % SHARDS as u64) as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn insert(&self, id: u64, span: Span) {
        self.shard(id).insert(id, span);
    }

    pub(crate) fn get(&self, id: u64) -> Option<Span> {
        self.shard(id).get(&id).cloned()
    }

    pub(crate) fn remove(&self, id: u64) -> Option<Span> {
        self.shard(id).remove(&id)
    }

    /// Requests whose span is held.
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).len())
            .sum()
    }
}
