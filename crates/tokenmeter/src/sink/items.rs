//! The items after a request's first token, as sinks receive them: in batches.

use std::fmt;
use std::iter::FusedIterator;
use std::time::Duration;

/// One token-bearing item after a request's first: one inter-token gap.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::sink::Items;
///
/// let items = Items::new(&[2_000_000], &[3]);
/// let item = items.iter().next().unwrap();
/// assert_eq!((item.gap, item.tokens), (Duration::from_millis(2), 3));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Item {
    /// Time since the request's previous token-bearing item (one ITL sample).
    pub gap: Duration,
    /// Tokens the item carried (at least 1).
    pub tokens: u32,
}

/// Consecutive items of one request, oldest first, as [`SeriesSink::items`](super::SeriesSink::items)
/// receives them.
///
/// A request takes each item's time when the item arrives, and hands its items to the sink in
/// batches of at most [`Items::CAPACITY`] ([`MeterBuilder::item_batch`](crate::MeterBuilder::item_batch)
/// sets fewer): when the batch is full, when the next item arrives
/// [`Items::MAX_DELAY`] or more after the batch's first, when the request ends (always before
/// [`SeriesSink::end`](super::SeriesSink::end)), or when the caller asks with
/// [`Request::flush`](crate::Request::flush). Nothing is lost and nothing is reordered within a
/// request; what a batch saves is one sink call (and whatever the sink does once per call) per
/// item.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::sink::Items;
///
/// let items = Items::new(&[1_000_000, 4_000_000], &[1, 2]);
/// assert_eq!(items.len(), 2);
/// let total: u32 = items.iter().map(|item| item.tokens).sum();
/// assert_eq!(total, 3);
/// let gaps: Vec<Duration> = items.gaps().collect();
/// assert_eq!(gaps, [Duration::from_millis(1), Duration::from_millis(4)]);
/// ```
#[derive(Clone, Copy)]
pub struct Items<'a> {
    gaps_ns: &'a [u64],
    tokens: &'a [u32],
}

impl<'a> Items<'a> {
    /// The most items one batch holds.
    pub const CAPACITY: usize = 16;

    /// How long the first item of a batch waits at most, counted when the next item arrives:
    /// the item that arrives this long or longer after it sends the batch on. A request that
    /// stalls keeps its batch until its next item or its end.
    pub const MAX_DELAY: Duration = Duration::from_secs(1);

    /// Items from their gaps in nanoseconds and their token counts, index by index. The shorter
    /// slice decides the length. For sinks' own tests; requests build theirs.
    pub fn new(gaps_ns: &'a [u64], tokens: &'a [u32]) -> Self {
        let len = gaps_ns.len().min(tokens.len());
        Self {
            gaps_ns: &gaps_ns[..len],
            tokens: &tokens[..len],
        }
    }

    /// How many items.
    pub fn len(&self) -> usize {
        self.gaps_ns.len()
    }

    /// True with no items.
    pub fn is_empty(&self) -> bool {
        self.gaps_ns.is_empty()
    }

    /// Each item, oldest first.
    pub fn iter(&self) -> ItemsIter<'a> {
        ItemsIter {
            gaps_ns: self.gaps_ns.iter(),
            tokens: self.tokens.iter(),
        }
    }

    /// Each item's gap, oldest first: the ITL samples, for a sink that records only those.
    pub fn gaps(&self) -> impl ExactSizeIterator<Item = Duration> + 'a {
        self.gaps_ns.iter().map(|&ns| Duration::from_nanos(ns))
    }

    /// Each item's gap in seconds, oldest first: bit for bit [`Duration::as_secs_f64`] of
    /// [`gaps`](Self::gaps), without building the `Duration` (a gap under a second, every
    /// ITL sample in practice, is one conversion and one division). For a sink that records
    /// the ITL samples as `f64` seconds, as histograms do.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::sink::Items;
    ///
    /// let items = Items::new(&[2_500_000, 1_500_000_000], &[1, 1]);
    /// let seconds: Vec<f64> = items.gap_seconds().collect();
    /// assert_eq!(seconds, [0.0025, 1.5]);
    /// ```
    #[inline]
    pub fn gap_seconds(&self) -> impl ExactSizeIterator<Item = f64> + 'a {
        self.gaps_ns.iter().map(|&ns| {
            if ns < NANOS_PER_SEC {
                // as_secs_f64 is `secs as f64 + nanos as f64 / 1e9`: with no whole second that
                // is the division alone (adding 0.0 changes no bit).
                ns as f64 / NANOS_PER_SEC as f64
            } else {
                Duration::from_nanos(ns).as_secs_f64()
            }
        })
    }
}

const NANOS_PER_SEC: u64 = 1_000_000_000;

impl<'a> IntoIterator for Items<'a> {
    type Item = Item;
    type IntoIter = ItemsIter<'a>;

    fn into_iter(self) -> ItemsIter<'a> {
        self.iter()
    }
}

