//! A real Prometheus server on loopback, started for one test and killed when dropped.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{TempDir, http, require_binary};

/// One scrape job: name, target and path.
#[derive(Debug)]
pub struct Job<'a> {
    pub name: &'a str,
    pub target: SocketAddr,
    pub path: &'a str,
}

/// A running `prometheus` process; killed (and its data removed) on drop, also when the test
/// fails.
#[derive(Debug)]
pub struct Prometheus {
    child: Child,
    addr: SocketAddr,
    dir: TempDir,
}

impl Prometheus {
    /// Starts Prometheus scraping `jobs` every second, and waits until it is ready.
    pub fn start(jobs: &[Job<'_>]) -> Self {
        Self::start_with_rules(jobs, &[])
    }

    /// The same, also evaluating the rule files `rules` every second.
    pub fn start_with_rules(jobs: &[Job<'_>], rules: &[&std::path::Path]) -> Self {
        Self::start_every(jobs, rules, 1)
    }

    /// The same, scraping (and evaluating) every `seconds` seconds, with a scrape timeout of
    /// as long: for targets that may answer slowly on a loaded machine.
    pub fn start_every(jobs: &[Job<'_>], rules: &[&std::path::Path], seconds: u64) -> Self {
        let binary = require_binary("prometheus");
        let dir = TempDir::new("prometheus");
        let mut config = format!(
            "global:\n  scrape_interval: {seconds}s\n  scrape_timeout: {seconds}s\n  evaluation_interval: {seconds}s\n",
        );
        if !rules.is_empty() {
            config.push_str("rule_files:\n");
            for rule in rules {
                config.push_str(&format!("  - '{}'\n", rule.display()));
            }
        }
        config.push_str("scrape_configs:\n");
        for job in jobs {
            config.push_str(&format!(
                "  - job_name: {}\n    metrics_path: {}\n    static_configs:\n      - targets: ['{}']\n",
                job.name, job.path, job.target
            ));
        }
        let config_path = dir.0.join("prometheus.yml");
        std::fs::write(&config_path, config).expect("write prometheus.yml");
        let log = std::fs::File::create(dir.0.join("prometheus.log")).expect("create log");
        // Port 0: Prometheus listens on a port the kernel picks and logs it (at level info),
        // so no other process can take the port between its choice and the bind, nor answer
        // in its place.
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.0.join("data").display()
            ))
            .arg("--web.listen-address=127.0.0.1:0")
            .arg("--log.level=info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        let mut server = Self {
            child,
            addr: ([127, 0, 0, 1], 0).into(),
            dir,
        };
        let limit = Duration::from_secs(20);
        server.addr = server.listening(limit);
        server.wait_ready(limit);
        server
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.0.join("prometheus.log")).unwrap_or_default()
    }

    /// The address of the `msg="Listening on" address=ADDR` line of the log.
    fn listening(&mut self, limit: Duration) -> SocketAddr {
        let log = self.dir.0.join("prometheus.log");
        crate::logged::listening_address(&mut self.child, &log, limit, |line| {
            let (_, rest) = line.split_once(r#"msg="Listening on""#)?;
            let (_, rest) = rest.split_once("address=")?;
            Some(rest.split_whitespace().next()?.trim_matches('"'))
        })
    }

    fn wait_ready(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "prometheus exited ({status}) before it was ready:\n{}",
                    self.log()
                );
            }
            if http::get(self.addr, "/-/ready").is_ok_and(|r| r.status == 200) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "prometheus on {} was not ready within {limit:?}:\n{}",
                self.addr,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs an instant query; returns each result's labels (as JSON) and value.
    pub fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        let path = format!("/api/v1/query?query={}", http::encode(promql));
        let response = http::get(self.addr, &path).expect("query prometheus");
        let json: serde_json::Value = serde_json::from_str(&response.body)
            .unwrap_or_else(|e| panic!("bad JSON from prometheus ({e}): {}", response.body));
        assert_eq!(json["status"], "success", "query {promql}: {json}");
        let data = &json["data"];
        match data["resultType"].as_str() {
            Some("vector") => data["result"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| (r["metric"].clone(), parse_value(&r["value"])))
                .collect(),
            Some("scalar") => vec![(serde_json::Value::Null, parse_value(&data["result"]))],
            other => panic!("unexpected result type {other:?} for {promql}: {json}"),
        }
    }

    /// The single value `promql` returns, or `None` for an empty result.
    pub fn value(&self, promql: &str) -> Option<f64> {
        let results = self.query(promql);
        assert!(results.len() <= 1, "{promql} returned {results:?}");
        results.first().map(|r| r.1)
    }

    /// Polls until `promql` returns a value that `accept`s, and returns it; panics after `limit`
    /// with the last value.
    pub fn wait_until(&self, promql: &str, limit: Duration, accept: impl Fn(f64) -> bool) -> f64 {
        let deadline = Instant::now() + limit;
        loop {
            let value = self.value(promql);
            if let Some(v) = value.filter(|v| accept(*v)) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "`{promql}` was {value:?} after {limit:?}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Polls until `promql` returns `expected`, or panics after `limit` with the last value.
    pub fn wait_for_value(&self, promql: &str, expected: f64, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let value = self.value(promql);
            if value == Some(expected) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "`{promql}` was {value:?}, not {expected}, after {limit:?}; targets: {}\nlog:\n{}",
                http::get(self.addr, "/api/v1/targets")
                    .map(|r| r.body)
                    .unwrap_or_default(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn parse_value(pair: &serde_json::Value) -> f64 {
    pair[1]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN)
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
