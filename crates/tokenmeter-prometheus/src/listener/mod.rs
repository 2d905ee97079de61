//! The `/metrics` listener of [`Builder::install`](crate::Builder::install): hyper's HTTP/1
//! connection under [`ListenerLimits`], on a thread and runtime of its own.
//!
//! Each connection has a watchdog that closes it at its deadline: the idle timeout after its
//! accept or its last response while no byte arrives, the header timeout after the first byte
//! of a request whose headers are not complete (hyper's own `header_read_timeout` starts when
//! the connection goes idle, so it would also cut keep-alive connections at the header
//! timeout), and the send timeout while a response waits for a client that reads nothing. At
//! the connection cap a new connection makes the least recently active idle one close (a
//! connection whose headers are still arriving counts as idle; the new one is never chosen
//! for itself), so idle and slow clients never lock out a scraper; when every connection is
//! answering a scrape, the new one gets a quick 503. Every refusal, eviction and timeout is
//! counted ([`ListenerStats`](crate::ListenerStats)).
//!
//! The deadlines, the socket that tells them what the client does and the cap are
//! `tokenmeter-listen`'s (shared with `tokenmeter serve`), under its `Evictable::NotAnswering`
//! rule; the renders, the 503 and the counters are this listener's.

mod connection;
pub(crate) mod limits;
mod render;
pub(crate) mod stats;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::error::Error;
use crate::handle::Handle;
use limits::ListenerLimits;
use render::Renders;
use stats::{Closed, Counters};
use tokenmeter_listen::{Admission, Connections, Evictable, is_connection_error};

/// Refused connections answered 503 at once (each for at most a second); more are closed
/// without one (and counted all the same).
const REFUSING: usize = 64;

/// A bound listening socket, not yet served.
#[derive(Debug)]
pub(crate) struct Bound {
    listener: TcpListener,
    runtime: tokio::runtime::Runtime,
}

/// Binds `addr` now, so a busy address is reported before anything is installed.
pub(crate) fn bind(addr: SocketAddr) -> Result<Bound, Error> {
    let listen_error = |e: io::Error| Error::Listen {
        addr,
        reason: e.to_string(),
    };
    let std_listener = std::net::TcpListener::bind(addr).map_err(listen_error)?;
    std_listener.set_nonblocking(true).map_err(listen_error)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Runtime(e.to_string()))?;
    let listener = {
        let _entered = runtime.enter();
        TcpListener::from_std(std_listener).map_err(listen_error)?
    };
    Ok(Bound { listener, runtime })
}

impl Bound {
    /// Serves `handle`'s exposition under `limits` on a background thread with a runtime of
    /// its own, for the life of the process.
    pub(crate) fn serve(
        self,
        handle: Handle,
        limits: ListenerLimits,
    ) -> Result<Arc<Counters>, Error> {
        let counters = Arc::new(Counters::default());
        let renders = Arc::new(Renders::new(handle));
        let serving = accept_loop(self.listener, renders, counters.clone(), limits);
        let runtime = self.runtime;
        std::thread::Builder::new()
            .name("tokenmeter-prometheus-listener".into())
            .spawn(move || runtime.block_on(serving))
            .map_err(|e| Error::Runtime(e.to_string()))?;
        Ok(counters)
    }
}

/// Accepts connections for ever, each served or refused, and counted.
async fn accept_loop(
    listener: TcpListener,
    renders: Arc<Renders>,
    counters: Arc<Counters>,
    limits: ListenerLimits,
) {
    let connections = Connections::new(limits.max_connections, Evictable::NotAnswering);
    let refusing = Arc::new(Semaphore::new(REFUSING));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // A connection reset before it was accepted.
            Err(error) if is_connection_error(&error) => continue,
            // Out of files, most likely: try again shortly rather than spin (idle connections
            // close at their deadline, and the cap keeps this listener's share bounded).
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        counters.accepted();
        match connections.admit() {
            Admission::Admitted { slot, evicted } => {
                if evicted {
                    counters.closed(Closed::Evicted);
                }
                counters.opened();
                let (renders, counters) = (renders.clone(), counters.clone());
                tokio::spawn(async move {
                    connection::serve(stream, slot, renders, counters.clone(), limits).await;
                    counters.ended();
                });
            }
            Admission::Full => {
                counters.closed(Closed::Refused);
                // At most REFUSING answered at once; past that, closed at once.
                if let Ok(permit) = refusing.clone().try_acquire_owned() {
                    tokio::spawn(async move {
                        connection::refuse(stream).await;
                        drop(permit);
                    });
                }
            }
        }
    }
}
