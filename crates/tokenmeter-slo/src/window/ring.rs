//! A ring of sub-window slots: the last `n` slots of width `window / n`.

use std::time::Duration;

/// Values kept per sub-window; a query combines the live slots.
#[derive(Debug)]
pub(crate) struct Ring<T> {
    width_ns: u64,
    slots: Vec<(u64, T)>,
}

const EMPTY: u64 = u64::MAX;

impl<T> Ring<T> {
    /// `slots` sub-windows covering `window`.
    pub(crate) fn new(window: Duration, slots: usize, mut make: impl FnMut() -> T) -> Self {
        let slots = slots.max(1);
        let width_ns = (window.as_nanos() / slots as u128).max(1);
        Self {
            width_ns: u64::try_from(width_ns).unwrap_or(u64::MAX),
            slots: (0..slots).map(|_| (EMPTY, make())).collect(),
        }
    }

    fn epoch(&self, t: Duration) -> u64 {
        u64::try_from(t.as_nanos() / u128::from(self.width_ns)).unwrap_or(u64::MAX - 1)
    }

    /// The slot for time `t`, emptied with `reset` first when it held an older sub-window.
    pub(crate) fn at(&mut self, t: Duration, reset: impl FnOnce(&mut T)) -> &mut T {
        let epoch = self.epoch(t);
        let n = self.slots.len() as u64;
        let slot = &mut self.slots[(epoch % n) as usize];
        if slot.0 != epoch {
            reset(&mut slot.1);
            slot.0 = epoch;
        }
        &mut slot.1
    }

    /// The slots whose sub-window lies in the window ending at `now`.
    pub(crate) fn live(&self, now: Duration) -> impl Iterator<Item = &T> {
        let current = self.epoch(now);
        let n = self.slots.len() as u64;
        self.slots
            .iter()
            .filter(move |(epoch, _)| *epoch != EMPTY && *epoch <= current && current - epoch < n)
            .map(|(_, value)| value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_slots_expire_and_are_reused() {
        let mut ring: Ring<u64> = Ring::new(Duration::from_secs(10), 10, || 0);
        for s in 0..10 {
            *ring.at(Duration::from_secs(s), |v| *v = 0) += 1;
        }
        assert_eq!(ring.live(Duration::from_secs(9)).sum::<u64>(), 10);
        assert_eq!(ring.live(Duration::from_secs(14)).sum::<u64>(), 5);
        *ring.at(Duration::from_secs(15), |v| *v = 0) += 7; // reuses slot 5
        assert_eq!(ring.live(Duration::from_secs(15)).sum::<u64>(), 4 + 7);
        assert_eq!(ring.live(Duration::from_secs(100)).count(), 0);
    }
}
