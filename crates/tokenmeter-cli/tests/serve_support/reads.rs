//! [`Target`]: what a test reads from a running server over HTTP, whichever way it was started
//! (a [`super::Serve`] process or a [`super::Hosted`] server in process): the `/metrics` text,
//! one series, a sum of series, and a bounded wait for a value.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::exposition::Exposition;
use super::http;

/// A running server on loopback, read over real HTTP (a scrape is a request the server
/// answers and counts, as Prometheus's would be).
pub trait Target: Sized {
    /// Who the panics name.
    const WHO: &'static str;

    /// The address it listens on.
    fn addr(&self) -> SocketAddr;

    /// The text of `GET /metrics`; panics when the request fails.
    fn scrape(&self) -> String {
        let addr = self.addr();
        http::scrape(addr).unwrap_or_else(|e| panic!("scraping {} on {addr}: {e}", Self::WHO))
    }

    /// The value of `series` (the name and labels exactly as the server prints them,
    /// `name{a="x",b="y"}`) on `/metrics`; panics when there is no such series.
    fn sample(&self, series: &str) -> f64 {
        let text = self.scrape();
        tokenmeter_tests::sample(&text, series).unwrap_or_else(|| {
            panic!(
                "{series} missing from the /metrics of {} on {}:\n{text}",
                Self::WHO,
                self.addr()
            )
        })
    }

    /// The sum of the `name` samples on `/metrics` that carry every label of `labels` (0 when
    /// none does).
    fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let text = self.scrape();
        Exposition::parse(&text)
            .unwrap_or_else(|e| panic!("the /metrics of {} on {}: {e}", Self::WHO, self.addr()))
            .sum(name, labels)
    }

    /// Reads `read(self)` every 20 ms until it is `value`; panics after `within`, naming
    /// `what` and the last value read.
    fn wait_for(&self, what: &str, value: f64, within: Duration, read: impl Fn(&Self) -> f64) {
        let deadline = Instant::now() + within;
        loop {
            let now = read(self);
            if now == value {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{}'s {what} is {now}, not {value}, after {within:?}",
                Self::WHO
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
