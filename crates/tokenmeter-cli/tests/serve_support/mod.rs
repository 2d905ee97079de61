//! Shared helpers of the integration tests that need a server: the server in process
//! ([`Hosted`] with a runtime of its own for synchronous tests, [`InProcess`] inside the test's
//! runtime) for every test that needs a server but does not test the `tokenmeter serve`
//! binary; the real `serve` process ([`Serve`]) for the tests of the binary itself (its output,
//! its signals, its memory as a process) and the real `bench` process; raw HTTP/1.1 on
//! loopback, the SLO spec they load, and the checks every scrape must pass.
#![allow(dead_code, unreachable_pub, missing_docs)]

pub mod exposition;
pub mod hosted;
pub mod http;
pub mod in_process;
pub mod process;
pub mod reads;
pub mod slo;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

#[allow(unused_imports)] // each test uses its own share
pub use exposition::{Exposition, check_scrape, never_decrease};
#[allow(unused_imports)]
pub use hosted::{Hosted, steady_config};
#[allow(unused_imports)]
pub use in_process::InProcess;
#[allow(unused_imports)]
pub use process::{BenchRun, Serve, bench, steady_engine};
#[allow(unused_imports)]
pub use reads::Target;

/// Checks a sequence of scrapes of one server: each on its own (histogram `_count` equal to its
/// `+Inf` bucket, buckets non-decreasing in `le`) and each against the one before (counters,
/// histogram counts and buckets never decrease).
#[derive(Debug, Default)]
pub struct ScrapeChecker {
    last: Option<BTreeMap<String, f64>>,
    /// Scrapes that completed and passed.
    pub passed: usize,
    /// What was wrong with the others (a failed request or a failed check).
    pub problems: Vec<String>,
    /// The most histogram series one scrape held.
    pub histogram_series: usize,
    /// The most requests running at once that a scrape saw (all series).
    pub max_running: f64,
    /// The last exposition that passed.
    pub latest: Option<Exposition>,
}

impl ScrapeChecker {
    /// Scrapes `addr` once and checks the result.
    pub fn scrape(&mut self, addr: SocketAddr) {
        match http::scrape(addr) {
            Ok(text) => self.check(&text),
            Err(e) => self.problems.push(e),
        }
    }

    /// Checks one complete scrape.
    pub fn check(&mut self, text: &str) {
        let (exposition, checked) = match check_scrape(text) {
            Ok(parsed) => parsed,
            Err(e) => {
                self.problems
                    .push(format!("scrape {}: {e}", self.passed + 1));
                return;
            }
        };
        let growing = exposition.growing();
        if let Some(last) = &self.last
            && let Err(e) = never_decrease(last, &growing)
        {
            self.problems.push(format!(
                "scrape {} against the one before: {e}",
                self.passed + 1
            ));
            return;
        }
        self.last = Some(growing);
        self.passed += 1;
        self.histogram_series = self.histogram_series.max(checked.histogram_series);
        self.max_running = self
            .max_running
            .max(exposition.sum("tokenmeter_requests_running", &[]));
        self.latest = Some(exposition);
    }

    /// Panics with the problems, if any.
    pub fn assert_clean(&self, who: &str) {
        assert!(
            self.problems.is_empty(),
            "{who}: {} of {} scrapes failed; the first ones:\n{}",
            self.problems.len(),
            self.problems.len() + self.passed,
            self.problems
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// Requests the server has ended, of every outcome (`tokenmeter_requests_total`, role server).
pub fn requests_ended(exposition: &Exposition) -> f64 {
    exposition.sum("tokenmeter_requests_total", &[("role", "server")])
}

/// Sets the flag when dropped, also while a failing assertion unwinds: helper threads that
/// loop until the flag is set end, so a scope waiting for them cannot hang.
#[derive(Debug)]
pub struct StopOnDrop<'a>(pub &'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
