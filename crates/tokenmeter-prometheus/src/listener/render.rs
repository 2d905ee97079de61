//! [`Renders`]: one render of the exposition at a time, shared by the scrapes that wait for it.
//!
//! At the series cap the exposition is tens of MB and takes seconds to render in a debug build;
//! without this, every connection at the cap could hold its own copy at once. A scrape is
//! answered with a render that started after it arrived, so it is never stale, and a render is
//! kept only while another scrape waits for one.

use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::handle::Handle;

/// Renders [`Handle::render`] off the runtime's thread, one at a time.
#[derive(Debug)]
pub(crate) struct Renders {
    handle: Handle,
    /// Scrapes waiting for a render or holding the lock.
    waiting: AtomicUsize,
    /// The last render (when it started, and its text) while other scrapes wait.
    last: Mutex<Option<(Instant, Bytes)>>,
}

/// One waiting scrape; counted out when dropped, also when the scrape is cancelled.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Renders {
    pub(crate) fn new(handle: Handle) -> Self {
        Self {
            handle,
            waiting: AtomicUsize::new(0),
            last: Mutex::new(None),
        }
    }

    /// The exposition, rendered after `arrived`: the last render if it started since then,
    /// else a new one (waiting for the render under way, if any, first).
    pub(crate) async fn render_since(&self, arrived: Instant) -> Bytes {
        self.waiting.fetch_add(1, Ordering::AcqRel);
        let waiting = Waiting(&self.waiting);
        let mut last = self.last.lock().await;
        let (started, text) = match last.take() {
            Some((started, text)) if started >= arrived => (started, text),
            _ => {
                let started = Instant::now();
                let handle = self.handle.clone();
                // On the blocking pool, so the accept loop and the deadlines keep running.
                let text = match tokio::task::spawn_blocking(move || handle.render()).await {
                    Ok(text) => Bytes::from(text),
                    Err(_) => Bytes::from_static(b"# the exposition could not be rendered\n"),
                };
                (started, text)
            }
        };
        drop(waiting);
        if self.waiting.load(Ordering::Acquire) > 0 {
            *last = Some((started, text.clone()));
        }
        text
    }
}
