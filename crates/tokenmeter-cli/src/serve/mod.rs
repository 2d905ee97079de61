//! `tokenmeter serve`: an OpenAI-compatible server over the simulated engine.
//!
//! Embedded use (the bench, tests): bind a listener, [`spawn`] on it, then read
//! [`ServeHandle::addr`] / [`ServeHandle::url`], the server-side [`ServeHandle::records`] (or
//! one request's record with [`ServeHandle::record_for`], keyed by the response `id`),
//! [`ServeHandle::metrics_text`], and stop with [`ServeHandle::shutdown`].
//!
//! STATUS: the API below is stable; the implementation is being written (sim helper).

use std::net::SocketAddr;

use tokenmeter::RequestRecord;

/// Options of `tokenmeter serve`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ServeArgs {}

impl Default for ServeArgs {
    fn default() -> Self {
        Self {}
    }
}

/// A running server started by [`spawn`].
#[derive(Debug)]
pub(crate) struct ServeHandle {
    addr: SocketAddr,
}

impl ServeHandle {
    /// The bound address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`, the base URL clients use (`/v1/chat/completions` goes after it).
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every server-side record so far, in the order the requests ended.
    pub(crate) fn records(&self) -> Vec<RequestRecord> {
        Vec::new()
    }

    /// The server-side record of the request whose response carried `id` (the `id` field of
    /// the JSON body or of every SSE chunk; also the `x-request-id` response header), once it
    /// has ended.
    pub(crate) fn record_for(&self, _id: &str) -> Option<RequestRecord> {
        None
    }

    /// The `/metrics` text, as a scrape would see it now.
    pub(crate) fn metrics_text(&self) -> String {
        String::new()
    }

    /// Stops accepting, lets in-flight responses end, and waits for the server to stop.
    pub(crate) async fn shutdown(self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Starts the server on `listener`, keeping every server-side record in memory.
pub(crate) async fn spawn(
    _args: ServeArgs,
    _listener: tokio::net::TcpListener,
) -> anyhow::Result<ServeHandle> {
    anyhow::bail!("`tokenmeter serve` is not written yet")
}

/// Runs the server until interrupted.
pub(crate) async fn run(_args: ServeArgs) -> anyhow::Result<()> {
    anyhow::bail!("`tokenmeter serve` is not written yet")
}
