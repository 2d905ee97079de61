//! [`Activity::deadline`] and [`Activity::expired`] follow what the connection does.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::{Activity, Expired, Timeouts};

const TIMEOUTS: Timeouts = Timeouts::new(
    Duration::from_secs(10),
    Duration::from_secs(5),
    Duration::from_secs(60),
);

#[tokio::test(start_paused = true)]
async fn deadlines_follow_what_the_connection_does() {
    let start = Instant::now();
    let activity = Arc::new(Activity::new(start));
    assert_eq!(
        activity.deadline(&TIMEOUTS),
        Some((start + TIMEOUTS.idle, Expired::IdleTimeout))
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    activity.heard();
    let heard = Instant::now();
    assert_eq!(
        activity.deadline(&TIMEOUTS),
        Some((heard + TIMEOUTS.header, Expired::HeaderTimeout)),
        "a request's first byte starts the header timeout"
    );
    // More bytes do not move it (a client trickling its headers).
    tokio::time::advance(Duration::from_secs(1)).await;
    activity.heard();
    assert_eq!(
        activity.deadline(&TIMEOUTS),
        Some((heard + TIMEOUTS.header, Expired::HeaderTimeout))
    );
    let (request, receiving) = activity.begin(true);
    assert_eq!(activity.deadline(&TIMEOUTS), None, "answering: no deadline");
    assert!(activity.only_receiving());
    drop(receiving);
    assert!(!activity.only_receiving());
    activity.wrote(false);
    let last = Instant::now();
    activity.wrote(true);
    assert_eq!(
        activity.deadline(&TIMEOUTS),
        Some((last + TIMEOUTS.send, Expired::SendTimeout)),
        "a write that waits counts from the last byte written"
    );
    activity.wrote(false);
    tokio::time::advance(Duration::from_secs(2)).await;
    drop(request);
    let ended = Instant::now();
    assert_eq!(
        activity.deadline(&TIMEOUTS),
        Some((ended + TIMEOUTS.idle, Expired::IdleTimeout))
    );
    // The end of a response still waits for the client to read it: the send timeout counts
    // from the last byte written; once written, the idle timeout from that byte.
    activity.wrote(false);
    let last = Instant::now();
    activity.wrote(true);
    assert_eq!(
        activity.deadline(&TIMEOUTS),
        Some((last + TIMEOUTS.send, Expired::SendTimeout))
    );
    tokio::time::advance(Duration::from_secs(9)).await;
    activity.wrote(false);
    let written = Instant::now();
    assert_eq!(
        activity.deadline(&TIMEOUTS),
        Some((written + TIMEOUTS.idle, Expired::IdleTimeout))
    );
}

#[tokio::test(start_paused = true)]
async fn a_client_that_reads_nothing_meets_the_send_timeout_even_mid_request() {
    let activity = Arc::new(Activity::new(Instant::now()));
    let (request, _) = activity.begin(false);
    assert_eq!(activity.deadline(&TIMEOUTS), None, "answering: no deadline");
    tokio::time::advance(Duration::from_secs(3)).await;
    activity.wrote(false);
    let last = Instant::now();
    tokio::time::advance(Duration::from_secs(1)).await;
    activity.wrote(true);
    assert_eq!(
        activity.deadline(&TIMEOUTS),
        Some((last + TIMEOUTS.send, Expired::SendTimeout)),
        "a blocked write counts from the last byte written, request in flight or not"
    );
    // Writes that keep going (a slow reader that reads) move the deadline.
    tokio::time::advance(Duration::from_secs(30)).await;
    activity.wrote(false);
    let later = Instant::now();
    activity.wrote(true);
    assert_eq!(
        activity.deadline(&TIMEOUTS),
        Some((later + TIMEOUTS.send, Expired::SendTimeout))
    );
    activity.wrote(false);
    assert_eq!(
        activity.deadline(&TIMEOUTS),
        None,
        "unblocked, answering again"
    );
    drop(request);
}

#[tokio::test(start_paused = true)]
async fn expired_waits_for_the_deadline_as_it_moves() {
    let start = Instant::now();
    let activity = Arc::new(Activity::new(start));
    let watched = activity.clone();
    let watchdog = tokio::spawn(async move {
        let why = watched.expired(&TIMEOUTS).await;
        (why, Instant::now())
    });
    // A request begun before the idle timeout: no deadline while it is answered.
    tokio::time::advance(Duration::from_secs(4)).await;
    let (request, _) = activity.begin(false);
    tokio::time::advance(Duration::from_secs(100)).await;
    assert!(!watchdog.is_finished(), "no deadline while answering");
    drop(request);
    let ended = Instant::now();
    let (why, at) = watchdog.await.expect("the watchdog");
    assert_eq!(why, Expired::IdleTimeout);
    assert_eq!(at, ended + TIMEOUTS.idle, "from the end of the response");
}
