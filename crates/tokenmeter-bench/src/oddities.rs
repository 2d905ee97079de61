//! [`Oddities`]: what a request's stream held that is valid but not a chunk, or a chunk read
//! leniently — kept with the request (its trace line) and warned about with a count, never
//! turned into an error of a complete answer.
//!
//! - Events skipped: an `event:` of another type than `message` or `error` (a `ping`), an event
//!   with empty data (an empty `data:` line, which the SSE specification dispatches).
//! - Comments (`: keep-alive`): counted in the trace only (a routine keep-alive).
//! - Chunks that gave a field twice: read with the last value, their tokens counted.
//!
//! A `usage` count that is not a non-negative integer (`1e400`, `-1`, `2.5`) is `usage.unusable`
//! ([`crate::summary::usage_warnings`]).

use serde::{Deserialize, Serialize};
use tokenmeter_openai::Skipped;

/// What one request's stream held that was skipped or read leniently (all 0: nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Oddities {
    /// Events of another type than `message` or `error`, skipped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) other_events: u64,
    /// Events with empty data, skipped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) empty_events: u64,
    /// Comment lines.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) comments: u64,
    /// Chunks that gave a field twice (read with the last value).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) duplicate_key_chunks: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Oddities {
    /// Nothing odd.
    pub(crate) const NONE: Self = Self {
        other_events: 0,
        empty_events: 0,
        comments: 0,
        duplicate_key_chunks: 0,
    };

    /// Nothing odd (what the trace leaves out).
    pub(crate) fn is_none(&self) -> bool {
        *self == Self::NONE
    }

    /// Events skipped (comments are not events).
    pub(crate) fn skipped_events(&self) -> u64 {
        self.other_events.saturating_add(self.empty_events)
    }

    /// The sum of `all` (each count saturating).
    pub(crate) fn total(all: impl IntoIterator<Item = Oddities>) -> Oddities {
        all.into_iter()
            .fold(Oddities::default(), |sum, o| Oddities {
                other_events: sum.other_events.saturating_add(o.other_events),
                empty_events: sum.empty_events.saturating_add(o.empty_events),
                comments: sum.comments.saturating_add(o.comments),
                duplicate_key_chunks: sum
                    .duplicate_key_chunks
                    .saturating_add(o.duplicate_key_chunks),
            })
    }

    /// Takes the stream reader's count of what it skipped.
    pub(crate) fn note_skipped(&mut self, skipped: Skipped) {
        self.other_events = skipped.other_events;
        self.empty_events = skipped.empty_events;
        self.comments = skipped.comments;
    }
}

/// An [`Oddities`] is its own (what [`warnings`] reads of each request).
impl AsRef<Oddities> for Oddities {
    fn as_ref(&self) -> &Oddities {
        self
    }
}

/// One warning line per kind of oddity in `each`, the [`Oddities`] of each request of a run
/// (none when there was none).
pub(crate) fn warnings(each: impl ExactSizeIterator<Item = Oddities> + Clone) -> Vec<String> {
    let n = each.len();
    let of = |pick: fn(&Oddities) -> u64| {
        let requests = each.clone().filter(|o| pick(o) > 0).count();
        let total = each.clone().map(|o| pick(&o)).fold(0, u64::saturating_add);
        (requests, total)
    };
    let mut warnings = Vec::new();
    let (requests, events) = of(Oddities::skipped_events);
    if requests > 0 {
        warnings.push(format!(
            "{requests} of {} requests' streams held {events} events that are not completion \
             chunks (another event type than message, or empty data); they were skipped, as \
             the SSE specification's message handler skips them (oddities in --trace)",
            n
        ));
    }
    let (requests, chunks) = of(|o| o.duplicate_key_chunks);
    if requests > 0 {
        warnings.push(format!(
            "{requests} of {} requests' streams held {chunks} chunks that gave a field twice; \
             each was read with the field's last value and its tokens counted (oddities in \
             --trace)",
            n
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_count_requests_and_events() {
        let odd = |other, empty, twice| Oddities {
            other_events: other,
            empty_events: empty,
            comments: 9,
            duplicate_key_chunks: twice,
        };
        assert!(
            warnings([odd(0, 0, 0)].into_iter()).is_empty(),
            "comments alone"
        );
        let all = [odd(2, 1, 0), odd(0, 0, 3)];
        let sum = Oddities::total(all);
        assert_eq!(
            (sum.other_events, sum.empty_events, sum.comments),
            (2, 1, 18)
        );
        assert_eq!(sum.duplicate_key_chunks, 3);
        let got = warnings([odd(2, 1, 0), odd(0, 0, 0), odd(1, 0, 4)].into_iter());
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0].starts_with("2 of 3 requests' streams held 4 events"),
            "{}",
            got[0]
        );
        assert!(
            got[1].starts_with("1 of 3 requests' streams held 4 chunks"),
            "{}",
            got[1]
        );
    }
}
