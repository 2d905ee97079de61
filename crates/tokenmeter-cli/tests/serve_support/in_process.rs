//! The server in the test's own process (`tokenmeter-server`), for tests that need a server
//! but do not test the `tokenmeter serve` binary: the same reads as [`super::Serve`] (`url`,
//! `metric`, `sample`, `wait_for`) without a process to start.

use std::time::{Duration, Instant};

use tokenmeter_server::{Config, Server};

use super::Exposition;

/// A server started in process on an ephemeral loopback port; stopped when dropped.
#[derive(Debug)]
pub struct InProcess {
    server: Server,
}

impl InProcess {
    /// Starts a server with `config` on 127.0.0.1:0. Call it inside a Tokio runtime.
    pub fn start(config: Config) -> Self {
        let listener = tokenmeter_server::bind(([127, 0, 0, 1], 0).into(), config.send_buffer)
            .expect("bind an ephemeral loopback port");
        let server = Server::from_listener(config, listener).expect("the server starts");
        Self { server }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The sample of one series (`name{labels}`) on `/metrics`; panics when it is missing.
    pub fn sample(&self, series: &str) -> f64 {
        let text = self.server.metrics_text();
        tokenmeter_tests::sample(&text, series)
            .unwrap_or_else(|| panic!("{series} missing from the server's /metrics:\n{text}"))
    }

    /// The sum of the `name` samples on `/metrics` that carry every label of `labels` (0 when
    /// none does).
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        Exposition::parse(&self.server.metrics_text())
            .unwrap_or_else(|e| panic!("the server's /metrics: {e}"))
            .sum(name, labels)
    }

    /// Reads `read(self)` every 20 ms until it is `value`; panics after `within`, naming `what`
    /// and the last value read. Blocks the calling thread: call it in `block_in_place` on a
    /// multi-threaded runtime, whose other worker drives the server.
    pub fn wait_for(&self, what: &str, value: f64, within: Duration, read: impl Fn(&Self) -> f64) {
        let deadline = Instant::now() + within;
        loop {
            let now = read(self);
            if now == value {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the server's {what} is {now}, not {value}, after {within:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
