//! With no `--url`: the embedded simulator (`tokenmeter serve`) on an ephemeral loopback port,
//! benchmarked over real HTTP.

use anyhow::Context as _;

use tokenmeter_server::{Config, Server};

/// Starts the embedded server on 127.0.0.1 with an ephemeral port.
pub(crate) async fn start() -> anyhow::Result<Server> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .context("cannot bind 127.0.0.1:0 for the embedded simulator")?;
    Server::from_listener(Config::default().keep_records(true), listener)
        .context("cannot start the embedded simulator; pass --url to benchmark a running server")
}
