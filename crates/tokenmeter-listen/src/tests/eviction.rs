//! [`Connections::admit`] at the cap, under each [`Evictable`] rule.

use std::sync::Arc;
use std::time::Duration;

use crate::{Admission, Connections, Evictable, Slot};

fn admitted(admission: Admission) -> (Slot, bool) {
    match admission {
        Admission::Admitted { slot, evicted } => (slot, evicted),
        Admission::Full => panic!("refused"),
    }
}

/// Whether `slot` was told to close.
async fn told_to_close(slot: &Slot) -> bool {
    let told = slot.activity().evicted();
    tokio::time::timeout(Duration::ZERO, told).await.is_ok()
}

/// Admits a connection and answers one request on it: it then waits on keep-alive.
fn answered_once(connections: &Arc<Connections>) -> Slot {
    let (slot, _) = admitted(connections.admit());
    drop(slot.activity().begin(false));
    slot
}

#[tokio::test(start_paused = true)]
async fn the_least_recently_active_idle_connection_makes_room() {
    let connections = Connections::new(2, Evictable::NotAnswering);
    let (first, evicted) = admitted(connections.admit());
    assert!(!evicted);
    tokio::time::advance(Duration::from_millis(10)).await;
    let (second, _) = admitted(connections.admit());
    tokio::time::advance(Duration::from_millis(10)).await;
    // Full: the first (idle longest) makes room, not the second.
    let (third, evicted) = admitted(connections.admit());
    assert!(evicted);
    assert!(told_to_close(&first).await && !told_to_close(&second).await);
    assert_eq!(connections.len(), 2);
    // Busy connections are never evicted; with none idle, the next one is refused.
    let _busy = second.activity().begin(false);
    let _also_busy = third.activity().begin(false);
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

#[tokio::test(start_paused = true)]
async fn a_just_accepted_connection_is_evicted_last() {
    let connections = Connections::new(3, Evictable::NotAnswering);
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

#[tokio::test(start_paused = true)]
async fn the_longest_idle_connection_makes_room() {
    let connections = Connections::new(2, Evictable::KeptAlive);
    let first = answered_once(&connections);
    tokio::time::advance(Duration::from_millis(10)).await;
    let second = answered_once(&connections);
    let _busy = second.activity().begin(false);
    // Full: the first (idle on keep-alive) makes room; the second is busy.
    let (third, true) = admitted(connections.admit()) else {
        panic!("the idle one is evicted");
    };
    assert!(told_to_close(&first).await);
    assert_eq!(connections.len(), 2);
    let _also_busy = third.activity().begin(true);
    // Every connection is busy: refused.
    assert!(matches!(connections.admit(), Admission::Full));
    drop(first);
    assert_eq!(connections.len(), 2);
    drop(third);
    assert_eq!(connections.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_connection_before_its_first_answer_is_not_evicted() {
    let connections = Connections::new(2, Evictable::KeptAlive);
    // Just accepted, nothing sent yet.
    let (fresh, false) = admitted(connections.admit()) else {
        panic!("room for the first");
    };
    // Answered once, then the first bytes of its next request arrive.
    let sending = answered_once(&connections);
    sending.activity().heard();
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(fresh.activity().idle_since(Evictable::KeptAlive), None);
    assert_eq!(sending.activity().idle_since(Evictable::KeptAlive), None);
    assert!(
        matches!(connections.admit(), Admission::Full),
        "neither is idle: the next arrival is refused, not given their place"
    );
    assert_eq!(connections.len(), 2);
    // Once its request is answered, the second waits on keep-alive: idle.
    drop(sending.activity().begin(false));
    assert!(
        sending
            .activity()
            .idle_since(Evictable::KeptAlive)
            .is_some()
    );
    let (_third, true) = admitted(connections.admit()) else {
        panic!("the idle one is evicted");
    };
    assert!(told_to_close(&sending).await && !told_to_close(&fresh).await);
}

#[tokio::test(start_paused = true)]
async fn a_connection_whose_answer_waits_for_its_client_is_not_idle() {
    for rule in [Evictable::KeptAlive, Evictable::NotAnswering] {
        let connections = Connections::new(1, rule);
        let only = answered_once(&connections);
        only.activity().wrote(true);
        assert_eq!(only.activity().idle_since(rule), None, "{rule:?}");
        assert!(matches!(connections.admit(), Admission::Full), "{rule:?}");
        only.activity().wrote(false);
        assert!(only.activity().idle_since(rule).is_some(), "{rule:?}");
    }
}
