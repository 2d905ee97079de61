//! [`Reqs`]: the requests an output reads, one at a time: a run's [`Packed`] store (each built
//! again as it is read), a slice of [`Measured`], or a part of either ([`Picked`]).
//!
//! An output that reads a run never holds more than the request it is at: a subset (the
//! successes, a slice of time, a stage) is a list of 4-byte indexes, not of copies.

use std::borrow::Cow;

use crate::measured::Measured;
use crate::packed::Packed;

/// Where the requests are.
#[derive(Clone, Copy, Debug)]
enum Source<'a> {
    Slice(&'a [Measured]),
    Packed(&'a Packed),
}

impl<'a> Source<'a> {
    fn len(self) -> usize {
        match self {
            Source::Slice(s) => s.len(),
            Source::Packed(p) => p.len(),
        }
    }

    fn get(self, k: usize) -> Option<Cow<'a, Measured>> {
        match self {
            Source::Slice(s) => s.get(k).map(Cow::Borrowed),
            Source::Packed(p) => p.get(k).map(Cow::Owned),
        }
    }
}

/// Which of them.
#[derive(Clone, Copy, Debug)]
enum Pick<'a> {
    /// From the first to before the second.
    Range(usize, usize),
    /// These, by index in the source.
    Indices(&'a [u32]),
}

/// Requests to read, one at a time (see the module). Cheap to copy.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reqs<'a> {
    source: Source<'a>,
    pick: Pick<'a>,
}

impl<'a> Reqs<'a> {
    fn all(source: Source<'a>) -> Self {
        Self {
            source,
            pick: Pick::Range(0, source.len()),
        }
    }

    /// How many.
    pub(crate) fn len(self) -> usize {
        match self.pick {
            Pick::Range(from, to) => to - from,
            Pick::Indices(indices) => indices.len(),
        }
    }

    /// True when there is none.
    pub(crate) fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The index in the source of the `k`-th.
    fn index(self, k: usize) -> usize {
        match self.pick {
            Pick::Range(from, _) => from + k,
            Pick::Indices(indices) => indices[k] as usize,
        }
    }

    /// Each, in order.
    pub(crate) fn iter(
        self,
    ) -> impl ExactSizeIterator<Item = Cow<'a, Measured>> + DoubleEndedIterator + Clone + 'a {
        (0..self.len()).map(move |k| {
            self.source
                .get(self.index(k))
                .expect("every request of a run reads back")
        })
    }

    /// The ones from the `from`-th on.
    pub(crate) fn tail(self, from: usize) -> Self {
        let from = from.min(self.len());
        match self.pick {
            Pick::Range(start, end) => Self {
                pick: Pick::Range(start + from, end),
                ..self
            },
            Pick::Indices(indices) => Self {
                pick: Pick::Indices(&indices[from..]),
                ..self
            },
        }
    }

    /// The ones `keep` keeps, in order.
    pub(crate) fn filter(self, mut keep: impl FnMut(&Measured) -> bool) -> Picked<'a> {
        self.picking(|m, pick| {
            if keep(m) {
                pick(0);
            }
        })
        .pop()
        .unwrap_or_else(|| Picked::new(self.source))
    }

    /// Several subsets in one pass: `sort` is given each request and a function that adds it
    /// to the subset of the index given (the subsets are as many as the highest index + 1).
    pub(crate) fn picking(
        self,
        mut sort: impl FnMut(&Measured, &mut dyn FnMut(usize)),
    ) -> Vec<Picked<'a>> {
        let mut picked: Vec<Picked<'a>> = Vec::new();
        for k in 0..self.len() {
            let index = self.index(k);
            let Some(m) = self.source.get(index) else {
                continue;
            };
            sort(&m, &mut |into| {
                while picked.len() <= into {
                    picked.push(Picked::new(self.source));
                }
                picked[into].indices.push(index as u32);
            });
        }
        picked
    }
}

/// A subset of requests: the indexes in their source (see [`Reqs::filter`]).
#[derive(Clone, Debug)]
pub(crate) struct Picked<'a> {
    source: Source<'a>,
    indices: Vec<u32>,
}

impl<'a> Picked<'a> {
    fn new(source: Source<'a>) -> Self {
        Self {
            source,
            indices: Vec::new(),
        }
    }

    /// The requests picked.
    pub(crate) fn reqs(&self) -> Reqs<'_> {
        Reqs {
            source: self.source,
            pick: Pick::Indices(&self.indices),
        }
    }

    /// True when none was picked.
    pub(crate) fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// Their indexes in the source: 4 bytes a request, for a function that takes a slice of
    /// items ([`Picked::at`] reads one).
    pub(crate) fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// The request at `index` in the source (one of [`Picked::indices`]).
    pub(crate) fn at(&self, index: u32) -> Cow<'a, Measured> {
        self.source
            .get(index as usize)
            .expect("every request of a run reads back")
    }
}

impl<'a> From<&'a [Measured]> for Reqs<'a> {
    fn from(slice: &'a [Measured]) -> Self {
        Self::all(Source::Slice(slice))
    }
}

impl<'a> From<&'a Vec<Measured>> for Reqs<'a> {
    fn from(slice: &'a Vec<Measured>) -> Self {
        Self::all(Source::Slice(slice))
    }
}

impl<'a, const N: usize> From<&'a [Measured; N]> for Reqs<'a> {
    fn from(slice: &'a [Measured; N]) -> Self {
        Self::all(Source::Slice(slice))
    }
}

impl<'a> From<&'a Packed> for Reqs<'a> {
    fn from(packed: &'a Packed) -> Self {
        Self::all(Source::Packed(packed))
    }
}

impl<'a> From<&'a Picked<'_>> for Reqs<'a> {
    fn from(picked: &'a Picked<'_>) -> Self {
        picked.reqs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests(n: u64) -> Vec<Measured> {
        (0..n)
            .map(|id| Measured {
                id,
                stage: (id % 3) as u32,
                ..Measured::default()
            })
            .collect()
    }

    #[test]
    fn a_packed_run_and_its_slice_read_the_same_requests() {
        let slice = requests(10);
        let packed: Packed = slice.iter().cloned().collect();
        for reqs in [Reqs::from(&slice), Reqs::from(&packed)] {
            assert_eq!(reqs.len(), 10);
            let ids: Vec<u64> = reqs.iter().map(|m| m.id).collect();
            assert_eq!(ids, (0..10).collect::<Vec<_>>());
            assert_eq!(reqs.iter().next_back().map(|m| m.id), Some(9));
            let later = reqs.tail(7);
            assert_eq!(later.iter().map(|m| m.id).collect::<Vec<_>>(), [7, 8, 9]);
            assert!(reqs.tail(11).is_empty());
        }
    }

    #[test]
    fn subsets_are_picked_in_order_and_nest() {
        let slice = requests(10);
        let reqs = Reqs::from(&slice);
        let by_stage = reqs.picking(|m, pick| pick(m.stage as usize));
        assert_eq!(by_stage.len(), 3);
        let ids = |r: Reqs<'_>| r.iter().map(|m| m.id).collect::<Vec<_>>();
        assert_eq!(ids(by_stage[1].reqs()), [1, 4, 7]);
        let odd = by_stage[1].reqs().filter(|m| m.id % 2 == 1);
        assert_eq!(ids(odd.reqs()), [1, 7]);
        assert_eq!(ids(odd.reqs().tail(1)), [7]);
        assert!(reqs.filter(|_| false).is_empty());
    }
}
