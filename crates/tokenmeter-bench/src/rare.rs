//! [`Rare`]: what few requests of a run have (an error's text, a `usage` that disagreed with
//! the stream, skipped events, the server's own timings), in a box
//! only those requests keep: 8 bytes for the others instead of about 150. The response id is
//! here too while a request ends; it is dropped once the trace line is written.

use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::oddities::Oddities;
use crate::sanitize::ServerText;

/// `usage.completion_tokens` against the token-bearing chunks the stream carried, when no
/// stream could give both: fewer tokens than token-bearing chunks, or more than `max_tokens`.
/// `usage` is kept (vLLM's rule); the run reports how many requests disagreed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Discrepancy {
    /// What `usage` said.
    pub(crate) completion_tokens: u64,
    /// Token-bearing chunks seen.
    pub(crate) token_chunks: u64,
}

/// The fields of a request that most requests leave empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RareFields {
    /// What went wrong, for errors (sanitised: never contains a piece of the API key).
    pub(crate) error: Option<ServerText>,
    /// `usage.completion_tokens` disagreed with the stream (see [`Discrepancy`]).
    pub(crate) usage_discrepancy: Option<Discrepancy>,
    /// Events its stream held that were skipped, and chunks read leniently.
    pub(crate) oddities: Oddities,
    /// The server's TTFT of this request from its arrival, from the `metrics` object it sent
    /// (vLLM's `--enable-per-request-metrics`): `queue_time_ms` + `time_to_first_token_ms`.
    pub(crate) server_ttft: Option<Duration>,
    /// The server's queue time of this request (`metrics.queue_time_ms`).
    pub(crate) server_queue: Option<Duration>,
    /// The response's `id` (its `x-request-id` header, else the chunks' `id`), sanitised:
    /// kept while the request ends, dropped once its trace line is written
    /// ([`crate::collect::Collector::add`]).
    pub(crate) response_id: Option<ServerText>,
}

/// Nothing rare: what a request without its box reads.
static NONE: RareFields = RareFields {
    error: None,
    usage_discrepancy: None,
    oddities: Oddities::NONE,
    server_ttft: None,
    server_queue: None,
    response_id: None,
};

/// [`RareFields`], boxed when one is set (reads see them empty otherwise; a write allocates).
#[derive(Clone, Debug, Default)]
pub(crate) struct Rare(Option<Box<RareFields>>);

impl Rare {
    /// Drops the response id (without allocating a box when there is none).
    pub(crate) fn drop_response_id(&mut self) {
        if let Some(fields) = self.0.as_deref_mut() {
            fields.response_id = None;
        }
    }

    /// Something is set (the box is there).
    pub(crate) fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// Bytes of the box, when there is one.
    #[cfg(test)]
    pub(crate) fn boxed_bytes(&self) -> usize {
        self.0
            .as_ref()
            .map_or(0, |_| std::mem::size_of::<RareFields>())
    }

    /// Frees the box when nothing in it is set.
    pub(crate) fn shrink(&mut self) {
        if self.0.as_deref().is_some_and(|r| *r == NONE) {
            self.0 = None;
        }
    }
}

impl From<RareFields> for Rare {
    fn from(fields: RareFields) -> Self {
        let mut rare = Rare(Some(Box::new(fields)));
        rare.shrink();
        rare
    }
}

impl Deref for Rare {
    type Target = RareFields;

    fn deref(&self) -> &RareFields {
        self.0.as_deref().unwrap_or(&NONE)
    }
}

impl DerefMut for Rare {
    fn deref_mut(&mut self) -> &mut RareFields {
        self.0.get_or_insert_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_is_kept_only_while_something_is_set() {
        let mut rare = Rare::default();
        assert_eq!(*rare, RareFields::default());
        rare.server_queue = Some(Duration::from_nanos(u64::MAX));
        rare.shrink();
        assert_eq!(rare.server_queue, Some(Duration::from_nanos(u64::MAX)));
        rare.server_queue = None;
        rare.shrink();
        assert!(rare.0.is_none());
        assert!(std::mem::size_of::<Rare>() <= 8);
    }
}
