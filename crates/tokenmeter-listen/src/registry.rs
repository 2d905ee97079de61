//! [`Connections`]: the open connections, at most a cap of them, and which one to close to
//! make room for a new one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::time::Instant;

use crate::activity::Activity;
use crate::evictable::Evictable;

/// The open connections, at most `limit` of them.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use tokenmeter_listen::{Admission, Connections, Evictable};
///
/// let connections = Connections::new(1, Evictable::NotAnswering);
/// let Admission::Admitted { slot: first, evicted: false } = connections.admit() else {
///     unreachable!("room for one")
/// };
/// // At the cap: the first, idle, is told to close (its watchdog's `evicted()` returns).
/// let Admission::Admitted { slot: _second, evicted: true } = connections.admit() else {
///     unreachable!("the idle one makes room")
/// };
/// first.activity().evicted().await;
/// # }
/// ```
#[derive(Debug)]
pub struct Connections {
    limit: usize,
    rule: Evictable,
    open: Mutex<Registry>,
}

#[derive(Debug, Default)]
struct Registry {
    next: u64,
    by_id: HashMap<u64, Arc<Activity>>,
}

/// What [`Connections::admit`] decided for a new connection.
#[derive(Debug)]
pub enum Admission {
    /// Serve it; its place is freed when the [`Slot`] is dropped.
    Admitted {
        /// The new connection's place.
        slot: Slot,
        /// Whether the least recently active idle connection was told to close to make room.
        evicted: bool,
    },
    /// At the limit, and no connection is idle: refuse it.
    Full,
}

impl Connections {
    /// Room for `limit` connections (at least 1), making room under `rule`.
    pub fn new(limit: usize, rule: Evictable) -> Arc<Self> {
        Arc::new(Self {
            limit: limit.max(1),
            rule,
            open: Mutex::new(Registry::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Connections holding a place now.
    pub fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    /// Whether no connection holds a place.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes a place for a new connection. At the limit, the idle connection (under the
    /// [`Evictable`] rule) that was active least recently is told to close and the new one
    /// takes its place; when none is idle, the new one is refused. The new connection is
    /// registered after the choice, so it is never the one evicted for itself.
    pub fn admit(self: &Arc<Self>) -> Admission {
        let mut registry = self.lock();
        let mut evicted = false;
        if registry.by_id.len() >= self.limit {
            let oldest = registry
                .by_id
                .iter()
                .filter_map(|(id, a)| a.idle_since(self.rule).map(|t| (t, *id)))
                .min();
            let Some((_, id)) = oldest else {
                return Admission::Full;
            };
            if let Some(activity) = registry.by_id.remove(&id) {
                activity.evict();
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
}

/// A connection's place among the open ones; dropping it frees the place.
#[derive(Debug)]
pub struct Slot {
    id: u64,
    activity: Arc<Activity>,
    connections: Arc<Connections>,
}

impl Slot {
    /// What the connection is doing.
    pub fn activity(&self) -> &Arc<Activity> {
        &self.activity
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.connections.lock().by_id.remove(&self.id);
    }
}
