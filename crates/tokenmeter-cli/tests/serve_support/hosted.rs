//! The server in the test's own process on a runtime of its own, for the synchronous tests
//! that need a server but do not test the `tokenmeter serve` binary (the bench against a
//! server; the server's answers, limits and metrics under hostile clients): the same reads as
//! [`super::Serve`] (`addr`, `url`, and [`Target`]'s `scrape`, `sample`, `metric` and
//! `wait_for`), over the same HTTP, without a process to start and wait for.

use std::net::SocketAddr;
use std::time::Duration;

use tokenmeter_server::{Config, Server};
use tokio::runtime::Runtime;

use super::reads::Target;

/// Who the panics name.
const WHO: &str = "the in-process server";

/// How long dropping a [`Hosted`] lets its runtime's tasks end once the server has stopped.
const RUNTIME_STOP: Duration = Duration::from_secs(5);

/// A server started in process on an ephemeral loopback port, driven by a multi-threaded
/// runtime of two workers that it owns (so it serves while the test thread blocks on a bench
/// process or a raw socket). Dropped, it shuts the server down gracefully (as Ctrl-C does to
/// `tokenmeter serve`: in-flight responses get [`Config::shutdown_grace`]) and panics, unless
/// the test is already failing, when the server does not stop cleanly in time; dropped inside
/// another runtime (an async test), where it may not block, it stops at once instead.
#[derive(Debug)]
pub struct Hosted {
    pub addr: SocketAddr,
    server: Option<Server>,
    runtime: Option<Runtime>,
}

impl Hosted {
    /// Starts a server with `config` on 127.0.0.1:0; panics, naming the error, when it cannot.
    pub fn start(config: Config) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("in-process-server")
            .enable_all()
            .build()
            .expect("a runtime for the in-process server");
        let server = {
            let _context = runtime.enter();
            let listener = tokenmeter_server::bind(([127, 0, 0, 1], 0).into(), config.send_buffer)
                .unwrap_or_else(|e| panic!("{WHO} cannot listen on 127.0.0.1:0: {e}"));
            Server::from_listener(config, listener)
                .unwrap_or_else(|e| panic!("{WHO} does not start: {e}"))
        };
        Self {
            addr: server.local_addr(),
            server: Some(server),
            runtime: Some(runtime),
        }
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Target for Hosted {
    const WHO: &'static str = WHO;

    fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Hosted {
    fn drop(&mut self) {
        let (Some(server), Some(runtime)) = (self.server.take(), self.runtime.take()) else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            // Inside another runtime nothing may block: the runtime stops in the background,
            // dropping the server's tasks (its listener and connections close).
            drop(server);
            runtime.shutdown_background();
            return;
        }
        let stopped = runtime.block_on(server.shutdown());
        runtime.shutdown_timeout(RUNTIME_STOP);
        if let Err(e) = stopped
            && !std::thread::panicking()
        {
            panic!("{WHO} on {} did not stop cleanly: {e}", self.addr);
        }
    }
}

/// A [`Config`] for an engine that keeps a steady pace however many requests run: every
/// decode step takes `step` whatever the batch, up to 512 requests share a batch, and prefill
/// costs next to nothing (the flags of [`super::steady_engine`]).
pub fn steady_config(step: Duration) -> Config {
    Config::default()
        .decode_table(vec![(1, step)])
        .max_batch(512)
        .prefill_base(Duration::from_millis(1))
        .prefill_per_token(Duration::from_micros(1))
}
