//! The paced server ([`server`](super::server)) on a thread of its own, with a single-threaded
//! runtime: its CPU time is that thread's, apart from the client's. `tokenmeter bench
//! --self-check-serve ADDR` runs it alone, for clients in other processes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::Context as _;

use super::server::{self, Pace, Shared};

/// Connections the listener queues before they are accepted: a ramp opens hundreds at once,
/// and a full queue costs a dropped SYN and a second's retry.
const BACKLOG: u32 = 4096;

/// The paced server, running until [`stop`](Self::stop).
pub(crate) struct Paced {
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    /// What it wrote, when.
    pub(crate) shared: Arc<Shared>,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: JoinHandle<anyhow::Result<()>>,
}

impl Paced {
    /// Listens on `addr` (port 0: any free port) and serves on a new thread; times are kept
    /// since `origin`.
    pub(crate) fn start(addr: SocketAddr, origin: Instant, pace: Pace) -> anyhow::Result<Self> {
        let shared = Arc::new(Shared::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound, bound_rx) = std::sync::mpsc::channel();
        let server_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("self-check-server".into())
            .spawn(move || -> anyhow::Result<()> {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                rt.block_on(async move {
                    let listener = match listen(addr) {
                        Ok(listener) => listener,
                        Err(error) => {
                            let _ = bound.send(Err(error));
                            return Ok(());
                        }
                    };
                    let _ = bound.send(listener.local_addr().map_err(anyhow::Error::from));
                    tokio::select! {
                        () = server::serve(listener, origin, pace, server_shared) => {}
                        _ = stopped => {}
                    }
                    anyhow::Ok(())
                })
            })?;
        let addr = bound_rx
            .recv()
            .context("the self-check server thread ended before it listened")??;
        Ok(Self {
            addr,
            shared,
            stop,
            thread,
        })
    }

    /// Stops the server and waits for its thread.
    pub(crate) fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        self.thread
            .join()
            .map_err(|_| anyhow::anyhow!("the self-check server thread panicked"))?
    }
}

fn listen(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    }?;
    socket.set_reuseaddr(true)?;
    socket
        .bind(addr)
        .with_context(|| format!("binding {addr} for the self-check server"))?;
    Ok(socket.listen(BACKLOG)?)
}

/// `tokenmeter bench --self-check-serve ADDR`: serves until Ctrl-C or SIGTERM, after printing
/// where on stdout.
pub(crate) async fn run(addr: SocketAddr) -> anyhow::Result<()> {
    let paced = Paced::start(addr, Instant::now(), Pace::default())?;
    crate::console::out(&format!(
        "self-check server on http://{}: POST /v1/chat/completions streams at known times \
         ({}); GET /tokenmeter/truth\n",
        paced.addr,
        Pace::default()
    ));
    crate::interrupt::signal().await;
    paced.stop()
}