impl fmt::Debug for Items<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The iterator of [`Items::iter`].
#[derive(Clone, Debug)]
pub struct ItemsIter<'a> {
    gaps_ns: std::slice::Iter<'a, u64>,
    tokens: std::slice::Iter<'a, u32>,
}

impl Iterator for ItemsIter<'_> {
    type Item = Item;

    #[inline]
    fn next(&mut self) -> Option<Item> {
        let gap = Duration::from_nanos(*self.gaps_ns.next()?);
        let tokens = *self.tokens.next()?;
        Some(Item { gap, tokens })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.gaps_ns.size_hint()
    }
}

impl ExactSizeIterator for ItemsIter<'_> {}
impl FusedIterator for ItemsIter<'_> {}

/// A request's items not yet handed to its sink.
pub(crate) struct Pending {
    gaps_ns: [u64; Items::CAPACITY],
    tokens: [u32; Items::CAPACITY],
    len: usize,
    /// The batch goes when it holds this many (1..=`Items::CAPACITY`).
    limit: usize,
    /// When the batch must go at the latest (checked as items arrive), in the clock's nanoseconds.
    deadline_ns: u64,
}

impl Pending {
    /// An empty batch that goes when it holds `limit` items (taken into 1..=`Items::CAPACITY`).
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            gaps_ns: [0; Items::CAPACITY],
            tokens: [0; Items::CAPACITY],
            len: 0,
            limit: limit.clamp(1, Items::CAPACITY),
            deadline_ns: 0,
        }
    }

    /// Adds an item that arrived at `now_ns`; true when the batch should be handed on now.
    #[inline]
    pub(crate) fn push(&mut self, now_ns: u64, gap_ns: u64, tokens: u32) -> bool {
        if self.len == 0 {
            self.deadline_ns = now_ns.saturating_add(Items::MAX_DELAY.as_nanos() as u64);
        }
        // `len < limit <= CAPACITY` always holds here: a full batch is taken before the next push.
        if let (Some(gap), Some(count)) = (
            self.gaps_ns.get_mut(self.len),
            self.tokens.get_mut(self.len),
        ) {
            *gap = gap_ns;
            *count = tokens;
            self.len += 1;
        }
        self.len >= self.limit || now_ns >= self.deadline_ns
    }

    /// The items held, which are then no longer held. Empty when there are none.
    #[inline]
    pub(crate) fn take(&mut self) -> Items<'_> {
        let len = std::mem::take(&mut self.len);
        Items::new(&self.gaps_ns[..len], &self.tokens[..len])
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_seconds_are_as_secs_f64_bit_for_bit() {
        let mut ns = 1u64;
        while ns < 10_000_000_000_000 {
            let gaps = [ns - 1, ns, ns + 1, ns * 3 + 7, 999_999_999, 1_000_000_000];
            let items = Items::new(&gaps, &[1; 6]);
            for (gap, seconds) in items.gaps().zip(items.gap_seconds()) {
                assert_eq!(seconds.to_bits(), gap.as_secs_f64().to_bits(), "{gap:?}");
            }
            ns = ns * 7 / 3 + 1;
        }
    }

    #[test]
    fn a_batch_goes_when_full() {
        let mut pending = Pending::new(Items::CAPACITY);
        for i in 0..Items::CAPACITY as u64 - 1 {
            assert!(!pending.push(i, 1, 1), "item {i} filled the batch early");
        }
        assert!(pending.push(100, 7, 2));
        let items = pending.take();
        assert_eq!(items.len(), Items::CAPACITY);
        assert_eq!(
            items.iter().last(),
            Some(Item {
                gap: Duration::from_nanos(7),
                tokens: 2
            })
        );
        assert!(pending.is_empty());
    }

    #[test]
    fn a_batch_goes_when_its_first_item_has_waited_long_enough() {
        let max = Items::MAX_DELAY.as_nanos() as u64;
        let mut pending = Pending::new(Items::CAPACITY);
        assert!(!pending.push(10, 1, 1));
        assert!(!pending.push(10 + max - 1, 1, 1));
        assert!(pending.push(10 + max, 1, 1));
        assert_eq!(pending.take().len(), 3);
        // The next batch counts from its own first item.
        assert!(!pending.push(10 + 2 * max - 1, 1, 1));
    }

    #[test]
    fn a_smaller_limit_sends_sooner_and_the_limit_stays_in_range() {
        let mut one = Pending::new(1);
        assert!(one.push(0, 5, 1));
        assert_eq!(one.take().len(), 1);
        let mut zero = Pending::new(0);
        assert!(zero.push(0, 5, 1), "0 is taken as 1");
        let mut huge = Pending::new(usize::MAX);
        for i in 0..Items::CAPACITY as u64 - 1 {
            assert!(!huge.push(i, 1, 1));
        }
        assert!(
            huge.push(99, 1, 1),
            "a limit past the capacity is the capacity"
        );
    }

    #[test]
    fn the_shorter_slice_decides_the_length() {
        assert_eq!(Items::new(&[1, 2, 3], &[1]).len(), 1);
        assert!(Items::new(&[], &[1]).is_empty());
    }
}
