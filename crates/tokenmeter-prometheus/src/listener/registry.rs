//! [`Connections`]: the open connections, and which one to close to make room for a new one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::time::Instant;

use super::activity::Activity;

/// The open connections, at most `limit` of them.
#[derive(Debug)]
pub(crate) struct Connections {
    limit: usize,
    open: Mutex<Registry>,
}

#[derive(Debug, Default)]
struct Registry {
    next: u64,
    by_id: HashMap<u64, Arc<Activity>>,
}

/// What [`Connections::admit`] decided for a new connection.
#[derive(Debug)]
pub(crate) enum Admission {
    /// Serve it; its place is freed when the [`Slot`] is dropped. `evicted` when the least
    /// recently active idle connection was told to close to make room.
    Admitted {
        /// The new connection's place.
        slot: Slot,
        /// Whether another connection was evicted for it.
        evicted: bool,
    },
    /// At the limit, and every connection is answering: refuse it.
    Full,
}

impl Connections {
    /// Room for `limit` connections (at least 1).
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit: limit.max(1),
            open: Mutex::new(Registry::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a place for a new connection. At the limit, the idle connection (no response
    /// being made or written) that was active least recently is told to close and the new one
    /// takes its place; when none is idle, the new one is refused. The new connection is
    /// registered after the choice, so it is never the one evicted for itself, and it is then
    /// the most recently active.
    pub(crate) fn admit(self: &Arc<Self>) -> Admission {
        let mut registry = self.lock();
        let mut evicted = false;
        if registry.by_id.len() >= self.limit {
            let oldest = registry
                .by_id
                .iter()
                .filter_map(|(id, a)| a.idle_since().map(|t| (t, *id)))
                .min();
            let Some((_, id)) = oldest else {
                return Admission::Full;
            };
            if let Some(activity) = registry.by_id.remove(&id) {
                activity.close.notify_one();
                evicted = true;
            }
        }
        let id = registry.next;
        registry.next += 1;
        let activity = Arc::new(Activity::new(Instant::now()));
        registry.by_id.insert(id, activity.clone());
        let slot = Slot {
            id,
            activity,
            connections: self.clone(),
        };
        Admission::Admitted { slot, evicted }
    }

    /// Connections holding a place now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().by_id.len()
    }
}

/// A connection's place among the open ones; dropping it frees the place.
#[derive(Debug)]
pub(crate) struct Slot {
    id: u64,
    /// What the connection is doing.
    pub(crate) activity: Arc<Activity>,
    connections: Arc<Connections>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.connections.lock().by_id.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn admitted(admission: Admission) -> (Slot, bool) {
        match admission {
            Admission::Admitted { slot, evicted } => (slot, evicted),
            Admission::Full => panic!("refused"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_least_recently_active_idle_connection_makes_room() {
        let connections = Connections::new(2);
        let (first, evicted) = admitted(connections.admit());
        assert!(!evicted);
        tokio::time::advance(Duration::from_millis(10)).await;
        let (second, _) = admitted(connections.admit());
        tokio::time::advance(Duration::from_millis(10)).await;
        // Full: the first (idle longest) makes room, not the second.
        let (third, evicted) = admitted(connections.admit());
        assert!(evicted);
        assert_eq!(connections.len(), 2);
        // Busy connections are never evicted; with none idle, the next one is refused.
        let _busy = second.activity.begin();
        let _also_busy = third.activity.begin();
        assert!(matches!(connections.admit(), Admission::Full));
        drop(first);
        assert_eq!(
            connections.len(),
            2,
            "the evicted one no longer holds a place"
        );
        drop(third);
        assert_eq!(connections.len(), 1);
        let (fourth, evicted) = admitted(connections.admit());
        assert!(!evicted, "room again");
        drop(fourth);
    }

    /// Whether `slot` was told to close.
    async fn told_to_close(slot: &Slot) -> bool {
        let told = slot.activity.close.notified();
        tokio::time::timeout(Duration::ZERO, told).await.is_ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_just_accepted_connection_is_evicted_last() {
        let connections = Connections::new(3);
        let mut slots = Vec::new();
        for _ in 0..3 {
            tokio::time::advance(Duration::from_millis(5)).await;
            slots.push(admitted(connections.admit()).0);
        }
        // Two more, at once: each evicts the oldest of the others, never the one just admitted.
        let (fourth, evicted) = admitted(connections.admit());
        assert!(evicted);
        let (fifth, evicted) = admitted(connections.admit());
        assert!(evicted);
        assert!(told_to_close(&slots[0]).await && told_to_close(&slots[1]).await);
        assert!(!told_to_close(&slots[2]).await);
        assert!(!told_to_close(&fourth).await, "just accepted: not evicted");
        assert!(!told_to_close(&fifth).await);
    }
}
